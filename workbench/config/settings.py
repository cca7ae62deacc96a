"""Every setting a profile takes, declared once, and ``docs/configuration.md`` rendered from it.

A setting's variable is ``WORKBENCH_`` + its section + its key, upper-cased
(``[profiles.prod.supplier] client_id`` is ``WORKBENCH_SUPPLIER_CLIENT_ID``); a secret is named
in the file by the variable that holds it (``client_secret_env = "PROD_SUPPLIER_SECRET"``).
``python -m workbench.config`` writes the docs; a test keeps them current.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
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
DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


@dataclass(frozen=True)
class Setting:
    """One setting: its key, what it takes (a type, or "url", "list", "table", "path"), its
    default and meaning; ``section`` None is ``[profiles.NAME]`` itself."""

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
    _number("max_answer_bytes", int, 32 * 1024 * 1024, 1, 1024**3,
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
# Read from the environment only, never from a profile.
GLOBAL_VARIABLES: dict[str, str] = {
    "WORKBENCH_PROFILE": 'The profile to use ("sandbox": the embedded sandbox). Default: the '
    "profiles file's default_profile, else env when partner URLs are set, else sandbox.",
    "WORKBENCH_CONFIG": "The profiles file. Default: the first workbench.toml found in the "
    "working folder, WORKBENCH_HOME, then the user's config folder.",
    "WORKBENCH_HOME": "The folder relative paths are taken from, and searched for "
    "workbench.toml (make lab sets it to the project).",
    "WORKBENCH_PESC_SCHEMAS": "A folder of PESC XSDs that documents are validated against.",
    "WORKBENCH_PESC_MAX_BYTES": "The size cap of one PESC document (default 10 MiB).",
}
SETTINGS = {s.key: s for s in PROFILE_SETTINGS}
TUNING = {s.key: s for s in PROFILE_SETTINGS if s.limits is not None}
TUNING_LIMITS: dict[str, tuple[float, float]] = {k: s.limits for k, s in TUNING.items()}  # type: ignore[misc]


def role_setting(key: str, section: str) -> Setting:
    """The role setting ``key`` as it is written in ``section``."""
    return replace(next(s for s in ROLE_SETTINGS if s.key == key), section=section)


def smtp_setting(key: str) -> Setting:
    return next(s for s in SMTP_SETTINGS if s.key == key)


EXAMPLES = {
    "The transcript exchange, logging in as OCAS' eTMS does (one account for both roles)": """\
default_profile = "etms"

[profiles.etms]
exchange_url = "https://etms.example.test"
login = "etms"
environment = "test"
send_routes = "singular"
interfaces = ["supplier", "consumer"]

[profiles.etms.exchange]
username = 'Partner\\uat.college.user'
password_env = "ETMS_PASSWORD"
""",
    "The transcript exchange through an identity server (one client per role)": """\
default_profile = "exchange"

[profiles.exchange]
auth_url = "https://identity.example.test"
exchange_url = "https://exchange.example.test"
environment = "production"

[profiles.exchange.supplier]
client_id = "college-supplier"
client_secret_env = "SUPPLIER_SECRET"

[profiles.exchange.consumer]
client_id = "college-consumer"
client_secret_env = "CONSUMER_SECRET"
""",
    "The international placement interface (password grant)": """\
default_profile = "intl"

[profiles.intl]
auth_url = "https://identity.example.test"
gateway_url = "https://gateway.example.test"
subscription_key_env = "GATEWAY_KEY"

[profiles.intl.intl]
client_id = "sis-client"
client_secret_env = "INTL_SECRET"
username = "analyst@college.example"
password_env = "INTL_PASSWORD"
""",
    "The domestic on-demand interface (client credentials), events shaped its own way": """\
default_profile = "domestic"

[profiles.domestic]
auth_url = "https://identity.example.test"
gateway_url = "https://gateway.example.test"
subscription_key_env = "GATEWAY_KEY"
peek_count = 50
timezone = "America/Toronto"

[profiles.domestic.event_fields]
type = "eventInfo.action"
time = "when"

[profiles.domestic.domestic]
client_id = "dod-client"
client_secret_env = "DOMESTIC_SECRET"
""",
}

_HEAD = """# Configuration

Generated from `workbench/config/settings.py` by `python -m workbench.config`; a test
keeps it current and loads every example below.

A profile's settings come from environment variables and from a TOML profiles file; a variable
wins over the file. The file is `WORKBENCH_CONFIG` (or `--config PATH`), else the first
`workbench.toml` found in the working folder, in `WORKBENCH_HOME`, then in your config folder
(`~/.config/workbench/` on Linux), so a command finds your profiles from any folder. Partner
settings in the environment that no profile uses are refused (exit 2), never silently replaced
by the embedded sandbox: `--profile sandbox` chooses the sandbox on purpose.

Secrets are never written in the file: the file names the variable that holds each one
(`client_secret_env = "PROD_SUPPLIER_SECRET"`), or the secret's own variable is set
(`WORKBENCH_SUPPLIER_CLIENT_SECRET`). Credentials are taken as the partner issued them, of any
length or form; those of interfaces a profile does not use are never read. Every error about a
setting names where it came from: the variable, or the file and its key.
"""


def _rows(settings: tuple[Setting, ...]) -> list[str]:
    lines = ["| key in the file | variable | default | meaning |", "|---|---|---|---|"]
    for s in settings:
        default = (
            ""
            if s.default is None
            else f"{s.default:g}"
            if isinstance(s.default, float)
            else s.default
        )
        default = (
            {True: "yes", False: "no"}.get(default, default)
            if isinstance(default, bool)
            else default
        )
        meaning = s.help + (f" One of: {', '.join(s.choices)}." if s.choices else "")
        if s.limits is not None and s.kind is int:
            meaning += f" From {int(s.limits[0]):,} to {int(s.limits[1]):,}."
        elif s.limits is not None and s.kind is float:
            meaning += f" From {s.limits[0]:g} to {s.limits[1]:g}."
        variable = s.variable.replace("WORKBENCH_*_", "WORKBENCH_<ROLE>_")
        lines.append(f"| `{s.file_key}` | `{variable}` | {default} | {meaning} |")
    return lines


def render() -> str:
    """The Markdown of ``docs/configuration.md``."""
    sections = ", ".join(f"`{s}` ({r})" for r, s in SECTION_OF.items())
    parts = [_HEAD, "## Choosing the profile and the file\n", "| variable | meaning |", "|---|---|",
             *(f"| `{name}` | {text} |" for name, text in GLOBAL_VARIABLES.items()),
             "", "## `[profiles.NAME]`\n", *_rows(PROFILE_SETTINGS), "",
             "## `[profiles.NAME.ROLE]`: credentials of one interface or role\n",
             f"ROLE is one of {sections}, or `{SHARED_EXCHANGE}` for an account both exchange "
             "roles share (a role's own section wins over it; `auth_url` there is the profile's "
             "`exchange_auth_url`). The variable is `WORKBENCH_<ROLE>_<KEY>`, "
             "`WORKBENCH_SUPPLIER_CLIENT_ID` say. A role with a `token` uses it as it is; with a "
             "`username` (or an etms login), the password grant; else client credentials. The "
             "international interface always uses the password grant.\n",
             *_rows(ROLE_SETTINGS), "",
             "## `[profiles.NAME.smtp]`: the mail server of `report --mail-to`\n",
             *_rows(SMTP_SETTINGS), "", "## Examples\n"]  # fmt: skip
    for title, text in EXAMPLES.items():
        parts += [f"### {title}\n", "```toml", text.rstrip(), "```", ""]
    return "\n".join(parts).rstrip() + "\n"
