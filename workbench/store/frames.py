"""Query results as DataFrames typed by column name: ids ``string``, counts ``Int64``, times
UTC (text when one does not parse), flags ``boolean``; list items and events flattened."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.http.events import EventFields, event_fields
from workbench.store.schema import INTEGER_FIELDS

EVENT_COLUMNS = ("event_id", "event_type", "occurred_at")  # always present, maybe empty

INTEGERS = INTEGER_FIELDS | {
    "id", "run_id", "call_id", "snapshot_id", "previous_id", "outbox_id", "detail_call_id",
    "entry_id", "pid", "snapshot_a", "snapshot_b", "attempt", "status", "item_count", "appeared",
    "vanished", "changed", "position", "transcript_awards", "transcript_courses",
    "schema_version", "current_version", "version_count",
}  # fmt: skip
FLAGS = frozenset({
    "on_list", "forced", "inferred", "has_detail", "totals_match", "release_authorized",
    "time_is_first_seen",
})  # fmt: skip
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
    return pd.api.types.is_scalar(value) and bool(pd.isna(value))


def events_flat(events: Sequence[Any], paths: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Events as rows: :data:`EVENT_COLUMNS`, then every other field flattened (snake_case)."""
    found = [event_fields(event, paths) for event in events]
    pairs = zip(events, found, strict=True)
    flat = flattened([_rest(e, f) if isinstance(e, dict) else e for e, f in pairs])
    flat = flat.drop(columns=[c for c in EVENT_COLUMNS if c in flat.columns])
    own = pd.DataFrame(
        {
            "event_id": pd.array([f.id for f in found], dtype="string"),
            "event_type": pd.array([f.type for f in found], dtype="string"),
            "occurred_at": pd.Series([f.time for f in found], dtype=object).astype(
                "datetime64[us, UTC]"
            ),
        }
    )
    return pd.concat([own, flat.reset_index(drop=True)], axis="columns")


def _rest(event: dict[str, Any], found: EventFields) -> dict[str, Any]:
    """``event`` without the fields its id, type and time were read from."""
    rest = dict(event)
    for what, keys in found.paths.items():
        if what == "payload":
            continue
        *outer, last = keys
        node = rest
        for key in outer:  # copied: the event itself is never changed
            node[key] = dict(node[key])
            node = node[key]
        del node[last]
    return rest
