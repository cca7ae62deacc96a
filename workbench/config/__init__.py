"""Profiles: every setting declared once (:mod:`.settings`), a profile resolved from the
environment and the profiles file (:mod:`.load`, :mod:`.files`) into a :mod:`.profile`."""

from workbench.config.files import profile_names
from workbench.config.load import load_profile
from workbench.config.profile import (
    EMBEDDED_SANDBOX,
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
from workbench.config.settings import GATEWAY_ROLES, ROLES

SCHEMAS_VARIABLE = "WORKBENCH_PESC_SCHEMAS"  # the XSDs documents are validated against

__all__ = ["EMBEDDED_SANDBOX", "GATEWAY_ROLES", "ROLES", "SANDBOX", "SCHEMAS_VARIABLE",
           "Profile", "RoleSettings", "Secret", "SmtpSettings", "check_timezone", "env_prefix",
           "is_loopback", "load_profile", "normal_url", "parse_bool", "profile_names",
           "with_overrides"]  # fmt: skip
