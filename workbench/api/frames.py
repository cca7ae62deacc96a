"""DataFrames the way DESIGN §5 promises them, typed by one declared schema.

snake_case columns; an empty result with the same columns as a full one; ``df.attrs`` with
``operation``, ``fetched_at`` and ``call_id``. Every column's dtype comes from :data:`SCHEMA`
(then, for columns no operation declares, from its name), never from the rows it happens to
hold: a batch where one id failed keeps its counts ``Int64`` and its flags ``boolean``.

- ids (``*_id``) and text: ``string``;
- points in time (``*_at``, ``request_date``, ``created_at``...): tz-aware UTC
  (``datetime64[us, UTC]``); a column whose values are not ISO 8601 stays text;
- calendar dates (``student_birth_date``, ``planned_release_date``): ``datetime64[s]`` with
  no time zone; a value that is not ``YYYY-MM-DD`` is ``NaT`` (the document keeps it);
- counts, totals and ``call_id``: ``Int64``; flags (``release_authorized``): ``boolean``.

>>> frame([{"RequestID": "A1", "RequestDate": "2026-03-02T09:00:00.000Z"}],
...       columns=["request_id", "request_date"], operation="supplier.pending_requests").dtypes
request_id                   string
request_date    datetime64[us, UTC]
dtype: object
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.http.answers import list_items
from workbench.pesc.fields import KEYS
from workbench.pesc.frames import TIME_DTYPE as PESC_TIME
from workbench.pesc.frames import dtype_of
from workbench.store.events import events_flat
from workbench.store.frames import is_missing, snake, utc

logger = logging.getLogger(__name__)

_TIME_NAME = re.compile(r"(^|_)(at|time|timestamp|datetime)$|^request_date$")
_ID_NAME = re.compile(r"(^|_)id$")
_DATE = re.compile(r"\s*(\d{4}-\d{2}-\d{2})(?:$|[TZ+\-\s])")
RAW = "raw"
CALL_ID = "call_id"
TIME = "datetime64[us, UTC]"
DATE = "datetime64[s]"  # a calendar date: no time of day, no time zone

# Every column an operation may return, and its dtype: the parsed PESC fields (typed as
# pesc.to_frames types them), then what the API adds.
SCHEMA: dict[str, str] = {
    **{key: dtype_of(key) for keys in KEYS.values() for key in keys},
    **{key: TIME for keys in KEYS.values() for key in keys if dtype_of(key) == PESC_TIME},
    "student_birth_date": DATE,
    "planned_release_date": DATE,
    "request_id": "string",
    "request_date": TIME,
    "pescxml": "string",
    "parse_error": "string",
    "error": "string",
    RAW: "string",
    CALL_ID: "Int64",
}


def dtype_for(column: str) -> str | None:
    """The declared dtype of a column (:data:`SCHEMA`, else by its name); None: as read."""
    declared = SCHEMA.get(column)
    if declared is not None:
        return declared
    if _ID_NAME.search(column):
        return "string"
    if _TIME_NAME.search(column):
        return TIME
    return None


def snake_keys(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record with snake_case keys; on a clash the first key keeps the name."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = snake(key)
        while name in out:
            name += "_"
        out[name] = value
    return out


def frame(
    records: Iterable[Mapping[str, Any]],
    *,
    columns: Sequence[str],
    operation: str,
    tail: Sequence[str] = (),
    call_id: Any = None,
) -> pd.DataFrame:
    """A DataFrame of snake-cased ``records``: ``columns``, any other fields, then ``tail``.

    ``columns`` and ``tail`` are always present, so an empty result has them too.
    """
    rows = [snake_keys(r) for r in records]
    fixed = {*columns, *tail}
    extra = list(dict.fromkeys(k for row in rows for k in row if k not in fixed))
    df = pd.DataFrame.from_records(rows, columns=[*columns, *extra, *tail])
    return finish(df, operation=operation, call_id=call_id)


def finish(df: pd.DataFrame, *, operation: str, call_id: Any = None) -> pd.DataFrame:
    """Give every column its declared dtype (:func:`dtype_for`) and stamp ``df.attrs``."""
    for column in df.columns:
        name = str(column)
        dtype = dtype_for(name)
        if dtype is not None:
            df[column] = _typed(df[column], dtype, name)
    df.attrs.update(
        operation=operation,
        fetched_at=pd.Timestamp.now(tz="UTC"),
        call_id=call_id,
    )
    return df


def events_frame(
    payload: Any,
    *,
    operation: str,
    call_id: Any = None,
    paths: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Events of any shape: :data:`EVENT_COLUMNS` first, found wherever each event keeps them
    (the profile's ``paths`` first), then every other field flattened
    (:func:`workbench.store.events.events_flat`); ``raw`` keeps each event's JSON as sent.

    Accepts an array, or an object holding one array (DESIGN §3); anything else is an
    ``UnreadableAnswer``.
    """
    items = list_items(payload, operation=operation)
    flat = events_flat(items, paths)
    flat[RAW] = pd.array(
        [json.dumps(e, ensure_ascii=False, sort_keys=True) for e in items], dtype="string"
    )
    return finish(flat, operation=operation, call_id=call_id)


def _typed(series: pd.Series, dtype: str, name: str) -> pd.Series:
    if dtype == "string":
        return series.map(lambda v: v if is_missing(v) or isinstance(v, str) else str(v)).astype(
            "string"
        )
    if dtype == TIME:
        typed = utc(series)
        if not isinstance(typed.dtype, pd.DatetimeTZDtype):
            logger.warning("column %s holds values that are not ISO 8601 times; kept as text", name)
        return typed
    if dtype == DATE:
        return _as_date(series, name)
    values = [None if is_missing(v) else v for v in series]
    try:
        return pd.Series(pd.array(values, dtype=dtype), index=series.index)
    except (TypeError, ValueError):
        logger.warning("column %s holds values that are not %s; kept as read", name, dtype)
        return series


def _as_date(series: pd.Series, name: str) -> pd.Series:
    """``YYYY-MM-DD`` (what may follow: a time, a zone) to a date; anything else ``NaT``."""
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return series.dt.tz_localize(None) if series.dt.tz else series
    texts = [None if is_missing(v) else _DATE.match(str(v)) for v in series]
    days = pd.to_datetime(
        pd.Series([m.group(1) if m else None for m in texts], index=series.index, dtype=object),
        format="%Y-%m-%d",
        errors="coerce",
    ).astype(DATE)
    unread = sum(
        1 for v, day in zip(series, days, strict=True) if not is_missing(v) and day is pd.NaT
    )
    if unread:  # never the values: they are students' personal data
        logger.warning(
            "column %s: %d value(s) are not dates (YYYY-MM-DD) and read as NaT; each document "
            "(pescxml) keeps what it wrote",
            name,
            unread,
        )
    return days
