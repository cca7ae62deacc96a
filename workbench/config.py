"""Profiles: where the partner is, which credentials each interface uses, and how patient to be.

Settings come from ``WORKBENCH_*`` environment variables (DESIGN §5) and from a TOML profiles file
(``WORKBENCH_CONFIG``, default ``./workbench.toml``); the environment wins. Secrets are never
stored: they are values of environment variables, or the TOML file names the variable that holds
them (``client_secret_env = "PROD_SUPPLIER_SECRET"``). An empty variable or value is unset. With
nothing configured the profile is ``sandbox``: the embedded partner simulation, started by
:func:`workbench.connect`.

Example ``workbench.toml``::

    default_profile = "prod"

    [profiles.prod]
    auth_url = "https://identity.partner.example"
    gateway_url = "https://gateway.partner.example"
    exchange_url = "https://exchange.partner.example"
    subscription_key_env = "PROD_SUBSCRIPTION_KEY"
    read_only = true
    interfaces = ["supplier"]   # default: the interfaces it has credentials for

    [profiles.prod.supplier]
    client_id = "college-supplier"
    client_secret_env = "PROD_SUPPLIER_SECRET"

Profile selection: the ``profile`` argument, else ``WORKBENCH_PROFILE``, else the file's
``default_profile``, else ``env`` when a ``WORKBENCH_*_URL`` variable is set, else ``sandbox``.

Relative paths (the profiles file, a profile's ``db``) are taken from the current folder, or
from ``WORKBENCH_HOME`` when it is set: JupyterLab starts a notebook's kernel in the notebook's
folder, so ``make lab`` points ``WORKBENCH_HOME`` at the project.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from workbench.errors import ConfigError
from workbench.redact import unsafe_to_mask
from workbench.spec import DOMESTIC_SCOPE, EXCHANGE_SCOPE, INTL_SCOPE, TOKEN_PATH

SANDBOX = "sandbox"
ENV_ONLY = "env"
ROLES = ("international", "domestic", "supplier", "consumer")
GATEWAY_ROLES = frozenset({"international", "domestic"})
# role -> (section in env names and TOML, default grant, default scope)
_ROLE_DEFAULTS = {
    "international": ("intl", "password", INTL_SCOPE),
    "domestic": ("domestic", "client_credentials", DOMESTIC_SCOPE),
    "supplier": ("supplier", "client_credentials", EXCHANGE_SCOPE),
    "consumer": ("consumer", "client_credentials", EXCHANGE_SCOPE),
}
_ROLE_PLAIN = ("client_id", "username", "scope", "auth_url")
_ROLE_SECRETS = ("client_secret", "password", "token")
_PROFILE_SECRETS = ("subscription_key", "exchange_subscription_key")
_SECRET_KEYS = frozenset(_ROLE_SECRETS + _PROFILE_SECRETS)
_URL_KEYS = ("auth_url", "gateway_url", "exchange_url", "exchange_auth_url")
# The least and the most of each tuning setting (its default is in Profile): every number is
# checked finite and in range at load.
TUNING_LIMITS: dict[str, tuple[float, float]] = {
    "connect_timeout": (0.001, 600.0),
    "read_timeout": (0.001, 3600.0),
    "concurrency": (1, 64),
    "max_attempts": (1, 100),
    "backoff_initial": (0.0, 3600.0),
    "backoff_max": (0.0, 3600.0),
    "retry_after_max": (0.0, 3600.0),
    "token_margin": (0.0, 86400.0),
    "read_only": (0, 1),
    "call_deadline": (0.001, 86400.0),
    "max_answer_bytes": (1, 1024 * 1024 * 1024),
    "pull_deadline": (0.001, 7 * 86400.0),
    "peek_count": (1, 100_000),
}
_PROFILE_KEYS = frozenset(
    {
        *_URL_KEYS,
        *TUNING_LIMITS,
        "db",
        "interfaces",
        "timezone",
        *(f"{k}_env" for k in _PROFILE_SECRETS),
    }
)
# The folder of PESC XSDs documents are validated against (``workbench.pesc.validate``).
SCHEMAS_VARIABLE = "WORKBENCH_PESC_SCHEMAS"
# [profiles.NAME.smtp] / WORKBENCH_SMTP_*: how ``workbench report --mail-to`` sends (SmtpSettings)
SMTP_TLS = ("starttls", "ssl", "none")
_SMTP_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
_SMTP_KEYS = frozenset({"host", "port", "tls", "username", "from", "timeout", "password_env"})
_ROLE_KEYS = frozenset({*_ROLE_PLAIN, *(f"{k}_env" for k in _ROLE_SECRETS)})
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
DEFAULT_DB = "data/workbench.db"
DEFAULT_CONFIG = "workbench.toml"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a store records of the embedded sandbox's URLs: they change port every run.
EMBEDDED_SANDBOX = "embedded-sandbox"


class Secret:
    """A string that does not show itself: ``repr`` and ``str`` are masked; ``reveal()`` is not."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class RoleSettings:
    """How one interface or exchange role is reached and authenticated."""

    role: str
    grant: str  # "password", "client_credentials" or "static"
    base_url: str | None = None
    auth_url: str | None = None
    client_id: str | None = None
    client_secret: Secret | None = None
    username: str | None = None
    password: Secret | None = None
    scope: str | None = None
    token: Secret | None = None
    subscription_key: Secret | None = None
    configured: bool = False
    missing: tuple[str, ...] = ()

    @property
    def token_url(self) -> str:
        return f"{self.auth_url}{TOKEN_PATH}"

    def require(self) -> RoleSettings:
        """Self, or a ``ConfigError`` naming every setting still needed for this role."""
        if self.missing:
            raise ConfigError(
                f"The {self.role} interface is not fully configured: set "
                + ", ".join(self.missing)
                + "."
            )
        return self

    def secrets(self) -> list[str]:
        values = (self.client_secret, self.password, self.token, self.subscription_key)
        return [s.reveal() for s in values if s is not None]


@dataclass(frozen=True)
class SmtpSettings:
    """The mail server a report is sent through; ``password`` a :class:`Secret` by reference."""

    host: str | None = None
    port: int = 587
    tls: str = "starttls"  # one of SMTP_TLS
    username: str | None = None
    password: Secret | None = None
    sender: str | None = None  # the From address ("from" in the file, WORKBENCH_SMTP_FROM)
    timeout: float = 30.0
    where: str = "WORKBENCH_SMTP_HOST"  # how to set the host, for messages


@dataclass(frozen=True)
class Profile:
    """Everything a session needs. Its ``repr`` shows no secret."""

    name: str
    origin: str
    roles: Mapping[str, RoleSettings] = field(default_factory=dict)
    db: str = DEFAULT_DB
    is_sandbox: bool = False
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    concurrency: int = 8
    max_attempts: int = 5
    backoff_initial: float = 0.5
    backoff_max: float = 10.0
    retry_after_max: float = 30.0
    token_margin: float = 60.0
    read_only: bool = False
    # Limits on what a partner answer may cost (issue #10): seconds per call, retries included;
    # bytes per decompressed answer (8 answers in flight at the cap stay < 400 MB); seconds per
    # pull.
    call_deadline: float = 120.0
    max_answer_bytes: int = 32 * 1024 * 1024
    pull_deadline: float = 3600.0
    # The domestic peek's Count (issue #11): the partner does not announce its largest; a pull
    # that is refused learns it and keeps it in the store (meta peek_count_learned).
    peek_count: int = 100
    # The interfaces this profile uses: those it names (``interfaces = [...]``,
    # WORKBENCH_INTERFACES), else those it has credentials for; in ROLES order.
    interfaces: tuple[str, ...] = ()
    interfaces_named: bool = False
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    # The zone reports show times in (``timezone``, WORKBENCH_TIMEZONE); the store stays UTC.
    timezone: str = "UTC"

    def role(self, role: str) -> RoleSettings:
        """The settings of one role, checked complete (``ConfigError`` names what is missing)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
        if role not in self.roles:
            raise ConfigError(f"Profile {self.name!r} has no settings yet for {role}.")
        return self.roles[role].require()

    def secrets(self) -> list[str]:
        mail = [self.smtp.password.reveal()] if self.smtp.password else []
        return [s for r in self.roles.values() for s in r.secrets()] + mail

    def skipped(self) -> dict[str, str]:
        """The interfaces this profile does not use, and why: ``{"domestic": "no credentials"}``."""
        why = "not in the profile's interfaces" if self.interfaces_named else "no credentials"
        return {role: why for role in ROLES if role not in self.interfaces}

    def check_interfaces(self) -> None:
        """``ConfigError`` naming every setting still missing for the interfaces it uses (or
        saying it uses none): what a pull checks before it creates or writes anything."""
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

    def identity(self) -> dict[str, str]:
        """Whom this profile talks to, as a store records it (:mod:`workbench.store.identity`):
        its name, and per side it uses (gateway, exchange) the base and auth URLs, normalised;
        the embedded sandbox's are ``embedded-sandbox``, whatever its port."""
        found = {"partner_profile": self.name}
        for side, gateway in (("gateway", True), ("exchange", False)):
            used = [
                self.roles[r]
                for r in self.interfaces
                if r in self.roles and (r in GATEWAY_ROLES) == gateway
            ]
            if self.is_sandbox:
                base = auth = EMBEDDED_SANDBOX
            else:
                base = next((r.base_url for r in used if r.base_url), "")
                auth = next((r.auth_url for r in used if r.auth_url), "")
            found[f"partner_{side}_url"] = normal_url(base)
            found[f"partner_{side}_auth_url"] = normal_url(auth)
        return found


_TUNING_DEFAULTS = {f.name: f.default for f in fields(Profile) if f.name in TUNING_LIMITS}


def normal_url(url: str) -> str:
    """``url`` as stores compare it: scheme and host lower-cased, a default port and a trailing
    slash dropped (``HTTPS://Etms.OCAS.ca:443/`` is ``https://etms.ocas.ca``); others as given.

    >>> normal_url("HTTPS://Etms.OCAS.ca:443/api/")
    'https://etms.ocas.ca/api'
    """
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
    return f"WORKBENCH_{_ROLE_DEFAULTS[role][0].upper()}_"


def load_profile(
    name: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    sandbox_env: Mapping[str, str] | None = None,
) -> Profile:
    """Resolve a profile from the environment and the TOML file (env wins).

    ``sandbox_env`` is the ``env`` of a running sandbox: it supplies the URLs and credentials of
    the ``sandbox`` profile, which otherwise has none until :func:`workbench.connect` starts one.

    >>> load_profile(env={}).name
    'sandbox'
    """
    env = os.environ if env is None else env
    home = Path(env.get("WORKBENCH_HOME") or ".")
    path, document = _read_toml(config_path, env, home)
    profiles = document.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"'profiles' in {path} must be a table of [profiles.NAME] tables.")
    default = document.get("default_profile")
    if default is not None and not isinstance(default, str):
        raise ConfigError(
            f"default_profile in {path} must be a profile name in quotes, such as "
            f'default_profile = "prod"; got {type(default).__name__} {default!r}.'
        )
    name = name or env.get("WORKBENCH_PROFILE") or default
    if not name:
        name = ENV_ONLY if any(env.get(f"WORKBENCH_{k.upper()}") for k in _URL_KEYS) else SANDBOX
    table = profiles.get(name, {})
    if name not in (SANDBOX, ENV_ONLY) and name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        if not path.exists():
            raise ConfigError(
                f"Profile {name!r} is not defined: there is no profiles file at "
                f"{path.absolute()} (looked there as --config and WORKBENCH_CONFIG are not set). "
                f"Create it with a [profiles.{name}] table, pass --config PATH, or unset "
                "WORKBENCH_PROFILE."
            )
        raise ConfigError(
            f"Profile {name!r} is not defined: add [profiles.{name}] to {path} "
            f"(profiles there: {known}), or unset WORKBENCH_PROFILE."
        )
    _check_table(table, f"[profiles.{name}] of {path}")
    if name == SANDBOX:
        # The sandbox's own URLs and credentials; only tuning comes from the caller's environment.
        tuning = {
            k: v
            for k, v in env.items()
            if k.removeprefix("WORKBENCH_").lower() in {*TUNING_LIMITS, "db", "timezone"}
            or k.startswith("WORKBENCH_SMTP_")
        }
        settings = _Settings({**tuning, **(sandbox_env or {})}, env, table, name, path)
        origin = "embedded sandbox"
    else:
        settings = _Settings(env, env, table, name, path)
        origin = "environment" if name == ENV_ONLY else f"[profiles.{name}] of {path} + environment"
    no_roles = name == SANDBOX and sandbox_env is None  # until connect() starts the sandbox
    roles = {} if no_roles else {role: _role(settings, role) for role in ROLES}
    named = None if name == SANDBOX else _named_interfaces(settings)
    db = settings.lookup("db")[0]
    return Profile(
        name=name,
        origin=origin,
        roles=roles,
        db=_under(home, str(db or DEFAULT_DB), env),
        is_sandbox=name == SANDBOX,
        interfaces=named or tuple(r for r in ROLES if r in roles and roles[r].configured),
        interfaces_named=named is not None,
        smtp=_smtp(settings),
        timezone=check_timezone(*settings.lookup("timezone")),
        **{key: _tuning(key, *settings.lookup(key)) for key in TUNING_LIMITS},
    )


def _named_interfaces(settings: _Settings) -> tuple[str, ...] | None:
    """The interfaces a profile names (WORKBENCH_INTERFACES=supplier,consumer, or
    ``interfaces = ["supplier", "consumer"]``) in ROLES order; None when it names none."""
    raw, where = settings.lookup("interfaces")
    if raw is None:
        return None
    if where == _var("interfaces"):  # a variable: names separated by commas
        names = [n.strip() for n in raw.split(",") if n.strip()]
    elif isinstance(raw, list) and all(isinstance(n, str) for n in raw):
        names = [n.strip() for n in raw]
    else:
        raise ConfigError(
            f"{where} must be a list of names, such as "
            f'interfaces = ["supplier", "consumer"]; got {raw!r}.'
        )
    unknown = [n for n in names if n not in ROLES]
    if unknown or not names:
        raise ConfigError(
            f"{where} names {', '.join(map(repr, unknown)) or 'nothing'}"
            f"; use some of: {', '.join(ROLES)}."
        )
    return tuple(r for r in ROLES if r in names)


def with_overrides(profile: Profile, **changes: Any) -> Profile:
    """A copy of ``profile`` with tuning settings changed: ``with_overrides(p, concurrency=4)``."""
    unknown = sorted(set(changes) - set(TUNING_LIMITS) - {"db"})
    if unknown:
        raise ConfigError(f"Unknown setting(s) {unknown}; known: {sorted(TUNING_LIMITS)}.")
    checked = {key: _tuning(key, value, key) for key, value in changes.items() if key != "db"}
    if "db" in changes:
        checked["db"] = os.fspath(changes["db"])
    return replace(profile, **checked)


def _under(home: Path, path: str, env: Mapping[str, str]) -> str:
    """``path`` taken from ``WORKBENCH_HOME`` when that is set (an absolute path stays itself)."""
    return str(home / path) if env.get("WORKBENCH_HOME") else path


def _read_toml(
    config_path: str | os.PathLike[str] | None, env: Mapping[str, str], home: Path
) -> tuple[Path, dict[str, Any]]:
    explicit = config_path or env.get("WORKBENCH_CONFIG")
    path = home / Path(explicit or DEFAULT_CONFIG)  # an absolute path stays itself
    if not path.exists():
        if explicit:
            raise ConfigError(f"Profiles file {path} does not exist (check WORKBENCH_CONFIG).")
        return path, {}
    try:
        return path, tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Profiles file {path} is not valid TOML: {exc}") from None


def _check_table(table: Any, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table.")
    sections = {section for section, _, _ in _ROLE_DEFAULTS.values()}
    for key, value in table.items():
        if key == "smtp":
            if not isinstance(value, dict):
                raise ConfigError(f"smtp in {where} must be a table ([...smtp]).")
            for sub in value:
                _check_key(sub, _SMTP_KEYS, f"[...smtp] of {where}")
        elif key in sections:
            if not isinstance(value, dict):
                raise ConfigError(f"{key} in {where} must be a table ([...{key}]).")
            for sub in value:
                _check_key(sub, _ROLE_KEYS, f"[...{key}] of {where}")
        else:
            _check_key(key, _PROFILE_KEYS | sections, where)


def _check_key(key: str, allowed: frozenset[str], where: str) -> None:
    if key in _SECRET_KEYS:
        raise ConfigError(
            f"{key} in {where}: secrets are not kept in files. Put the secret in an environment "
            f'variable and name it instead: {key}_env = "NAME_OF_THE_VARIABLE".'
        )
    if key not in allowed:
        raise ConfigError(
            f"Unknown setting {key!r} in {where}; known: {', '.join(sorted(allowed))}."
        )


@dataclass(frozen=True)
class _Settings:
    """A profile's settings as they are set: its ``WORKBENCH_*`` variables, then its TOML table."""

    variables: Mapping[str, str]  # the WORKBENCH_* variables it reads
    env: Mapping[str, str]  # where it reads a variable the file names for a secret
    table: dict[str, Any]  # [profiles.NAME]
    profile: str
    path: Path

    def lookup(self, key: str, section: str | None = None) -> tuple[Any, str]:
        """``key``'s value (None when unset or empty; a secret is a :class:`Secret`) and where it
        came from: its variable, its TOML key, the variable the file names, or how to set it."""
        var = _var(key, section)
        value = self.variables.get(var)
        if value:
            return (_maskable(value, var) if key in _SECRET_KEYS else value), var
        where = f"[profiles.{self.profile}{'.' + section if section else ''}]"
        table = self.table.get(section, {}) if section else self.table
        name = table.get(f"{key}_env") if key in _SECRET_KEYS else None
        if name is not None:
            named = f"{name} (named by {key}_env in {where} of {self.path})"
            secret = self.env.get(str(name))
            return (_maskable(secret, named) if secret else None), named
        if table.get(key) not in (None, ""):
            return table[key], f"{key} in {where} of {self.path}"
        if self.profile in (SANDBOX, ENV_ONLY):
            return None, var
        toml_key = f"{key}_env" if key in _SECRET_KEYS else key
        return None, f"{var} (or {toml_key} in {where} of {self.path})"

    def url(self, key: str, section: str | None = None) -> str | None:
        """A URL setting without its trailing slash; ``ConfigError`` unless it is http(s)."""
        value, where = self.lookup(key, section)
        if value is None:
            return None
        if not str(value).startswith(("http://", "https://")):
            raise ConfigError(f"{where} must be an http(s) URL, got {value!r}.")
        return str(value).rstrip("/")


def _tuning(key: str, raw: Any, where: str) -> Any:
    """``raw`` as the tuning setting ``key`` takes it (None is its default), checked in range."""
    default = _TUNING_DEFAULTS[key]
    return _number(raw, where, type(default), TUNING_LIMITS[key], default)


def parse_bool(text: str) -> bool:
    """A yes/no word: 1, true, yes, on or 0, false, no, off, in any case; else ``ValueError``."""
    word = text.strip().lower()
    if word not in _TRUE | _FALSE:
        raise ValueError(f"{text!r} is not one of {sorted(_TRUE | _FALSE)}")
    return word in _TRUE


def _maskable(value: str, setting: str) -> Secret:
    """``value`` as a Secret, or a ConfigError when masking it would rewrite ordinary text."""
    reason = unsafe_to_mask(value)
    if reason is not None:
        raise ConfigError(
            f"{setting} is not safe to mask: {reason}. Secrets are masked wherever they show up "
            "in what the workbench records, and one this short or common would rewrite partner "
            "documents too (a key that is a year turns dates into [REDACTED]-02-20). Check "
            "that it holds the whole credential the partner issued."
        )
    return Secret(value)


def _var(key: str, section: str | None = None) -> str:
    return f"WORKBENCH_{section.upper() + '_' if section else ''}{key.upper()}"


def _coerce(raw: Any, kind: type) -> Any:
    if kind is bool:
        return raw if isinstance(raw, bool) else parse_bool(str(raw))
    if isinstance(raw, bool) or (kind is int and isinstance(raw, float)):
        raise ValueError(raw)  # True is not a number, 2.5 not a count
    return kind(raw)


def _role(settings: _Settings, role: str) -> RoleSettings:
    section, default_grant, default_scope = _ROLE_DEFAULTS[role]
    gateway = role in GATEWAY_ROLES
    credentials = ("client_id", "username", *_ROLE_SECRETS)
    found = {key: settings.lookup(key, section)[0] for key in (*credentials, "scope")}
    # A role is configured when it has a credential, or the file names a variable for one.
    named = settings.table.get(section, {})
    configured = any(found[k] is not None for k in credentials) or any(
        f"{k}_env" in named for k in _ROLE_SECRETS
    )
    if found["token"] is not None:
        grant = "static"
    elif default_grant == "password" or found["username"] is not None:
        grant = "password"
    else:
        grant = "client_credentials"
    base_key = "gateway_url" if gateway else "exchange_url"
    auth_url = settings.url("auth_url", section) or (
        settings.url("auth_url")
        if gateway
        else settings.url("exchange_auth_url") or settings.url("auth_url")
    )
    key_name = "subscription_key" if gateway else "exchange_subscription_key"
    role_settings = RoleSettings(
        role=role,
        grant=grant,
        base_url=settings.url(base_key),
        auth_url=auth_url,
        scope=str(found["scope"] or default_scope),
        subscription_key=settings.lookup(key_name)[0],
        configured=configured,
        client_id=_text(found["client_id"]),
        client_secret=found["client_secret"],
        username=_text(found["username"]),
        password=found["password"],
        token=found["token"],
    )
    # (attribute, setting key, section) of what this grant cannot do without
    needed: list[tuple[str, str, str | None]] = [("base_url", base_key, None)]
    if gateway:
        needed.append(("subscription_key", "subscription_key", None))
    if grant != "static":
        needed.append(("auth_url", "auth_url", None))
        needed += [(key, key, section) for key in ("client_id", "client_secret")]
    if grant == "password":
        needed += [(key, key, section) for key in ("username", "password")]
    missing = tuple(
        settings.lookup(key, sec)[1]
        for attr, key, sec in needed
        if getattr(role_settings, attr) is None
    )
    return replace(role_settings, missing=missing)


def _smtp(settings: _Settings) -> SmtpSettings:
    """The profile's mail server, checked: ``tls`` one of SMTP_TLS, ``port`` 1-65535, a
    ``password`` only with a ``username`` (and the reverse)."""
    value = {key: settings.lookup(key, "smtp") for key in ("host", "tls", "username", "from")}
    tls = str(value["tls"][0] or "starttls").strip().lower()
    if tls not in SMTP_TLS:
        raise ConfigError(f"{value['tls'][1]} must be one of {', '.join(SMTP_TLS)}, got {tls!r}.")
    port = _number(*settings.lookup("port", "smtp"), int, (1, 65535), _SMTP_PORTS[tls])
    timeout = _number(*settings.lookup("timeout", "smtp"), float, (0.001, 600.0), 30.0)
    password, password_where = settings.lookup("password", "smtp")
    username = _text(value["username"][0])
    if (password is None) != (username is None):
        missing = password_where if password is None else value["username"][1]
        raise ConfigError(
            f"The mail server's login needs a username and a password: set {missing}."
        )
    host = _text(value["host"][0])
    if tls == "none" and username is not None and host is not None and not is_loopback(host):
        raise ConfigError(
            f"{value['tls'][1]} is none, so the mail password would cross the network to {host} "
            "in clear: set tls to starttls or ssl (or send without a login, or through a relay "
            "on this machine, such as localhost)."
        )
    return SmtpSettings(
        host=host,
        port=port,
        tls=tls,
        username=username,
        password=password,
        sender=_text(value["from"][0]),
        timeout=timeout,
        where=value["host"][1],
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine (``localhost``, 127.0.0.0/8, ``::1``), which a
    password sent in clear never leaves."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _number(raw: Any, where: str, kind: type, limits: tuple[float, float], default: Any) -> Any:
    """``raw`` as a finite ``kind`` within ``limits`` (None: ``default``), else a ConfigError."""
    if raw is None:
        return default
    try:
        value = _coerce(raw, kind)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be {kind.__name__}, got {raw!r}.") from None
    if not (math.isfinite(value) and limits[0] <= value <= limits[1]):
        raise ConfigError(
            f"{where} must be at least {limits[0]:g} and at most {limits[1]:g}, got {raw!r}."
        )
    return value


def check_timezone(name: Any, where: str = "--tz") -> str:
    """``name`` as an IANA time zone reports can show times in (None: ``UTC``), else a
    ``ConfigError`` naming it and ``where`` it was set.

    >>> check_timezone("America/Toronto")
    'America/Toronto'
    """
    if name is None:
        return "UTC"
    zone = str(name).strip()
    try:
        if zone != "UTC" and zone not in _zone_names():  # not localtime, posixrules, right/...
            raise ValueError(zone)
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ConfigError(
            f"{where}: {name!r} is not a time zone; use an IANA name such as America/Toronto "
            "or UTC."
        ) from None
    return zone


@functools.cache
def _zone_names() -> frozenset[str]:
    """The IANA zones this machine knows (``zoneinfo.available_timezones``, read once), less
    the files of the zone database that are not zones a place keeps."""
    return frozenset(available_timezones()) - {"localtime", "Factory", "posixrules"}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
