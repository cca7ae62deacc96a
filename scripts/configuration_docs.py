"""Write docs/configuration.md from the settings' declarations (run it as a script).

``tests/client/test_profiles_file.py`` keeps the page current and loads every example.
"""

from __future__ import annotations

from pathlib import Path

from workbench.config.settings import (
    PROFILE_SETTINGS,
    ROLE_SETTINGS,
    SECTION_OF,
    SHARED_EXCHANGE,
    SMTP_SETTINGS,
    Setting,
)

DOCS_PATH = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"

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

Generated from `workbench/config/settings.py` by `python scripts/configuration_docs.py`; a
test keeps it current and loads every example below.

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


if __name__ == "__main__":
    DOCS_PATH.write_text(render(), encoding="utf-8")
    print(DOCS_PATH)
