"""Profiles: where the partner is, which credentials each interface uses, how patient to be.

Settings come from ``WORKBENCH_*`` variables and a TOML profiles file (:func:`find_config`);
the environment wins, an empty variable or value is unset, and every error names where a
value came from. Secrets are never stored: they are values of variables, or the file names
the variable that holds them. No rule of length or form refuses a credential; those of
interfaces a profile does not use are never read.

The profile: ``load_profile(name)``, else ``WORKBENCH_PROFILE``, else the file's
``default_profile``, else ``env`` when a partner URL variable is set, else ``sandbox``. Partner
settings that no profile uses are refused: the embedded sandbox is never used by accident.

>>> load_profile(env={}).name
'sandbox'
"""

from __future__ import annotations

import difflib
import functools
import ipaddress
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from workbench.config.settings import (
    DEFAULT_SCOPES,
    EVENT_FIELD_NAMES,
    EXCHANGE_ROLES,
    GATEWAY_ROLES,
    PROFILE_SETTINGS,
    ROLE_SECTIONS,
    ROLE_SETTINGS,
    ROLES,
    SECTION_OF,
    SETTINGS,
    SHARED_EXCHANGE,
    SMTP_SETTINGS,
    SMTP_TLS,
    TUNING,
    Setting,
    role_setting,
    smtp_setting,
)
from workbench.errors import ConfigError
from workbench.spec import ETMS_LOGIN_PATH, TOKEN_PATH

SANDBOX, ENV_ONLY = "sandbox", "env"
DEFAULT_DB = "data/workbench.db"
DEFAULT_CONFIG = "workbench.toml"
EMBEDDED_SANDBOX = "embedded-sandbox"  # a store's record of the sandbox's URLs, whatever its port
MAX_CONFIG_BYTES = 1024 * 1024  # a profiles file is a few kilobytes (not /dev/zero)
MAX_LINE_CHARACTERS = 4096  # a longer line is a nesting made to be slow, never a setting
_URL_KEYS = ("auth_url", "gateway_url", "exchange_url", "exchange_auth_url")
_CREDENTIALS = ("client_id", "client_secret", "username", "password", "token")
_WORDS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}  # fmt: skip
_SMTP_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
_DEFAULT_PORTS = {"http": 80, "https": 443}


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
    """How one interface or exchange role is reached and logs in; ``sources`` says where each
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


@dataclass(frozen=True)
class Profile:
    """Everything a session needs; its ``repr`` shows no secret. The tuning defaults are the
    declared ones (:mod:`workbench.config.settings`)."""

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
    call_deadline: float = 120.0
    max_answer_bytes: int = 32 * 1024 * 1024  # 8 answers in flight at the cap: < 400 MB
    pull_deadline: float = 3600.0
    peek_count: int = 100
    token_lifetime: float = 3600.0
    send_routes: str = "plural"
    environment: str | None = None  # "test" or "production": what every document sent says
    event_fields: Mapping[str, str] = field(default_factory=dict)  # "type" -> "eventInfo.action"
    interfaces: tuple[str, ...] = ()  # those it names, else those it has credentials for
    interfaces_named: bool = False
    smtp: SmtpSettings = field(default_factory=SmtpSettings)
    timezone: str = "UTC"  # reports show times in it; the store stays UTC

    def role(self, role: str) -> RoleSettings:
        """The settings of one role, checked complete (``ConfigError`` names what is missing)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; known: {', '.join(ROLES)}")
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
        """Whom this profile talks to, as a store records it: its name, and per side it uses
        (gateway, exchange) the base and login URLs, normalised (``embedded-sandbox``)."""
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


def load_profile(
    name: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    sandbox_env: Mapping[str, str] | None = None,
) -> Profile:
    """Resolve a profile from the environment and the profiles file (env wins).

    ``sandbox_env``: a running sandbox's ``env``, the URLs and credentials of the ``sandbox``
    profile (which has none until :func:`workbench.connect` starts one).
    """
    env = os.environ if env is None else env
    path, looked = find_config(config_path, env)
    document = read_config(path) if path is not None else {}
    where = str(path) if path is not None else "the profiles file"
    unknown = sorted(set(document) - {"profiles", "default_profile"})
    if unknown:  # a misspelt [profile.prod] must not leave the sandbox to run instead
        close = difflib.get_close_matches(unknown[0], ["profiles", "default_profile"], n=1)
        raise ConfigError(
            f"Unknown key {unknown[0]!r} at the top of {where}."
            + (f" Did you mean {close[0]!r}?" if close else "")
            + ' A profiles file holds default_profile = "NAME" and [profiles.NAME] tables '
            "(docs/configuration.md)."
        )
    profiles, default = document.get("profiles", {}), document.get("default_profile")
    if not isinstance(profiles, dict):
        raise ConfigError(f"'profiles' in {where} must be a table of [profiles.NAME] tables.")
    if default is not None and not isinstance(default, str):
        raise ConfigError(
            f"default_profile in {where} must be a profile name in quotes, such as "
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
        raise ConfigError(
            f"Profile {name!r} is not defined: add [profiles.{name}] to {path} (profiles "
            f"there: {', '.join(sorted(profiles)) or 'none'}), {other}."
        )
    partner = _partner_variables(env)
    if name == SANDBOX and default == SANDBOX and not chosen_by and partner:
        raise ConfigError(
            f"{path} chooses the embedded sandbox (default_profile), but {', '.join(partner)} "
            "say which partner to use: pass --profile NAME (env: the variables), or "
            "--profile sandbox to use the sandbox on purpose."
        )
    table = profiles.get(name, {})
    _check_table(table, f"[profiles.{name}] of {where}")
    if name == SANDBOX:  # its own URLs and credentials; only tuning from the caller's env
        own = {s.variable for s in PROFILE_SETTINGS if s.limits or s.key in ("db", "timezone")}
        tuning = {k: v for k, v in env.items() if k in own or k.startswith("WORKBENCH_SMTP_")}
        s = _Settings({**tuning, **(sandbox_env or {})}, env, table, name, path)
        origin = "embedded sandbox"
    else:
        s = _Settings(env, env, table, name, path)
        alone = name == ENV_ONLY and name not in profiles
        origin = "environment" if alone else f"[profiles.{name}] of {path} + environment"
    for key in _URL_KEYS:  # checked whether or not an interface uses them
        s.url(SETTINGS[key])
    named = None if name == SANDBOX else _named_interfaces(s)
    no_roles = name == SANDBOX and sandbox_env is None  # until connect() starts the sandbox
    used = () if no_roles else named or tuple(r for r in ROLES if s.has_credentials(r))
    return Profile(
        name=name,
        origin=origin,
        roles={role: _role(s, role) for role in used},
        db=_db(s, env),
        is_sandbox=name == SANDBOX,
        config_path=str(path) if path is not None else None,
        interfaces=tuple(used),
        interfaces_named=named is not None,
        smtp=_smtp(s),
        timezone=check_timezone(*s.lookup(SETTINGS["timezone"])),
        send_routes=s.choice(SETTINGS["send_routes"]),
        environment=s.choice(SETTINGS["environment"]),
        event_fields=_event_fields(s),
        **{key: _number(*s.lookup(setting), setting) for key, setting in TUNING.items()},
    )


def with_overrides(profile: Profile, **changes: Any) -> Profile:
    """A copy of ``profile`` with tuning settings changed: ``with_overrides(p, concurrency=4)``."""
    unknown = sorted(set(changes) - set(TUNING) - {"db"})
    if unknown:
        raise ConfigError(f"Unknown setting(s) {unknown}; known: {sorted(TUNING)}.")
    checked = {k: _number(v, k, TUNING[k]) for k, v in changes.items() if k != "db"}
    if "db" in changes:
        checked["db"] = os.fspath(changes["db"])
    return replace(profile, **checked)


def find_config(
    config_path: str | os.PathLike[str] | None, env: Mapping[str, str]
) -> tuple[Path | None, list[Path]]:
    """The profiles file to read (None: there is none) and the places looked at: the one
    named (``--config``, ``WORKBENCH_CONFIG``), else the first ``workbench.toml`` in the
    working folder, ``WORKBENCH_HOME``, then the user's config folder."""
    home = workbench_home(env)
    explicit = config_path or env.get("WORKBENCH_CONFIG")
    if explicit:
        path = home / explicit if home and not Path(explicit).is_absolute() else Path(explicit)
        path = path.absolute()
        if not _present(path):
            how = "--config" if config_path else "WORKBENCH_CONFIG"
            raise ConfigError(f"Profiles file {path} does not exist (check {how}).")
        return path, [path]
    if env.get("XDG_CONFIG_HOME"):
        user = Path(env["XDG_CONFIG_HOME"]) / "workbench"
    else:
        from platformdirs import user_config_path

        user = user_config_path("workbench", appauthor=False)
    places = [Path.cwd(), *([home] if home else []), user]
    looked = [place / DEFAULT_CONFIG for place in dict.fromkeys(places)]
    return next((p for p in looked if _present(p)), None), looked


def workbench_home(env: Mapping[str, str]) -> Path | None:
    """``WORKBENCH_HOME``, absolute; ``ConfigError`` when it is set but no folder (a mistyped
    home must not leave a job to the sandbox in a folder of its own)."""
    value = env.get("WORKBENCH_HOME")
    if not value:
        return None
    path = Path(value).absolute()
    if not path.is_dir():
        raise ConfigError(f"WORKBENCH_HOME is {value!r}, which is no folder: fix or unset it.")
    return path


def _present(path: Path) -> bool:
    """Whether ``path`` is there: a file, or a link to one. A link to nothing, or a folder
    that cannot be searched, is a ``ConfigError``: either would silently skip the user's
    profiles."""
    try:
        if path.exists():
            return True
        if path.is_symlink():
            raise ConfigError(f"Profiles file {path} is a link to nothing: fix or remove it.")
    except PermissionError:
        raise ConfigError(
            f"Cannot look for {path}: permission denied on its folder. Fix its permissions, "
            "or pass --config PATH."
        ) from None
    return False


def _check_owner(path: Path, info: os.stat_result) -> None:
    """Refuse a profiles file another user could have written: it says where credentials are
    sent (a token_url of theirs would receive the passwords), so, as ssh does with its keys,
    only the user's own file (or root's), writable by nobody else, is read."""
    if os.name != "posix":
        return
    theirs = info.st_uid not in (os.getuid(), 0)
    if theirs or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "another user's" if theirs else "writable by others"
        raise ConfigError(
            f"Profiles file {path} is {who}: it says where credentials are sent, so only your "
            f"own file, writable by you alone, is read. Check it, then `chmod go-w {path}` (or "
            "move it away if it is not yours)."
        )


def read_config(path: Path) -> dict[str, Any]:
    """The TOML at ``path``; ``ConfigError`` unless it is a regular file of at most
    :data:`MAX_CONFIG_BYTES` (a folder, a FIFO or a device is never opened)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"Profiles file {path} is not a regular file (a folder, a pipe or a device): "
                "name a workbench.toml file."
            )
        _check_owner(path, info)
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"Profiles file {path} has more than {MAX_CONFIG_BYTES:,} bytes; a profiles file "
                f"holds at most {MAX_CONFIG_BYTES:,}. Check that it is the right file."
            )
        text = raw.decode("utf-8")
        longest = max(map(len, text.splitlines()), default=0)
        if longest > MAX_LINE_CHARACTERS:
            raise ConfigError(
                f"Profiles file {path} has a line of {longest:,} characters; a profiles file's "
                f"lines hold at most {MAX_LINE_CHARACTERS:,}. Check that it is the right file."
            )
        return tomllib.loads(text)
    except OSError as exc:
        raise ConfigError(f"Profiles file {path} cannot be read: {exc.strerror}.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Profiles file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(
            f"Profiles file {path} nests its tables or arrays too deep to be a profiles file."
        ) from None


def _unnamed(env: Mapping[str, str], profiles: Mapping[str, Any], path: Path | None,
             looked: list[Path]) -> str:  # fmt: skip
    """The profile when none is named: ``env`` when partner URLs are set, ``sandbox`` when
    nothing is; partner settings that no profile would use are refused."""
    if any(env.get(SETTINGS[k].variable) for k in _URL_KEYS):
        return ENV_ONLY
    partner = _partner_variables(env)
    if partner:
        it = "it" if len(partner) == 1 else "them"
        raise ConfigError(
            f"{', '.join(partner)} {'is' if len(partner) == 1 else 'are'} set, but no profile "
            f"uses {it}: no partner URL variable is set (WORKBENCH_GATEWAY_URL, "
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


def _partner_variables(env: Mapping[str, str]) -> list[str]:
    """The variables set in ``env`` that say which partner, or with which credentials (not
    tuning)."""
    variables = {s.variable for s in PROFILE_SETTINGS if s.limits is None and s.kind != "path"}
    variables -= {"WORKBENCH_TIMEZONE", "WORKBENCH_INTERFACES", "WORKBENCH_EVENT_FIELDS"}
    variables |= {role_setting(s.key, sec).variable for s in ROLE_SETTINGS for sec in ROLE_SECTIONS}
    return sorted(k for k, v in env.items() if v and k in variables)


def _check_table(table: Any, where: str) -> None:
    """Every key of a profile's table is a setting (secrets only by the variable's name)."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table.")
    for key, value in table.items():
        if key == "smtp" or key in ROLE_SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{key} in {where} must be a table ([...{key}]).")
            allowed = {s.file_key: s for s in (SMTP_SETTINGS if key == "smtp" else ROLE_SETTINGS)}
            if key == SHARED_EXCHANGE:  # its auth URL is the profile's exchange_auth_url
                allowed.pop("auth_url")
            for sub in value:
                _check_key(sub, allowed, f"[...{key}] of {where}", ())
        else:
            _check_key(
                key, {s.file_key: s for s in PROFILE_SETTINGS}, where, (*ROLE_SECTIONS, "smtp")
            )


def _check_key(
    key: str, allowed: Mapping[str, Setting], where: str, tables: tuple[str, ...]
) -> None:
    if key in allowed:
        return
    if any(s.secret and s.key == key for s in allowed.values()):
        raise ConfigError(
            f"{key} in {where}: secrets are not kept in files. Put the secret in an "
            f'environment variable and name it instead: {key}_env = "NAME_OF_THE_VARIABLE".'
        )
    close = difflib.get_close_matches(key, [*allowed, *tables, "international"], n=1)
    guess = "intl" if close == ["international"] else close[0] if close else None
    sections = f"; and the tables [...{'], [...'.join(tables)}]" if tables else ""
    raise ConfigError(
        f"Unknown setting {key!r} in {where}."
        + (f" Did you mean {guess!r}?" if guess else "")
        + f" Known: {', '.join(sorted(allowed))}{sections}."
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
        """The value (None when unset or empty; a secret is a :class:`Secret`) and where it
        came from: its variable, its key in the file, the variable the file names, or how to
        set it."""
        var, section = setting.variable, setting.section
        if self.variables.get(var):
            value = self.variables[var]
            return (Secret(value) if setting.secret else value), var
        where = f"[profiles.{self.profile}{'.' + section if section else ''}]"
        table = self.table.get(section, {}) if section else self.table
        if setting.secret and table.get(setting.file_key) is not None:
            name = table[setting.file_key]
            secret = self.env.get(str(name))
            named = f"{name} (named by {setting.file_key} in {where} of {self.path})"
            return (Secret(secret) if secret else None), named
        if not setting.secret and table.get(setting.key) not in (None, ""):
            return table[setting.key], f"{setting.key} in {where} of {self.path}"
        if self.profile in (SANDBOX, ENV_ONLY) or self.path is None:
            return None, var
        return None, f"{var} (or {setting.file_key} in {where} of {self.path})"

    def url(self, setting: Setting) -> tuple[str | None, str]:
        """A URL without its trailing slash, and where it came from; ``ConfigError`` unless it
        is http(s) with no user name or password in it."""
        value, where = self.lookup(setting)
        if value is None:
            return None, where
        text = str(value).strip()
        parts = urlsplit(text)
        # What may be a credential never shows: a user name or password (``***@``, whether or
        # not the URL has a scheme), a query and a fragment.
        shown = re.sub(r"[^/@\s]*@", "***@", text.split("?", 1)[0].split("#", 1)[0])
        shown += "?***" if "?" in text or "#" in text else ""
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{where} must be an http(s) URL, got {shown!r}.")
        if parts.username is not None or parts.password is not None:
            raise ConfigError(
                f"{where} holds a user name or password ({shown}): a URL is recorded with every "
                "call, so credentials never go in one. Remove them from the URL and set the "
                "interface's own credentials (docs/configuration.md)."
            )
        if parts.query or parts.fragment:
            raise ConfigError(
                f"{where} holds a query or a fragment ({shown}): a base URL is recorded with "
                "every call, and a key in it would be too. Give the base URL alone; a "
                "subscription key has a setting of its own (docs/configuration.md)."
            )
        return text.rstrip("/"), where

    def choice(self, setting: Setting) -> Any:
        value, where = self.lookup(setting)
        if value is None:
            return setting.default
        word = str(value).strip().lower()
        if word not in setting.choices:
            raise ConfigError(
                f"{where} must be one of {', '.join(setting.choices)}, got {str(value)!r}."
            )
        return word

    def has_credentials(self, role: str, sections: tuple[str, ...] | None = None) -> bool:
        """Whether a credential of ``role`` is set (its value is not read), in its own section
        or, for an exchange role, the shared one (or in ``sections``)."""
        if sections is None:
            sections = (SECTION_OF[role],) + ((SHARED_EXCHANGE,) if role in EXCHANGE_ROLES else ())
        return any(
            self.variables.get(role_setting(k, sec).variable)
            or self.table.get(sec, {}).get(role_setting(k, sec).file_key)
            for sec in sections
            for k in _CREDENTIALS
        )


def _role(s: _Settings, role: str) -> RoleSettings:
    """A role's settings: each credential from its own section, else the shared exchange one."""
    gateway = role in GATEWAY_ROLES
    sections = (SECTION_OF[role],) if gateway else (SECTION_OF[role], SHARED_EXCHANGE)
    login = "identity" if gateway else s.choice(SETTINGS["login"])
    shared = not gateway and (login == "etms" or s.has_credentials(role, (SHARED_EXCHANGE,)))
    found: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in (*_CREDENTIALS, "scope", "token_url", "auth_url"):
        tried = []
        for sec in sections:
            if not (sec == SHARED_EXCHANGE and key == "auth_url"):
                setting = role_setting(key, sec)
                tried.append(s.url(setting) if setting.kind == "url" else s.lookup(setting))
        value, where = next(((v, w) for v, w in tried if v is not None), tried[0])
        # An account both roles share (an etms login, or credentials in its section): what
        # it lacks is asked of that section.
        found[key], sources[key] = value, where if value is not None or not shared else tried[-1][1]
    if found["token"] is not None:
        grant = "static"
    elif role == "international" or login == "etms" or found["username"] is not None:
        grant = "password"
    else:
        grant = "client_credentials"
    base_url, sources["base_url"] = s.url(SETTINGS["gateway_url" if gateway else "exchange_url"])
    auth_url = found["auth_url"]
    for key in () if auth_url else ("auth_url",) if gateway else ("exchange_auth_url", "auth_url"):
        auth_url, where = s.url(SETTINGS[key])
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
    key, sources["subscription_key"] = s.lookup(
        SETTINGS["subscription_key" if gateway else "exchange_subscription_key"]
    )
    scope = found["scope"] or (None if login == "etms" else DEFAULT_SCOPES[role])
    settings = RoleSettings(
        role=role, grant=grant, login=login, base_url=base_url, auth_url=auth_url,
        token_url=token_url, scope=None if scope is None else str(scope), subscription_key=key,
        configured=s.has_credentials(role), client_id=_text(found["client_id"]),
        client_secret=found["client_secret"], username=_text(found["username"]),
        password=found["password"], token=found["token"], sources=sources,
    )  # fmt: skip
    needed = ["base_url"] + (["subscription_key"] if gateway else [])
    needed += [] if grant == "static" else ["token_url"]
    if grant == "client_credentials" or (grant == "password" and login == "identity" and gateway):
        needed += ["client_id", "client_secret"]
    needed += ["username", "password"] if grant == "password" else []
    return replace(
        settings, missing=tuple(sources[k] for k in needed if getattr(settings, k) is None)
    )


def _named_interfaces(s: _Settings) -> tuple[str, ...] | None:
    """The interfaces a profile names, in ROLES order; None when it names none."""
    setting = SETTINGS["interfaces"]
    raw, where = s.lookup(setting)
    if raw is None:
        return None
    if where == setting.variable:  # a variable: names separated by commas
        raw = [n for n in raw.split(",") if n.strip()]
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise ConfigError(
            f'{where} must be a list of names, such as interfaces = ["supplier", "consumer"]; '
            f"got {raw!r}."
        )
    names = [n.strip() for n in raw]
    unknown = [n for n in names if n not in ROLES]
    if unknown or not names:
        raise ConfigError(
            f"{where} names {', '.join(map(repr, unknown)) or 'nothing'}; use some of: "
            f"{', '.join(ROLES)}."
        )
    return tuple(r for r in ROLES if r in names)


def _event_fields(s: _Settings) -> dict[str, str]:
    """``event_fields`` as {"id"|"type"|"time": dotted path}."""
    raw, where = s.lookup(SETTINGS["event_fields"])
    if raw is None:
        return {}
    if isinstance(raw, str) and where == SETTINGS["event_fields"].variable:
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


def _db(s: _Settings, env: Mapping[str, str]) -> str:
    """The store's path: a variable's from ``WORKBENCH_HOME`` (or as given), the file's from
    the file's folder, so that a profile keeps one store whatever folder a command runs in."""
    value, where = s.lookup(SETTINGS["db"])
    home = workbench_home(env)
    if value is None or where.startswith("WORKBENCH_"):
        if s.path is not None and s.profile not in (SANDBOX, ENV_ONLY) and not value:
            return str(s.path.parent / DEFAULT_DB)
        return str(home / (value or DEFAULT_DB)) if home else str(value or DEFAULT_DB)
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a path in quotes, got {value!r}.")
    assert s.path is not None
    return str(s.path.parent / value)


def _smtp(s: _Settings) -> SmtpSettings:
    """The profile's mail server, checked: ``tls`` one of its choices, ``port`` 1-65535, a
    password only with a user name (and the reverse), no password in clear over a network."""
    value = {k: s.lookup(smtp_setting(k)) for k in ("host", "tls", "username", "from", "password")}
    tls = str(value["tls"][0] or "starttls").strip().lower()
    if tls not in SMTP_TLS:
        raise ConfigError(f"{value['tls'][1]} must be one of {', '.join(SMTP_TLS)}, got {tls!r}.")
    port = _number(*s.lookup(smtp_setting("port")), smtp_setting("port"), _SMTP_PORTS[tls])
    host, username = _text(value["host"][0]), _text(value["username"][0])
    password, password_where = value["password"]
    if (password is None) != (username is None):
        missing = password_where if password is None else value["username"][1]
        raise ConfigError(
            f"The mail server's login needs a username and a password: set {missing}."
        )
    if tls == "none" and username is not None and host is not None and not is_loopback(host):
        raise ConfigError(
            f"{value['tls'][1]} is none, so the mail password would cross the network to {host} "
            "in clear: set tls to starttls or ssl (or send without a login, or through a relay "
            "on this machine, such as localhost)."
        )
    return SmtpSettings(host, port, tls, username, password, _text(value["from"][0]),
                        _number(*s.lookup(smtp_setting("timeout")), smtp_setting("timeout")),
                        value["host"][1])  # fmt: skip


def _number(raw: Any, where: str, setting: Setting, default: Any = None) -> Any:
    """``raw`` as a finite number (or yes/no) of the setting's kind within its limits (None:
    its default), else a ``ConfigError`` naming ``where`` it was set."""
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
    """``url`` as stores compare it: scheme and host lower-cased, a default port and a trailing
    slash dropped; others as given.

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
    """The IANA zones this machine knows, less files of the database that name no place."""
    return frozenset(available_timezones()) - {"localtime", "Factory", "posixrules"}


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
