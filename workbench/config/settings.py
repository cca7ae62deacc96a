"""Every setting a profile takes, declared once, and the :class:`Profile` resolved from them:
where the partner is, which credentials each interface uses, how patient to be.

A setting's variable is ``WORKBENCH_`` + its section + its key (``[profiles.prod.supplier]
client_id`` is ``WORKBENCH_SUPPLIER_CLIENT_ID``); the file names the variable holding a secret
(``client_secret_env = "PROD_SUPPLIER_SECRET"``). docs/configuration.md says what each means.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import available_timezones

from workbench.errors import ConfigError
from workbench.spec import DOMESTIC_SCOPE, EXCHANGE_SCOPE, INTL_SCOPE

ROLES = ("international", "domestic", "supplier", "consumer")
GATEWAY_ROLES = frozenset({"international", "domestic"})
EXCHANGE_ROLES = ("supplier", "consumer")
SECTION_OF = {"international": "intl", "domestic": "domestic", "supplier": "supplier",
              "consumer": "consumer"}  # fmt: skip
SHARED_EXCHANGE = "exchange"  # [profiles.NAME.exchange]: one account for both exchange roles
ROLE_SECTIONS = (*SECTION_OF.values(), SHARED_EXCHANGE)
DEFAULT_SCOPES = {"international": INTL_SCOPE, "domestic": DOMESTIC_SCOPE,
                  "supplier": EXCHANGE_SCOPE, "consumer": EXCHANGE_SCOPE}  # fmt: skip
SMTP_TLS = ("starttls", "ssl", "none")
EVENT_FIELD_NAMES = ("id", "type", "time")


@dataclass(frozen=True)
class Setting:
    """One setting: its key, kind (a type, or "url", "list", "table", "path") and default; its
    meaning is in docs/configuration.md, which a test keeps complete."""

    key: str
    kind: type | str
    default: Any = None
    section: str | None = None
    secret: bool = False
    limits: tuple[float, float] | None = None  # for numbers: the least and the most
    choices: tuple[str, ...] = ()

    @property
    def variable(self) -> str:
        middle = f"{self.section.upper()}_" if self.section else ""
        return f"WORKBENCH_{middle}{self.key.upper()}"

    @property
    def file_key(self) -> str:
        """The key in the file: a secret names the variable that holds it."""
        return f"{self.key}_env" if self.secret else self.key


SANDBOX, ENV_ONLY = "sandbox", "env"
DEFAULT_DB = "data/workbench.db"
EMBEDDED_SANDBOX = "embedded-sandbox"  # a store's record of the sandbox's URLs, whatever its port
_WORDS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}  # fmt: skip
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _tuning(default: Any, low: float, high: float) -> Any:
    """A number setting of :class:`Profile`: its default, the least and the most it may be."""
    return field(default=default, metadata={"limits": (low, high)})


@dataclass(frozen=True, slots=True)
class Secret:
    """A string that does not show itself: ``repr`` and ``str`` are masked; ``reveal()`` is not."""

    _value: str

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__


@dataclass(frozen=True)
class RoleSettings:
    """How one role is reached and logs in; ``sources``: where each setting came from."""

    role: str
    grant: str  # "password", "client_credentials" or "static"
    login: str = "identity"  # or "etms": OCAS' form field names, no client id
    base_url: str | None = None
    auth_url: str | None = None
    token_url: str | None = None
    client_id: str | None = None
    client_secret: Secret | None = None
    username: str | None = None
    password: Secret | None = None
    scope: str | None = None
    token: Secret | None = None
    subscription_key: Secret | None = None
    missing: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)

    def require(self) -> RoleSettings:
        """Self, or a ``ConfigError`` naming every setting still needed for this role."""
        if self.missing:
            missing = ", ".join(self.missing)
            raise ConfigError(f"The {self.role} interface is not fully configured: set {missing}.")
        return self

    def secrets(self) -> list[str]:
        values = (self.client_secret, self.password, self.token, self.subscription_key)
        return [s.reveal() for s in values if s is not None]

    def where(self, *keys: str) -> str:
        """Where ``keys`` are set, for advice: "WORKBENCH_SUPPLIER_CLIENT_ID and ..."."""
        return " and ".join(self.sources.get(k, k) for k in keys)


@dataclass(frozen=True)
class SmtpSettings:
    """The mail server a report is sent through."""

    host: str | None = None
    port: int = 587
    tls: str = "starttls"  # one of SMTP_TLS
    username: str | None = None
    password: Secret | None = None
    sender: str | None = None  # "from" in the file, WORKBENCH_SMTP_FROM
    timeout: float = 30.0
    where: str = "WORKBENCH_SMTP_HOST"  # how to set the host, for messages
    tls_where: str = "tls"  # how to set tls, for messages

    def __post_init__(self) -> None:
        """A login never crosses the network in clear, however the settings were made."""
        if self.password and self.tls == "none" and not is_loopback(self.host or "localhost"):
            raise ConfigError(
                f"{self.tls_where} is none, so the mail password would cross the network to "
                f"{self.host} in clear: set tls to starttls or ssl (or send without a login, or "
                "through a relay on this machine, such as localhost)."
            )


@dataclass(frozen=True)
class Profile:
    """Everything a session needs; its ``repr`` shows no secret. Tuning: see ``settings``."""

    name: str
    origin: str
    connect_timeout: float = _tuning(5.0, 0.001, 600.0)  # the tuning: its defaults and limits
    read_timeout: float = _tuning(30.0, 0.001, 3600.0)
    concurrency: int = _tuning(8, 1, 64)
    max_attempts: int = _tuning(5, 1, 100)
    backoff_initial: float = _tuning(0.5, 0.0, 3600.0)
    backoff_max: float = _tuning(10.0, 0.0, 3600.0)
    retry_after_max: float = _tuning(30.0, 0.0, 3600.0)
    token_margin: float = _tuning(60.0, 0.0, 86400.0)
    read_only: bool = _tuning(False, 0, 1)
    call_deadline: float = _tuning(120.0, 0.001, 86400.0)
    max_answer_bytes: int = _tuning(32 * 1024 * 1024, 1, 1024**3)  # 8 in flight: < 400 MB
    pull_deadline: float = _tuning(3600.0, 0.001, 7 * 86400.0)
    peek_count: int = _tuning(100, 1, 100_000)
    token_lifetime: float = _tuning(3600.0, 1.0, 7 * 86400.0)
    roles: Mapping[str, RoleSettings] = field(default_factory=dict)
    db: str = DEFAULT_DB
    is_sandbox: bool = False
    config_path: str | None = None  # the profiles file it was read from, if any
    send_routes: str = "plural"
    environment: str | None = None  # "test" or "production": what every document sent says
    event_fields: Mapping[str, str] = field(default_factory=dict)  # "type" -> "eventInfo.action"
    interfaces: tuple[str, ...] = ()  # those it names, else those it has credentials for
    interfaces_named: bool = False
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    timezone: str = "UTC"  # reports show times in it; the store stays UTC

    def role(self, role: str) -> RoleSettings:
        """The settings of one role, checked complete (``ConfigError`` names what is missing)."""
        if role not in self.roles:
            raise ConfigError(
                f"Profile {self.name!r} does not use the {role} interface "
                f"({self.skipped().get(role, 'no settings yet')}): set its credentials "
                f"({env_prefix(role)}*), or add it to interfaces."
            )
        return self.roles[role].require()

    def secrets(self) -> list[str]:
        mail = [self.smtp.password.reveal()] if self.smtp.password else []
        return [s for r in self.roles.values() for s in r.secrets()] + mail

    def skipped(self) -> dict[str, str]:
        """The interfaces this profile does not use, and why."""
        why = "not in the profile's interfaces" if self.interfaces_named else "no credentials"
        return {role: why for role in ROLES if role not in self.interfaces}

    def check_interfaces(self) -> None:
        """``ConfigError`` naming every setting missing for the interfaces it uses (or none)."""
        if not self.interfaces:
            raise ConfigError(
                f"Profile {self.name!r} has credentials for no interface: set the variables of "
                "at least one (WORKBENCH_SUPPLIER_CLIENT_ID and _CLIENT_SECRET, say)."
            )
        problems = []
        for role in self.interfaces:
            try:
                self.role(role)
            except ConfigError as exc:
                problems.append(str(exc))
        if problems:
            raise ConfigError(" ".join(problems))

    @property
    def partner(self) -> str:
        """Whom this profile talks to, for a line of output: "embedded sandbox", or its URLs."""
        if self.is_sandbox:
            return "embedded sandbox"
        urls = dict.fromkeys(r.base_url for r in self.roles.values() if r.base_url)
        return ", ".join(urls) or "no partner URL set"

    def identity(self) -> dict[str, str]:
        """Whom this profile talks to, as a store records it: per side, base and login URLs."""
        found = {"partner_profile": self.name}
        for side, gateway in (("gateway", True), ("exchange", False)):
            used = [self.roles[r] for r in self.interfaces
                    if r in self.roles and (r in GATEWAY_ROLES) == gateway]  # fmt: skip
            base = auth = EMBEDDED_SANDBOX if self.is_sandbox else ""
            if not self.is_sandbox:
                base = next((r.base_url for r in used if r.base_url), "")
                auth = next((r.auth_url or r.token_url or "" for r in used), "")
            found[f"partner_{side}_url"] = normal_url(base)
            found[f"partner_{side}_auth_url"] = normal_url(auth)
        return found


PROFILE_SETTINGS: tuple[Setting, ...] = (
    Setting("auth_url", "url"),
    Setting("gateway_url", "url"),
    Setting("exchange_url", "url"),
    Setting("subscription_key", str, secret=True),
    Setting("exchange_subscription_key", str, secret=True),
    Setting("login", str, "identity", choices=("identity", "etms")),
    Setting("send_routes", str, "plural", choices=("plural", "singular")),
    Setting("environment", str, choices=("test", "production")),
    Setting("db", "path", "data/workbench.db"),
    Setting("interfaces", "list"),
    Setting("timezone", str, "UTC"),
    Setting("event_fields", "table"),
    *(
        Setting(f.name, type(f.default), f.default, limits=f.metadata["limits"])
        for f in fields(Profile)
        if "limits" in f.metadata
    ),
)
ROLE_SETTINGS: tuple[Setting, ...] = tuple(
    Setting(key, kind, section="*", secret=secret)
    for key, kind, secret in (
        ("client_id", str, False),
        ("client_secret", str, True),
        ("username", str, False),
        ("password", str, True),
        ("scope", str, False),
        ("token", str, True),  # issued by hand: it cannot be renewed
        ("auth_url", "url", False),
        ("token_url", "url", False),
    )
)
SMTP_SETTINGS: tuple[Setting, ...] = (
    Setting("host", str, section="smtp"),
    Setting("port", int, section="smtp", limits=(1, 65535)),
    Setting("tls", str, "starttls", section="smtp", choices=SMTP_TLS),
    Setting("username", str, section="smtp"),
    Setting("password", str, section="smtp", secret=True),
    Setting("from", str, section="smtp"),
    Setting("timeout", float, 30.0, section="smtp", limits=(0.001, 600.0)),
)
SETTINGS = {s.key: s for s in PROFILE_SETTINGS}
TUNING = {s.key: s for s in PROFILE_SETTINGS if s.limits is not None}
SMTP = {s.key: s for s in SMTP_SETTINGS}


def role_setting(key: str, section: str) -> Setting:
    """The role setting ``key`` as it is written in ``section``."""
    return replace(next(s for s in ROLE_SETTINGS if s.key == key), section=section)


def with_overrides(profile: Profile, **changes: Any) -> Profile:
    """A copy of ``profile`` with tuning settings changed: ``with_overrides(p, concurrency=4)``."""
    unknown = sorted(set(changes) - set(TUNING) - {"db"})
    if unknown:
        raise ConfigError(f"Unknown setting(s) {unknown}; known: {sorted(TUNING)}.")
    checked = {k: number(v, k, TUNING[k]) for k, v in changes.items() if k != "db"}
    if "db" in changes:
        checked["db"] = os.fspath(changes["db"])
    return replace(profile, **checked)


def number(raw: Any, where: str, setting: Setting, default: Any = None) -> Any:
    """``raw`` as the setting's kind within its limits (None: default); else ``ConfigError``."""
    if raw is None:
        return setting.default if default is None else default
    kind = setting.kind
    assert isinstance(kind, type) and setting.limits is not None
    try:
        if kind is bool:
            value = raw if isinstance(raw, bool) else parse_bool(str(raw))
        elif isinstance(raw, bool) or (kind is int and isinstance(raw, float)):
            raise ValueError(raw)  # True is not a number, 2.5 not a count
        else:
            value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be {kind.__name__}, got {raw!r}.") from None
    low, high = setting.limits
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{where} must be at least {low:g} and at most {high:g}, got {raw!r}.")
    return value


def parse_bool(text: str) -> bool:
    """A yes/no word: 1, true, yes, on or 0, false, no, off, in any case; else ``ValueError``."""
    word = text.strip().lower()
    if word not in _WORDS:
        raise ValueError(f"{text!r} is not one of {sorted(_WORDS)}")
    return _WORDS[word]


def normal_url(url: str) -> str:
    """``url`` as stores compare it: scheme and host lower case, no default port nor final slash."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return url
    try:
        port = parts.port
    except ValueError:
        return url
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def env_prefix(role: str) -> str:
    """The prefix of a role's variables: ``env_prefix("international") == "WORKBENCH_INTL_"``."""
    return f"WORKBENCH_{SECTION_OF[role].upper()}_"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine, which a password sent in clear never leaves."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_timezone(name: Any, where: str = "--tz") -> str:
    """``name`` as an IANA zone (None: ``UTC``), else a ``ConfigError`` naming ``where``."""
    if name is None:
        return "UTC"
    zone = str(name).strip()
    if zone != "UTC" and zone not in _zone_names():  # not localtime, posixrules, right/...
        raise ConfigError(
            f"{where}: {name!r} is not a time zone; use an IANA name such as America/Toronto "
            "or UTC."
        )
    return zone


@functools.cache
def _zone_names() -> frozenset[str]:
    return frozenset(available_timezones()) - {"localtime", "Factory", "posixrules"}


def text_of(value: Any) -> str | None:
    return None if value is None else str(value)
