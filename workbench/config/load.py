"""Profiles resolved from ``WORKBENCH_*`` variables (which win; empty is unset) and the file.

Every error names where a value came from; partner settings no profile uses are refused, so the
embedded sandbox is never used by accident."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workbench.config.files import CONFIG, PROFILE, profiles_file, workbench_home
from workbench.config.settings import (
    DEFAULT_DB,
    DEFAULT_SCOPES,
    ENV_ONLY,
    EVENT_FIELD_NAMES,
    EXCHANGE_ROLES,
    GATEWAY_ROLES,
    PROFILE_SETTINGS,
    ROLE_SECTIONS,
    ROLE_SETTINGS,
    ROLES,
    SANDBOX,
    SECTION_OF,
    SETTINGS,
    SHARED_EXCHANGE,
    SMTP,
    SMTP_SETTINGS,
    TUNING,
    Profile,
    RoleSettings,
    Secret,
    Setting,
    SmtpSettings,
    check_timezone,
    number,
    role_setting,
    text_of,
)
from workbench.errors import ConfigError
from workbench.spec import ETMS_LOGIN_PATH, TOKEN_PATH

_URL_KEYS = ("auth_url", "gateway_url", "exchange_url")
_SMTP_PORTS = {"starttls": 587, "ssl": 465, "none": 25}
_CREDENTIALS = ("client_id", "client_secret", "username", "password", "token")


def load_profile(
    name: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    sandbox_env: Mapping[str, str] | None = None,
) -> Profile:
    """The profile ``name``, else ``WORKBENCH_PROFILE``, else the file's ``default_profile``,
    else ``env`` when a partner URL variable is set, else ``sandbox`` (whose URLs and
    credentials are ``sandbox_env``, a running sandbox's).

    >>> load_profile(env={}).name
    'sandbox'
    """
    env = os.environ if env is None else env
    path, looked, profiles, default = profiles_file(config_path, env)
    chosen_by = PROFILE if name else "WORKBENCH_PROFILE" if env.get("WORKBENCH_PROFILE") else None
    name = name or env.get("WORKBENCH_PROFILE") or default or _unnamed(env, profiles, path)
    if name not in (SANDBOX, ENV_ONLY) and name not in profiles:
        other = f"or another {chosen_by}" if chosen_by else f"or change default_profile in {path}"
        fix = (
            f"there is no profiles file (looked for {', '.join(map(str, looked))}). Create one "
            f"with a [profiles.{name}] table, pass {CONFIG}"
            if path is None
            else f"add [profiles.{name}] to {path} (profiles there: "
            f"{', '.join(sorted(profiles)) or 'none'})"
        )
        raise ConfigError(f"Profile {name!r} is not defined: {fix}, {other}.")
    partner = _partner_variables(env)
    if name == SANDBOX and not chosen_by and partner:  # never the sandbox by accident
        why = (
            f"{path} chooses the embedded sandbox (default_profile)"
            if default == SANDBOX
            else "no partner URL variable is set (WORKBENCH_GATEWAY_URL, WORKBENCH_EXCHANGE_URL) "
            "and no profile is chosen"
        )
        raise ConfigError(
            f"{', '.join(partner)} {'is' if len(partner) == 1 else 'are'} set, but no profile "
            f"uses {'it' if len(partner) == 1 else 'them'}: {why}. Nothing ran against the "
            f"embedded sandbox instead: set the URLs, pass {PROFILE} or {CONFIG}, or --profile "
            'sandbox (profile="sandbox") to use the sandbox on purpose.'
        )
    table = profiles.get(name, {})
    _check_table(table, f"[profiles.{name}] of {path or 'the profiles file'}")
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
        **{key: number(*s.lookup(setting), setting) for key, setting in TUNING.items()},
    )


def _unnamed(env: Mapping[str, str], profiles: Mapping[str, Any], path: Path | None) -> str:
    """``env`` when partner URLs are set, else ``sandbox``; ``ConfigError`` when the profiles
    file defines partners but chooses none."""
    if any(env.get(SETTINGS[k].variable) for k in _URL_KEYS):
        return ENV_ONLY
    partners = sorted(set(profiles) - {SANDBOX})  # [profiles.sandbox] tunes the sandbox
    if partners:
        raise ConfigError(
            f"The profiles file {path} defines {', '.join(partners)} but chooses none: "
            f'pass {PROFILE}, set WORKBENCH_PROFILE, or add default_profile = "NAME" to it '
            '(--profile sandbox, profile="sandbox", is the embedded sandbox).'
        )
    return SANDBOX


def _partner_variables(env: Mapping[str, str]) -> list[str]:
    """The variables set in ``env`` that say which partner, or with which credentials."""
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
    env: Mapping[str, str]  # where a secret's variable named by the file is read
    table: dict[str, Any]
    profile: str
    path: Path | None

    def lookup(self, setting: Setting) -> tuple[Any, str]:
        """The value (None when unset; a secret is a :class:`Secret`) and where it is set."""
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
        """A URL without its final slash, and where it came from; http(s) with no credentials,
        query or fragment."""
        value, where = self.lookup(setting)
        if value is None:
            return None, where
        text = str(value).strip()
        parts = urlsplit(text)
        shown = re.sub(r"[^/@\s]*@", "***@", text.split("?", 1)[0].split("#", 1)[0])
        shown += "?***" if "?" in text or "#" in text else ""
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"{where} must be an http(s) URL, got {shown!r}.")
        credential = parts.username is not None or parts.password is not None
        if credential or parts.query or parts.fragment:
            raise ConfigError(
                f"{where} holds a user name, password, query or fragment ({shown}): a base URL is "
                "recorded with every call, so no credential goes in one. Give the base URL alone; "
                "credentials and a subscription key have settings of their own "
                "(docs/configuration.md)."
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
        """Whether a credential of ``role`` is set (not read): in its own or the shared section."""
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
            setting = role_setting(key, sec)
            tried.append(s.url(setting) if setting.kind == "url" else s.lookup(setting))
        value, where = next(((v, w) for v, w in tried if v is not None), tried[0])
        # An account both roles share: what it lacks is asked of the shared section.
        found[key], sources[key] = value, where if value is not None or not shared else tried[-1][1]
    if found["token"] is not None:
        grant = "static"
    elif role == "international" or login == "etms" or found["username"] is not None:
        grant = "password"
    else:
        grant = "client_credentials"
    base_url, sources["base_url"] = s.url(SETTINGS["gateway_url" if gateway else "exchange_url"])
    auth_url = found["auth_url"]
    if auth_url is None:  # the profile's identity server
        auth_url, where = s.url(SETTINGS["auth_url"])
        if auth_url is not None:
            sources["auth_url"] = where
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
        client_id=text_of(found["client_id"]),
        client_secret=found["client_secret"], username=text_of(found["username"]),
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


def _smtp(s: _Settings) -> SmtpSettings:
    """The mail server: a password only with a user name."""
    (host, where), (user, user_at), (password, password_at), (sender, _), (_, tls_at) = (
        s.lookup(SMTP[k]) for k in ("host", "username", "password", "from", "tls")
    )
    if (password is None) != (user is None):
        missing = password_at if password is None else user_at
        raise ConfigError(
            f"The mail server's login needs a username and a password: set {missing}."
        )
    tls = s.choice(SMTP["tls"])
    port = number(*s.lookup(SMTP["port"]), SMTP["port"], _SMTP_PORTS[tls])
    timeout = number(*s.lookup(SMTP["timeout"]), SMTP["timeout"])
    return SmtpSettings(text_of(host), port, tls, text_of(user), password, text_of(sender),
                        timeout, where, tls_at)  # fmt: skip


def _db(s: _Settings, env: Mapping[str, str]) -> str:
    """The store's path: a variable's from ``WORKBENCH_HOME``, the file's from its folder."""
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
