"""``docs/configuration.md``: every setting of :mod:`workbench.config.settings`, rendered.

Regenerate with ``python -m workbench.config.reference``; ``tests/test_docs.py`` keeps the file
equal to what the code declares, and loads every example profile in it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from workbench.config.settings import (
    GLOBAL_VARIABLES,
    PROFILE_SETTINGS,
    ROLE_SETTINGS,
    SECTION_OF,
    SHARED_EXCHANGE,
    SMTP_SETTINGS,
    Setting,
)

DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"

_HEAD = """# Configuration

Generated from `workbench/config/settings.py` by `python -m workbench.config.reference`; a test
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


def _default(setting: Setting) -> str:
    if setting.default is None:
        return ""
    if isinstance(setting.default, bool):
        return "yes" if setting.default else "no"
    if isinstance(setting.default, float) and setting.default.is_integer():
        return f"{setting.default:g}"
    return str(setting.default)


def _rows(settings: tuple[Setting, ...]) -> list[str]:
    lines = ["| key in the file | variable | default | meaning |", "|---|---|---|---|"]
    for s in settings:
        variable = s.variable.replace("WORKBENCH_*_", "WORKBENCH_<ROLE>_")
        meaning = s.help + (f" One of: {', '.join(s.choices)}." if s.choices else "")
        if s.limits is not None and s.kind is int:
            meaning += f" From {int(s.limits[0]):,} to {int(s.limits[1]):,}."
        elif s.limits is not None and s.kind is float:
            meaning += f" From {s.limits[0]:g} to {s.limits[1]:g}."
        lines.append(f"| `{s.file_key}` | `{variable}` | {_default(s)} | {meaning} |")
    return lines


def render() -> str:
    """The Markdown of ``docs/configuration.md``."""
    parts = [_HEAD, "## Choosing the profile and the file\n"]
    parts += ["| variable | meaning |", "|---|---|"]
    parts += [f"| `{name}` | {text} |" for name, text in GLOBAL_VARIABLES.items()]
    parts += ["", "## `[profiles.NAME]`\n", *_rows(PROFILE_SETTINGS)]
    sections = ", ".join(f"`{s}` ({r})" for r, s in SECTION_OF.items())
    parts += [
        "",
        "## `[profiles.NAME.ROLE]`: credentials of one interface or role\n",
        f"ROLE is one of {sections}, or `{SHARED_EXCHANGE}` for an account both exchange roles "
        "share (a role's own section wins over it; `auth_url` there is the profile's "
        "`exchange_auth_url`). The variable is `WORKBENCH_<ROLE>_<KEY>`, "
        "`WORKBENCH_SUPPLIER_CLIENT_ID` say. A role with a `token` uses it as it is; with a "
        "`username` (or an etms login), the password grant; else client credentials. The "
        "international interface always uses the password grant.\n",
        *_rows(ROLE_SETTINGS),
    ]
    parts += ["", "## `[profiles.NAME.smtp]`: the mail server of `report --mail-to`\n"]
    parts += _rows(SMTP_SETTINGS)
    parts += ["", "## Examples\n"]
    for title, text in EXAMPLES.items():
        parts += [f"### {title}\n", "```toml", text.rstrip(), "```", ""]
    return "\n".join(parts).rstrip() + "\n"


def main() -> None:
    """Write ``docs/configuration.md``."""
    DOCS_PATH.write_text(render(), encoding="utf-8")
    print(DOCS_PATH, file=sys.stderr)


if __name__ == "__main__":
    main()
