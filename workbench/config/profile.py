"""Profiles: where the partner is, which credentials each interface uses, and how patient to be.

Settings come from ``WORKBENCH_*`` environment variables and from a TOML profiles file (found as
:mod:`workbench.config.files` says); the environment wins. Every setting is declared in
:mod:`workbench.config.settings` and listed in ``docs/configuration.md``. Secrets are never
stored: they are values of environment variables, or the file names the variable that holds
them (``client_secret_env = "PROD_SUPPLIER_SECRET"``). An empty variable or value is unset. No
rule of length or form refuses a credential: the partner issues them. Secrets of interfaces a
profile does not use are never read.

Example ``workbench.toml``::

    default_profile = "prod"

    [profiles.prod]
    gateway_url = "https://gateway.partner.example"
    exchange_url = "https://exchange.partner.example"
    login = "etms"              # the exchange's own login, one account for both roles
    environment = "production"  # every document sent must say PRODUCTION

    [profiles.prod.exchange]
    username = 'Partner\\college.user'
    password_env = "PROD_EXCHANGE_PASSWORD"

Profile selection: the ``profile`` argument, else ``WORKBENCH_PROFILE``, else the file's
``default_profile``, else ``env`` when a ``WORKBENCH_*_URL`` variable is set, else ``sandbox``.
Partner credentials in the environment that no profile uses are refused rather than ignored:
the embedded sandbox is never used by accident.
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from workbench.config.files import find_config, read_config
from workbench.config.files import home as workbench_home
from workbench.config.settings import (
    DEFAULT_SCOPES,
    ETMS_LOGIN_PATH,
    EVENT_FIELD_NAMES,
    EXCHANGE_ROLES,
    GATEWAY_ROLES,
    PROFILE_SETTINGS,
    ROLE_SECTIONS,
    ROLE_SETTINGS,
    ROLES,
    SECTION_OF,
    SHARED_EXCHANGE,
    SMTP_SETTINGS,
    TUNING,
    Setting,
    profile_setting,
    role_setting,
    smtp_setting,
)
from workbench.errors import ConfigError
from workbench.spec import TOKEN_PATH

SANDBOX = "sandbox"
ENV_ONLY = "env"
DEFAULT_DB = "data/workbench.db"
_SMTP_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a store records of the embedded sandbox's URLs: they change port every run.
EMBEDDED_SANDBOX = "embedded-sandbox"
_URL_KEYS = ("auth_url", "gateway_url", "exchange_url", "exchange_auth_url")
_CREDENTIALS = ("client_id", "client_secret", "username", "password", "token")


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
    """How one interface or exchange role is reached and logs in. ``sources`` says where each
    setting came from (a variable, or a key of the file), for messages."""

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
    configured: bool = False
    missing: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)

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

    def where(self, *keys: str) -> str:
        """Where ``keys`` are set, for advice: "WORKBENCH_SUPPLIER_CLIENT_ID and ..."."""
        return " and ".join(self.sources.get(k, k) for k in keys)


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
    config_path: str | None = None  # the profiles file it was read from, if any
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    concurrency: int = 8
    max_attempts: int = 5
    backoff_initial: float = 0.5
    backoff_max: float = 10.0
    retry_after_max: float = 30.0
    token_margin: float = 60.0
    read_only: bool = False
    # What a partner answer may cost: seconds per call, retries included; bytes per
    # decompressed answer (8 answers in flight at the cap stay < 400 MB); seconds per pull.
    call_deadline: float = 120.0
    max_answer_bytes: int = 32 * 1024 * 1024
    pull_deadline: float = 3600.0
    # The domestic peek's Count: the partner does not announce its largest; a pull that is
    # refused learns it and keeps it in the store (meta peek_count_learned).
    peek_count: int = 100
    token_lifetime: float = 3600.0
    send_routes: str = "plural"
    environment: str | None = None  # "test" or "production": what every document sent says
    event_fields: Mapping[str, str] = field(default_factory=dict)  # "type" -> "eventInfo.action"
    # The interfaces this profile uses: those it names, else those it has credentials for.
    interfaces: tuple[str, ...] = ()
    interfaces_named: bool = False
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    timezone: str = "UTC"  # reports show times in it; the store stays UTC

    def role(self, role: str) -> RoleSettings:
        """The settings of one role, checked complete (``ConfigError`` names what is missing)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
        if role not in self.roles:
            why = self.skipped().get(role, "no settings yet")
            raise ConfigError(
                f"Profile {self.name!r} does not use the {role} interface ({why}): set its "
                f"credentials ({env_prefix(role)}*), or add it to interfaces."
            )
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

    @property
    def partner(self) -> str:
        """Whom this profile talks to, for a line of output: "embedded sandbox", or its URLs."""
        if self.is_sandbox:
            return "embedded sandbox"
        urls = dict.fromkeys(r.base_url for r in self.roles.values() if r.base_url)
        return ", ".join(urls) or "no partner URL set"

    def identity(self) -> dict[str, str]:
        """Whom this profile talks to, as a store records it (:mod:`workbench.store.identity`):
        its name, and per side it uses (gateway, exchange) the base and login URLs, normalised;
        the embedded sandbox's are ``embedded-sandbox``, whatever its port."""
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
    return f"WORKBENCH_{SECTION_OF[role].upper()}_"


def load_profile(
    name: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    sandbox_env: Mapping[str, str] | None = None,
) -> Profile:
    """Resolve a profile from the environment and the profiles file (env wins).

    ``sandbox_env`` is the ``env`` of a running sandbox: it supplies the URLs and credentials of
    the ``sandbox`` profile, which otherwise has none until :func:`workbench.connect` starts one.

    >>> load_profile(env={}).name
    'sandbox'
    """
    env = os.environ if env is None else env
    path, looked = find_config(config_path, env)
    document = read_config(path) if path is not None else {}
    where_file = str(path) if path is not None else "the profiles file"
    unknown = sorted(set(document) - {"profiles", "default_profile"})
    if unknown:  # a misspelt [profile.prod] must not leave the sandbox to run instead
        close = difflib.get_close_matches(unknown[0], ["profiles", "default_profile"], n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"Unknown key {unknown[0]!r} at the top of {where_file}.{hint} A profiles file "
            'holds default_profile = "NAME" and [profiles.NAME] tables (docs/configuration.md).'
        )
    profiles = document.get("profiles", {})
    if not isinstance(profiles, dict):
        raise ConfigError(f"'profiles' in {where_file} must be a table of [profiles.NAME] tables.")
    default = document.get("default_profile")
    if default is not None and not isinstance(default, str):
        raise ConfigError(
            f"default_profile in {where_file} must be a profile name in quotes, such as "
            f'default_profile = "prod"; got {type(default).__name__} {default!r}.'
        )
    chosen_by = (
        "--profile" if name else "WORKBENCH_PROFILE" if env.get("WORKBENCH_PROFILE") else None
    )
    name = name or env.get("WORKBENCH_PROFILE") or default or _unnamed(env, profiles, path, looked)
    if name not in (SANDBOX, ENV_ONLY) and name not in profiles:
        other = f"or another {chosen_by}" if chosen_by else f"or change default_profile in {path}"
        if path is None:
            raise ConfigError(
                f"Profile {name!r} is not defined: there is no profiles file (looked for "
                f"{', '.join(map(str, looked))}). Create one with a [profiles.{name}] table, "
                f"pass --config PATH, {other}."
            )
        known = ", ".join(sorted(profiles)) or "none"
        raise ConfigError(
            f"Profile {name!r} is not defined: add [profiles.{name}] to {path} "
            f"(profiles there: {known}), {other}."
        )
    partner = sorted(k for k, v in env.items() if v and _is_partner_variable(k))
    if name == SANDBOX and default == SANDBOX and not chosen_by and partner:
        raise ConfigError(
            f"{path} chooses the embedded sandbox (default_profile), but {', '.join(partner)} "
            "say which partner to use: pass --profile NAME (env: the variables), or "
            "--profile sandbox to use the sandbox on purpose."
        )
    table = profiles.get(name, {})
    _check_table(table, f"[profiles.{name}] of {where_file}")
    home = workbench_home(env) or Path(".")
    if name == SANDBOX:
        # The sandbox's own URLs and credentials; only tuning comes from the caller's environment.
        own = {s.variable for s in PROFILE_SETTINGS if s.limits or s.key in ("db", "timezone")}
        tuning = {k: v for k, v in env.items() if k in own or k.startswith("WORKBENCH_SMTP_")}
        settings = _Settings({**tuning, **(sandbox_env or {})}, env, table, name, path)
        origin = "embedded sandbox"
    else:
        settings = _Settings(env, env, table, name, path)
        origin = (
            "environment"
            if name == ENV_ONLY and name not in profiles
            else f"[profiles.{name}] of {path} + environment"
        )
    for key in _URL_KEYS:  # checked whether or not an interface uses them
        settings.url(profile_setting(key))
    named = None if name == SANDBOX else _named_interfaces(settings)
    no_roles = name == SANDBOX and sandbox_env is None  # until connect() starts the sandbox
    used = () if no_roles else named or tuple(r for r in ROLES if settings.has_credentials(r))
    roles = {role: _role(settings, role) for role in used}
    return Profile(
        name=name,
        origin=origin,
        roles=roles,
        db=_db(settings, home, env),
        is_sandbox=name == SANDBOX,
        config_path=str(path) if path is not None else None,
        interfaces=tuple(used),
        interfaces_named=named is not None,
        smtp=_smtp(settings),
        timezone=check_timezone(*settings.lookup(profile_setting("timezone"))),
        send_routes=settings.choice("send_routes"),
        environment=settings.choice("environment"),
        event_fields=_event_fields(settings),
        **{key: settings.number(s) for key, s in TUNING.items()},
    )


def _unnamed(
    env: Mapping[str, str], profiles: Mapping[str, Any], path: Path | None, looked: list[Path]
) -> str:
    """The profile when none is named: ``env`` when partner URLs are set, ``sandbox`` when
    nothing is. Partner settings that no profile would use are refused, not ignored."""
    if any(env.get(f"WORKBENCH_{k.upper()}") for k in _URL_KEYS):
        return ENV_ONLY
    partner = sorted(k for k, v in env.items() if v and _is_partner_variable(k))
    if partner:
        raise ConfigError(
            f"{', '.join(partner)} {'is' if len(partner) == 1 else 'are'} set, but no profile "
            f"uses {'it' if len(partner) == 1 else 'them'}: no partner URL variable is set "
            "(WORKBENCH_GATEWAY_URL, "
            "WORKBENCH_EXCHANGE_URL) and no profile is chosen"
            + (f" from {path}" if path else f" (no profiles file at {', '.join(map(str, looked))})")
            + ". Nothing ran against the embedded sandbox instead: set the URLs, pass --profile "
            "NAME or --config PATH, or --profile sandbox to use the sandbox on purpose."
        )
    partners = sorted(set(profiles) - {SANDBOX})  # [profiles.sandbox] tunes the sandbox
    if partners:
        raise ConfigError(
            f"The profiles file {path} defines {', '.join(partners)} but chooses none: "
            'pass --profile NAME, set WORKBENCH_PROFILE, or add default_profile = "NAME" to it '
            "(--profile sandbox uses the embedded sandbox)."
        )
    return SANDBOX


def _is_partner_variable(name: str) -> bool:
    """A variable that says which partner, or with which credentials (not tuning)."""
    if not name.startswith("WORKBENCH_"):
        return False
    partner = {s.variable for s in PROFILE_SETTINGS if s.limits is None and s.kind != "path"}
    partner -= {"WORKBENCH_TIMEZONE", "WORKBENCH_INTERFACES", "WORKBENCH_EVENT_FIELDS"}
    roles = {role_setting(s.key, section).variable for s in ROLE_SETTINGS
             for section in ROLE_SECTIONS}  # fmt: skip
    return name in partner | roles


def _named_interfaces(settings: _Settings) -> tuple[str, ...] | None:
    """The interfaces a profile names (WORKBENCH_INTERFACES=supplier,consumer, or
    ``interfaces = ["supplier", "consumer"]``) in ROLES order; None when it names none."""
    setting = profile_setting("interfaces")
    raw, where = settings.lookup(setting)
    if raw is None:
        return None
    if where == setting.variable:  # a variable: names separated by commas
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


def _event_fields(settings: _Settings) -> dict[str, str]:
    """``event_fields`` as {"id"|"type"|"time": field path}."""
    setting = profile_setting("event_fields")
    raw, where = settings.lookup(setting)
    if raw is None:
        return {}
    if isinstance(raw, str) and where == setting.variable:
        pairs = [part.partition("=") for part in raw.split(",") if part.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise ConfigError(f'{where} must read like "type=eventInfo.action,time=when".')
        raw = {k.strip(): v.strip() for k, _, v in pairs}
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v for v in raw.values()):
        raise ConfigError(
            f'{where} must be a table of field names, such as {{ type = "eventInfo.action" }}.'
        )
    unknown = sorted(set(raw) - set(EVENT_FIELD_NAMES))
    if unknown:
        raise ConfigError(
            f"{where} names {', '.join(unknown)}; it maps {', '.join(EVENT_FIELD_NAMES)}."
        )
    return dict(raw)


def with_overrides(profile: Profile, **changes: Any) -> Profile:
    """A copy of ``profile`` with tuning settings changed: ``with_overrides(p, concurrency=4)``."""
    unknown = sorted(set(changes) - set(TUNING) - {"db"})
    if unknown:
        raise ConfigError(f"Unknown setting(s) {unknown}; known: {sorted(TUNING)}.")
    checked = {
        key: _number(value, key, TUNING[key]) for key, value in changes.items() if key != "db"
    }
    if "db" in changes:
        checked["db"] = os.fspath(changes["db"])
    return replace(profile, **checked)


def _db(settings: _Settings, home: Path, env: Mapping[str, str]) -> str:
    """The store's path: a variable's from ``WORKBENCH_HOME`` (or as given), the file's from
    the file's folder, so that a profile keeps one store whatever folder a command runs in."""
    value, where = settings.lookup(profile_setting("db"))
    if value is None or where.startswith("WORKBENCH_"):
        path = str(value or DEFAULT_DB)
        if settings.path is not None and settings.profile not in (SANDBOX, ENV_ONLY) and not value:
            return str(settings.path.parent / path)
        return str(home / path) if env.get("WORKBENCH_HOME") else path
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a path in quotes, got {value!r}.")
    assert settings.path is not None
    return str(settings.path.parent / value)


def _check_table(table: Any, where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table.")
    profile_keys = {s.file_key: s for s in PROFILE_SETTINGS}
    for key, value in table.items():
        if key == "smtp" or key in ROLE_SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{key} in {where} must be a table ([...{key}]).")
            declared = SMTP_SETTINGS if key == "smtp" else ROLE_SETTINGS
            allowed = {s.file_key: s for s in declared}
            if key == SHARED_EXCHANGE:  # its auth URL is the profile's exchange_auth_url
                allowed.pop("auth_url")
            for sub in value:
                _check_key(sub, allowed, f"[...{key}] of {where}")
        else:
            _check_key(key, profile_keys, where, tables=(*ROLE_SECTIONS, "smtp"))


def _check_key(
    key: str, allowed: Mapping[str, Setting], where: str, *, tables: tuple[str, ...] = ()
) -> None:
    if key not in allowed:
        secret = next((s for s in allowed.values() if s.secret and s.key == key), None)
        if secret is not None:
            raise ConfigError(
                f"{key} in {where}: secrets are not kept in files. Put the secret in an "
                f'environment variable and name it instead: {key}_env = "NAME_OF_THE_VARIABLE".'
            )
        sections = f"; and the tables [...{'], [...'.join(tables)}]" if tables else ""
        names = {**dict.fromkeys(allowed), **dict.fromkeys(tables), "international": None}
        close = difflib.get_close_matches(key, names, n=1)
        guess = "intl" if close == ["international"] else close[0] if close else None
        hint = f" Did you mean {guess!r}?" if guess else ""
        raise ConfigError(
            f"Unknown setting {key!r} in {where}.{hint} Known: {', '.join(sorted(allowed))}"
            f"{sections}."
        )


@dataclass(frozen=True)
class _Settings:
    """A profile's settings as they are set: its ``WORKBENCH_*`` variables, then its table."""

    variables: Mapping[str, str]  # the WORKBENCH_* variables it reads
    env: Mapping[str, str]  # where it reads a variable the file names for a secret
    table: dict[str, Any]  # [profiles.NAME]
    profile: str
    path: Path | None

    def lookup(self, setting: Setting) -> tuple[Any, str]:
        """The setting's value (None when unset or empty; a secret is a :class:`Secret`) and
        where it came from: its variable, its key in the file, the variable the file names,
        or how to set it."""
        var = setting.variable
        value = self.variables.get(var)
        if value:
            return (Secret(value) if setting.secret else value), var
        section = setting.section
        where = f"[profiles.{self.profile}{'.' + section if section else ''}]"
        table = self.table.get(section, {}) if section else self.table
        if setting.secret and table.get(setting.file_key) is not None:
            name = table[setting.file_key]
            named = f"{name} (named by {setting.file_key} in {where} of {self.path})"
            secret = self.env.get(str(name))
            return (Secret(secret) if secret else None), named
        if not setting.secret and table.get(setting.key) not in (None, ""):
            return table[setting.key], f"{setting.key} in {where} of {self.path}"
        if self.profile in (SANDBOX, ENV_ONLY) or self.path is None:
            return None, var
        return None, f"{var} (or {setting.file_key} in {where} of {self.path})"

    def url(self, setting: Setting) -> tuple[str | None, str]:
        """A URL setting without its trailing slash, and where it came from; ``ConfigError``
        unless it is http(s) with no user name or password in it."""
        value, where = self.lookup(setting)
        if value is None:
            return None, where
        text = str(value).strip()
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{where} must be an http(s) URL, got {_shown_url(text)!r}.")
        if parts.username is not None or parts.password is not None:
            raise ConfigError(
                f"{where} holds a user name or password ({_shown_url(text)}): a URL is recorded "
                "with every call, so credentials never go in one. Remove them from the URL and "
                "set the interface's own credentials (docs/configuration.md)."
            )
        if parts.query or parts.fragment:
            raise ConfigError(
                f"{where} holds a query or a fragment ({_shown_url(text)}): a base URL is "
                "recorded with every call, and a key in it would be too. Give the base URL "
                "alone; a subscription key has a setting of its own (docs/configuration.md)."
            )
        return text.rstrip("/"), where

    def number(self, setting: Setting) -> Any:
        return _number(*self.lookup(setting), setting)

    def choice(self, key: str) -> Any:
        setting = profile_setting(key)
        value, where = self.lookup(setting)
        if value is None:
            return setting.default
        word = str(value).strip().lower()
        if word not in setting.choices:
            raise ConfigError(
                f"{where} must be one of {', '.join(setting.choices)}, got {str(value)!r}."
            )
        return word

    def has_shared_credentials(self) -> bool:
        """Whether a credential is set in the section both exchange roles share."""
        table = self.table.get(SHARED_EXCHANGE, {})
        return any(
            self.variables.get(role_setting(key, SHARED_EXCHANGE).variable)
            or table.get(role_setting(key, SHARED_EXCHANGE).file_key)
            for key in _CREDENTIALS
        )

    def has_credentials(self, role: str) -> bool:
        """Whether any credential of ``role`` is set (its value is not read), in its own
        section or, for an exchange role, the shared one."""
        sections = [SECTION_OF[role]] + ([SHARED_EXCHANGE] if role in EXCHANGE_ROLES else [])
        for section in sections:
            table = self.table.get(section, {})
            for key in _CREDENTIALS:
                setting = role_setting(key, section)
                if self.variables.get(setting.variable) or table.get(setting.file_key):
                    return True
        return False


def _shown_url(url: str) -> str:
    """``url`` with what may be a credential hidden, for messages: a user name or password
    (``***@``, whether or not the URL has a scheme) and its query and fragment."""
    shown = re.sub(r"[^/@\s]*@", "***@", url.split("?", 1)[0].split("#", 1)[0])
    return shown + ("?***" if "?" in url or "#" in url else "")


def parse_bool(text: str) -> bool:
    """A yes/no word: 1, true, yes, on or 0, false, no, off, in any case; else ``ValueError``."""
    word = text.strip().lower()
    if word not in _TRUE | _FALSE:
        raise ValueError(f"{text!r} is not one of {sorted(_TRUE | _FALSE)}")
    return word in _TRUE


def _coerce(raw: Any, kind: type) -> Any:
    if kind is bool:
        return raw if isinstance(raw, bool) else parse_bool(str(raw))
    if isinstance(raw, bool) or (kind is int and isinstance(raw, float)):
        raise ValueError(raw)  # True is not a number, 2.5 not a count
    return kind(raw)


def _number(raw: Any, where: str, setting: Setting, default: Any = None) -> Any:
    """``raw`` as a finite number of the setting's kind within its limits (None: its
    default), else a ConfigError naming ``where`` it was set."""
    if raw is None:
        return setting.default if default is None else default
    kind = setting.kind
    assert isinstance(kind, type) and setting.limits is not None
    try:
        value = _coerce(raw, kind)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} must be {kind.__name__}, got {raw!r}.") from None
    low, high = setting.limits
    if not (math.isfinite(value) and low <= value <= high):
        raise ConfigError(f"{where} must be at least {low:g} and at most {high:g}, got {raw!r}.")
    return value


def _role(settings: _Settings, role: str) -> RoleSettings:
    section = SECTION_OF[role]
    gateway = role in GATEWAY_ROLES
    shared = [] if gateway else [SHARED_EXCHANGE]
    found: dict[str, Any] = {}
    sources: dict[str, str] = {}
    missing_where: dict[str, dict[str, str]] = {}  # key -> section -> how to set it
    for key in (*_CREDENTIALS, "scope", "token_url", "auth_url"):
        for sec in (section, *shared):
            if sec == SHARED_EXCHANGE and key == "auth_url":
                continue
            setting = role_setting(key, sec)
            value, where = (
                settings.url(setting) if setting.kind == "url" else settings.lookup(setting)
            )
            missing_where.setdefault(key, {})[sec] = where
            if value is not None or key not in sources:
                found[key], sources[key] = value, where
            if value is not None:
                break
    login = "identity" if gateway else settings.choice("login")
    # An exchange account shared by both roles (an etms login, or credentials given in its
    # section): what it lacks is asked of that section, not of each role's.
    if shared and (login == "etms" or settings.has_shared_credentials()):
        for key, value in found.items():
            if value is None and SHARED_EXCHANGE in missing_where[key]:
                sources[key] = missing_where[key][SHARED_EXCHANGE]
    if found["token"] is not None:
        grant = "static"
    elif role == "international" or login == "etms" or found["username"] is not None:
        grant = "password"
    else:
        grant = "client_credentials"
    base_key = profile_setting("gateway_url" if gateway else "exchange_url")
    base_url, sources["base_url"] = settings.url(base_key)
    auth_url = found["auth_url"]
    if auth_url is None:
        for key in ("auth_url",) if gateway else ("exchange_auth_url", "auth_url"):
            auth_url, where = settings.url(profile_setting(key))
            if auth_url is not None:
                sources["auth_url"] = where
                break
    token_url = found["token_url"]
    if token_url is None and login == "etms" and base_url:
        token_url = base_url + ETMS_LOGIN_PATH
    elif token_url is None and auth_url:
        token_url = auth_url + TOKEN_PATH
    if token_url is None:
        sources["token_url"] = (
            sources["base_url"] if login == "etms" else sources.get("auth_url", "auth_url")
        )
    key_name = "subscription_key" if gateway else "exchange_subscription_key"
    subscription_key, sources["subscription_key"] = settings.lookup(profile_setting(key_name))
    scope = found["scope"] or (None if login == "etms" else DEFAULT_SCOPES[role])
    role_settings = RoleSettings(
        role=role,
        grant=grant,
        login=login,
        base_url=base_url,
        auth_url=auth_url,
        token_url=token_url,
        scope=None if scope is None else str(scope),
        subscription_key=subscription_key,
        configured=settings.has_credentials(role),
        client_id=_text(found["client_id"]),
        client_secret=found["client_secret"],
        username=_text(found["username"]),
        password=found["password"],
        token=found["token"],
        sources=sources,
    )
    # What this grant cannot do without.
    needed = ["base_url"] + (["subscription_key"] if gateway else [])
    if grant != "static":
        needed.append("token_url")
    if grant == "client_credentials" or (grant == "password" and login == "identity" and gateway):
        needed += ["client_id", "client_secret"]
    if grant == "password":
        needed += ["username", "password"]
    missing = tuple(sources[k] for k in needed if getattr(role_settings, k) is None)
    return replace(role_settings, missing=missing)


def _smtp(settings: _Settings) -> SmtpSettings:
    """The profile's mail server, checked: ``tls`` one of its choices, ``port`` 1-65535, a
    ``password`` only with a ``username`` (and the reverse)."""
    value = {k: settings.lookup(smtp_setting(k)) for k in ("host", "tls", "username", "from")}
    tls_setting = smtp_setting("tls")
    tls = str(value["tls"][0] or "starttls").strip().lower()
    if tls not in tls_setting.choices:
        raise ConfigError(
            f"{value['tls'][1]} must be one of {', '.join(tls_setting.choices)}, got {tls!r}."
        )
    port_setting = smtp_setting("port")
    port = _number(*settings.lookup(port_setting), port_setting, _SMTP_PORTS[tls])
    timeout = settings.number(smtp_setting("timeout"))
    password, password_where = settings.lookup(smtp_setting("password"))
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
    """The IANA zones this machine knows, less the files of the zone database that are not
    zones a place keeps."""
    return frozenset(available_timezones()) - {"localtime", "Factory", "posixrules"}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
