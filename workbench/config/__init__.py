"""Profiles: every setting declared once (:mod:`.settings`), a :class:`Profile` resolved from
the environment and the profiles file (:mod:`.load`, :mod:`.files`)."""

from workbench.config.load import load_profile
from workbench.config.settings import (
    EMBEDDED_SANDBOX,
    GATEWAY_ROLES,
    ROLES,
    SANDBOX,
    Profile,
    RoleSettings,
    Secret,
    SmtpSettings,
    check_timezone,
    env_prefix,
    normal_url,
    parse_bool,
    with_overrides,
)

SCHEMAS_VARIABLE = "WORKBENCH_PESC_SCHEMAS"  # the XSDs documents are validated against

__all__ = ["EMBEDDED_SANDBOX", "GATEWAY_ROLES", "ROLES", "SANDBOX", "SCHEMAS_VARIABLE",
           "Profile", "RoleSettings", "Secret", "SmtpSettings", "check_timezone", "env_prefix",
           "load_profile", "normal_url", "parse_bool", "with_overrides"]  # fmt: skip
