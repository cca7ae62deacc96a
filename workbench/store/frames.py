"""Query results as DataFrames typed by column name: ids ``string``, counts ``Int64``, times
UTC (text when one does not parse), flags ``boolean``."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from workbench.store.schema import INTEGER_FIELDS

INTEGERS = INTEGER_FIELDS | {
    "id", "run_id", "call_id", "snapshot_id", "previous_id", "outbox_id", "detail_call_id",
    "entry_id", "pid", "snapshot_a", "snapshot_b", "attempt", "status", "item_count", "appeared",
    "vanished", "changed", "position", "transcript_awards", "transcript_courses",
    "schema_version", "current_version", "version_count",
}  # fmt: skip
FLAGS = frozenset(
    {
        "on_list", "forced", "inferred", "has_detail", "totals_match", "release_authorized",
        "time_is_first_seen",
    }
)  # fmt: skip
_TIME = re.compile(r"(^|_)at$|^request_date$")
_TEXT_ID = re.compile(r"(^|_)(id|key)$")
_CAMEL_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")


def typed(df: pd.DataFrame, **attrs: Any) -> pd.DataFrame:
    out = pd.DataFrame({c: _convert(str(c), df[c]) for c in df.columns}, index=df.index)
    out.attrs.update(df.attrs)
    out.attrs.update(fetched_at=pd.Timestamp.now(tz="UTC"), **attrs)
    return out


def _convert(name: str, series: pd.Series) -> pd.Series:
    if name in INTEGERS or name in FLAGS:
        try:
            series = series.astype("Int64")
        except (TypeError, ValueError):
            return series
        return series.astype("boolean") if name in FLAGS else series
    if _TIME.search(name):
        return utc(series)
    if _TEXT_ID.search(name):
        return series.map(lambda v: None if is_missing(v) else str(v)).astype("string")
    return series


def utc(series: pd.Series) -> pd.Series:
    """ISO text to tz-aware UTC; a column with values that do not parse stays text."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        return series.dt.tz_convert("UTC")
    if series.isna().all():
        return pd.Series(pd.NaT, index=series.index, dtype="datetime64[us, UTC]")
    try:
        return pd.to_datetime(series, utc=True, format="ISO8601").astype("datetime64[us, UTC]")
    except (ValueError, TypeError, OverflowError):
        return series.astype("string")


def flattened(records: Sequence[Any]) -> pd.DataFrame:
    """JSON items as rows, their fields flattened in snake_case."""
    rows = [r if isinstance(r, dict) else {"value": r} for r in records]
    flat = (pd.json_normalize(rows, sep="_") if rows else pd.DataFrame()).rename(columns=snake)
    return flat.loc[:, ~flat.columns.duplicated()]


@functools.lru_cache(maxsize=4096)
def snake(name: str) -> str:
    """snake_case: ``customerCode`` -> ``customer_code``, ``payload.placementId`` ->
    ``payload_placement_id``, ``RequestID`` -> ``request_id``."""
    name = _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", str(name)))
    return _NON_WORD.sub("_", name).strip("_").lower() or "field"


def is_missing(value: Any) -> bool:
    """None, ``pd.NA``, ``NaT`` and NaN are missing; lists and dicts (JSON items) never are.

    >>> is_missing(float("nan")), is_missing([None]), is_missing("")
    (True, False, False)
    """
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return pd.api.types.is_scalar(value) and bool(pd.isna(value))
