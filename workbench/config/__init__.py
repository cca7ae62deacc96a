"""Profiles: every setting declared once (:mod:`.settings`), the profiles file found and read
safely (:mod:`.files`), a profile resolved from the file and the environment (:mod:`.profile`).

>>> from workbench.config import load_profile
>>> load_profile(env={}).name
'sandbox'
"""

from workbench.config.files import DEFAULT_CONFIG
from workbench.config.profile import (
    DEFAULT_DB,
    EMBEDDED_SANDBOX,
    ENV_ONLY,
    SANDBOX,
    Profile,
    RoleSettings,
    Secret,
    SmtpSettings,
    check_timezone,
    env_prefix,
    is_loopback,
    load_profile,
    normal_url,
    parse_bool,
    with_overrides,
)
from workbench.config.settings import (
    EXCHANGE_ROLES,
    GATEWAY_ROLES,
    ROLES,
    SMTP_TLS,
    TUNING_LIMITS,
)

# The folder of PESC XSDs documents are validated against (``workbench.pesc.validate``).
SCHEMAS_VARIABLE = "WORKBENCH_PESC_SCHEMAS"

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_DB",
    "EMBEDDED_SANDBOX",
    "ENV_ONLY",
    "EXCHANGE_ROLES",
    "GATEWAY_ROLES",
    "ROLES",
    "SANDBOX",
    "SCHEMAS_VARIABLE",
    "SMTP_TLS",
    "TUNING_LIMITS",
    "Profile",
    "RoleSettings",
    "Secret",
    "SmtpSettings",
    "check_timezone",
    "env_prefix",
    "is_loopback",
    "load_profile",
    "normal_url",
    "parse_bool",
    "with_overrides",
]
