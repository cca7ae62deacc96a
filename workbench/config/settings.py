"""Every setting a profile takes, declared once.

A setting's variable is ``WORKBENCH_`` + its section + its key (``[profiles.prod.supplier]
client_id`` is ``WORKBENCH_SUPPLIER_CLIENT_ID``); the file names the variable holding a secret
(``client_secret_env = "PROD_SUPPLIER_SECRET"``). ``scripts/configuration_docs.py`` documents them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from workbench.spec import DOMESTIC_SCOPE, ETMS_LOGIN_PATH, EXCHANGE_SCOPE, INTL_SCOPE, TOKEN_PATH

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
    """One setting: its key, kind (a type, or "url", "list", "table", "path"), default and help."""

    key: str
    kind: type | str
    default: Any
    help: str
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


def _number(key: str, kind: type, default: Any, low: float, high: float, text: str) -> Setting:
    return Setting(key, kind, default, text, limits=(low, high))


PROFILE_SETTINGS: tuple[Setting, ...] = (
    Setting("auth_url", "url", None, "The identity server's base address ({auth_url}); a role's "
            f"login is {{auth_url}}{TOKEN_PATH} unless its token_url says otherwise."),
    Setting("gateway_url", "url", None, "The API gateway's base address ({base_url}): the "
            "international and domestic interfaces."),
    Setting("exchange_url", "url", None, "The transcript exchange's base address."),
    Setting("exchange_auth_url", "url", None,
            "The identity server of the exchange roles, when it is not auth_url."),
    Setting("subscription_key", str, None, "The gateway's Subscription-Key.", secret=True),
    Setting("exchange_subscription_key", str, None,
            "A Subscription-Key for the exchange; sent only when set.", secret=True),
    Setting("login", str, "identity", "How the exchange roles log in: identity (a token from "
            "the identity server, OAuth form fields) or etms (OCAS' login: a form of Username, "
            f"Password and grant_type=password posted to {{exchange_url}}{ETMS_LOGIN_PATH}, no "
            "client id, one account for both roles).", choices=("identity", "etms")),
    _number("token_lifetime", float, 3600.0, 1.0, 7 * 86400.0, "Seconds a token is taken to "
            "live when its login answer gives neither expires_in nor .expires (a 401 logs in "
            "again in any case)."),
    Setting("send_routes", str, "plural", "How the partner spells the send routes: plural (the "
            "spec's /responses and /transcripts) or singular (/response and /transcript, as "
            "OCAS' own clients post). A send refused 404/405 on one spelling tries the other "
            "once and the store remembers the one that worked.", choices=("plural", "singular")),
    Setting("environment", str, None, "The partner's environment, test or production: every "
            "document sent must carry its DocumentProcessCode (TEST or PRODUCTION).",
            choices=("test", "production")),
    Setting("db", "path", "data/workbench.db", "The SQLite store. Relative to the profiles "
            "file's folder when set there, else to WORKBENCH_HOME or the working folder."),
    Setting("interfaces", "list", None, "The interfaces this profile uses (international, "
            "domestic, supplier, consumer; a variable takes them separated by commas). Default: "
            "those it has credentials for. Credentials of the others are never read."),
    Setting("timezone", str, "UTC", "The IANA zone reports show times in."),
    Setting("event_fields", "table", None, "Where the partner puts an event's id, type and "
            "time when no common name finds them: a table such as { type = \"eventInfo.action\""
            ", time = \"when\" } (a variable: \"type=eventInfo.action,time=when\")."),
    _number("read_only", bool, False, 0, 1, "Refuse every send."),
    _number("connect_timeout", float, 5.0, 0.001, 600.0, "Seconds to connect."),
    _number("read_timeout", float, 30.0, 0.001, 3600.0, "Seconds one read may wait."),
    _number("concurrency", int, 8, 1, 64, "Details fetched at once."),
    _number("max_attempts", int, 5, 1, 100,
            "Attempts of a read (retries of 429, 5xx, dropped connections)."),
    _number("backoff_initial", float, 0.5, 0.0, 3600.0, "First wait between attempts, s."),
    _number("backoff_max", float, 10.0, 0.0, 3600.0, "Longest wait between attempts, s."),
    _number("retry_after_max", float, 30.0, 0.0, 3600.0, "Longest Retry-After honoured, s."),
    _number("token_margin", float, 60.0, 0.0, 86400.0,
            "Renew a token this many seconds before it expires."),
    _number("call_deadline", float, 120.0, 0.001, 86400.0,
            "Seconds one call may take, retries included."),
    _number("max_answer_bytes", int, 32 * 1024 * 1024, 1, 1024**3,  # 8 in flight: < 400 MB
            "The most bytes one answer may hold once decompressed."),
    _number("pull_deadline", float, 3600.0, 0.001, 7 * 86400.0, "Seconds a whole pull may take."),
    _number("peek_count", int, 100, 1, 100_000,
            "The domestic peek's Count; a refused count is learned and kept in the store."),
)  # fmt: skip
ROLE_SETTINGS: tuple[Setting, ...] = tuple(replace(s, section="*") for s in (
    Setting("client_id", str, None, "The client id (required by the identity server's "
            "client-credentials grant and the international password grant)."),
    Setting("client_secret", str, None, "The client secret.", secret=True),
    Setting("username", str, None, "A password grant's user name (any characters, such as "
            "Partner\\uat.college.user)."),
    Setting("password", str, None, "A password grant's password.", secret=True),
    Setting("scope", str, None,
            "The scope asked for (default: the interface's, none for an etms login)."),
    Setting("token", str, None, "A bearer token issued by hand; it cannot be renewed.",
            secret=True),
    Setting("auth_url", "url", None, "This role's identity server, when not the profile's."),
    Setting("token_url", "url", None, "The full address of this role's login (default "
            f"{{auth_url}}{TOKEN_PATH}, or {{exchange_url}}{ETMS_LOGIN_PATH} for an etms login)."),
))  # fmt: skip
SMTP_SETTINGS: tuple[Setting, ...] = tuple(replace(s, section="smtp") for s in (
    Setting("host", str, None, "The mail server that sends a report (--mail-to)."),
    Setting("port", int, None, "Its port (default 587, 465 with ssl, 25 with none).",
            limits=(1, 65535)),
    Setting("tls", str, "starttls", "starttls, ssl or none (none only to a server on this "
            "machine when a login is sent).", choices=SMTP_TLS),
    Setting("username", str, None, "The mail server's login."),
    Setting("password", str, None, "Its password.", secret=True),
    Setting("from", str, None, "The From address."),
    Setting("timeout", float, 30.0, "Seconds to wait for the mail server.",
            limits=(0.001, 600.0)),
))  # fmt: skip
SETTINGS = {s.key: s for s in PROFILE_SETTINGS}
TUNING = {s.key: s for s in PROFILE_SETTINGS if s.limits is not None}


def role_setting(key: str, section: str) -> Setting:
    """The role setting ``key`` as it is written in ``section``."""
    return replace(next(s for s in ROLE_SETTINGS if s.key == key), section=section)


def smtp_setting(key: str) -> Setting:
    return next(s for s in SMTP_SETTINGS if s.key == key)
