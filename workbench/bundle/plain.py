"""Small conversions shared by the bundle modules: times, missing values, plain JSON."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import numpy as np
import pandas as pd

from workbench.store.frames import is_missing


def iso(moment: Any) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z`` (what HAR readers parse)."""
    if is_missing(moment):
        return ""
    when = pd.Timestamp(moment)
    when = when.tz_localize(UTC) if when.tzinfo is None else when.tz_convert(UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of plain Python values (None for missing), ready for JSON."""
    return [{k: plain(v) for k, v in record.items()} for record in frame.to_dict("records")]


def plain(value: Any) -> Any:
    if is_missing(value):
        return None
    return value.item() if isinstance(value, np.generic) else value
