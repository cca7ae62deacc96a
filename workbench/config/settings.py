"""Every setting a profile takes, declared once.

A setting's variable is ``WORKBENCH_`` + its section + its key (``[profiles.prod.supplier]
client_id`` is ``WORKBENCH_SUPPLIER_CLIENT_ID``); the file names the variable holding a secret
(``client_secret_env = "PROD_SUPPLIER_SECRET"``). docs/configuration.md says what each means.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

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


def _number(key: str, kind: type, default: Any, low: float, high: float) -> Setting:
    return Setting(key, kind, default, limits=(low, high))


PROFILE_SETTINGS: tuple[Setting, ...] = (
    Setting("auth_url", "url"),
    Setting("gateway_url", "url"),
    Setting("exchange_url", "url"),
    Setting("exchange_auth_url", "url"),
    Setting("subscription_key", str, secret=True),
    Setting("exchange_subscription_key", str, secret=True),
    Setting("login", str, "identity", choices=("identity", "etms")),
    _number("token_lifetime", float, 3600.0, 1.0, 7 * 86400.0),
    Setting("send_routes", str, "plural", choices=("plural", "singular")),
    Setting("environment", str, choices=("test", "production")),
    Setting("db", "path", "data/workbench.db"),
    Setting("interfaces", "list"),
    Setting("timezone", str, "UTC"),
    Setting("event_fields", "table"),
    _number("read_only", bool, False, 0, 1),
    _number("connect_timeout", float, 5.0, 0.001, 600.0),
    _number("read_timeout", float, 30.0, 0.001, 3600.0),
    _number("concurrency", int, 8, 1, 64),
    _number("max_attempts", int, 5, 1, 100),
    _number("backoff_initial", float, 0.5, 0.0, 3600.0),
    _number("backoff_max", float, 10.0, 0.0, 3600.0),
    _number("retry_after_max", float, 30.0, 0.0, 3600.0),
    _number("token_margin", float, 60.0, 0.0, 86400.0),
    _number("call_deadline", float, 120.0, 0.001, 86400.0),
    _number("max_answer_bytes", int, 32 * 1024 * 1024, 1, 1024**3),  # 8 in flight: < 400 MB
    _number("pull_deadline", float, 3600.0, 0.001, 7 * 86400.0),
    _number("peek_count", int, 100, 1, 100_000),
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


def role_setting(key: str, section: str) -> Setting:
    """The role setting ``key`` as it is written in ``section``."""
    return replace(next(s for s in ROLE_SETTINGS if s.key == key), section=section)


def smtp_setting(key: str) -> Setting:
    return next(s for s in SMTP_SETTINGS if s.key == key)
