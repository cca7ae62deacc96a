"""The zone a report shows times in: checked before a report job starts its kernel (no pandas).

>>> report_zone("America/Toronto")
'America/Toronto'
"""

from __future__ import annotations

from workbench.config import check_timezone, load_profile


def report_zone(
    tz: str | None = None, *, profile: str | None = None, config_path: str | None = None
) -> str:
    """The zone a report shows times in: ``tz`` when given, else the profile's ``timezone``
    (WORKBENCH_TIMEZONE), else UTC. An unknown zone is a ``ConfigError`` naming it.

    >>> report_zone("America/Toronto")
    'America/Toronto'
    """
    if tz is not None:
        return check_timezone(tz)
    return load_profile(profile, config_path=config_path).timezone
