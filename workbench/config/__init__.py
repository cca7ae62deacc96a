"""Profiles: every setting declared once (:mod:`.settings`), a profile resolved from the
environment and the profiles file (:mod:`.load`, :mod:`.files`) into a :mod:`.profile`.

>>> load_profile(env={}).name
'sandbox'
"""

from workbench.config.files import DEFAULT_CONFIG
from workbench.config.load import load_profile
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

SCHEMAS_VARIABLE = "WORKBENCH_PESC_SCHEMAS"  # the XSDs documents are validated against

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
