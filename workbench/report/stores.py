"""What a report reads and how it shows it: the store (never an empty one by accident), and
the zone its times show in (checked before a job starts its kernel)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.config import check_timezone, load_profile
from workbench.errors import StoreError

if TYPE_CHECKING:
    from workbench.store import Store


def open_store(db: str | os.PathLike[str] | None = None, *, profile: str | None = None) -> Store:
    """The store at ``db`` (default: the profile's), read-only; ``StoreError`` when there is
    none (a ``Store`` would create an empty one, whose report would say all is well)."""
    path = Path(db if db is not None else load_profile(profile).db)
    if not path.is_file():
        raise StoreError(
            f"No workbench database at {path.absolute()}; run `workbench pull` first (or pass "
            "db=...)."
        )
    from workbench.store import Store  # sqlite-utils loads pandas: not for a job's checks

    return Store(path, read_only=True)  # creates nothing next to it; works in any folder


def report_zone(
    tz: str | None = None, *, profile: str | None = None, config_path: str | None = None
) -> str:
    """``tz``, else the profile's ``timezone``, else UTC; ``ConfigError`` if unknown."""
    if tz is not None:
        return check_timezone(tz)
    return load_profile(profile, config_path=config_path).timezone
