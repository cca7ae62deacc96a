"""DataFrames the way DESIGN §5 promises them.

snake_case columns; ids as pandas ``string``; times as tz-aware UTC; an empty result with the
same columns as a full one; ``df.attrs`` with ``operation``, ``fetched_at`` and ``call_id``.

>>> frame([{"RequestID": "A1", "RequestDate": "2026-03-02T09:00:00.000Z"}],
...       columns=["request_id", "request_date"], operation="supplier.pending_requests").dtypes
request_id                   string
request_date    datetime64[ms, UTC]
dtype: object
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.partner_json import list_items
from workbench.store.frames import is_missing, snake

logger = logging.getLogger(__name__)

# Points in time. Calendar dates (``student_birth_date``) stay text: they have no time zone.
_TIME_NAME = re.compile(r"(^|_)(at|time|timestamp|datetime)$|^request_date$")
_ID_NAME = re.compile(r"(^|_)id$")
RAW = "raw"


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
    """Apply the id/time dtypes by column name and stamp ``df.attrs``."""
    for column in df.columns:
        name = str(column)
        if _ID_NAME.search(name):
            df[column] = _as_string(df[column])
        elif _TIME_NAME.search(name):
            df[column] = _as_utc(df[column], name)
    df.attrs.update(
        operation=operation,
        fetched_at=pd.Timestamp.now(tz="UTC"),
        call_id=call_id,
    )
    return df


def events_frame(
    payload: Any, *, operation: str, columns: Sequence[str], call_id: Any = None
) -> pd.DataFrame:
    """Events of any shape, flattened with ``pandas.json_normalize``; ``raw`` keeps each as JSON.

    Accepts an array, or an object holding one array (DESIGN §3); anything else is an
    ``UnreadableAnswer``. An event that is not an object becomes ``{"value": event}``.
    """
    items = list_items(payload, operation=operation)
    events = [e if isinstance(e, dict) else {"value": e} for e in items]
    flat = pd.json_normalize(events, sep="_") if events else pd.DataFrame()
    flat = flat.rename(columns=snake)
    flat = flat.loc[:, ~flat.columns.duplicated()]
    for column in columns:
        if column not in flat.columns:
            flat[column] = pd.NA
    ordered = [*columns, *(c for c in flat.columns if c not in columns)]
    flat = flat.reindex(columns=ordered)
    flat[RAW] = pd.array(
        [json.dumps(e, ensure_ascii=False, sort_keys=True) for e in events], dtype="string"
    )
    return finish(flat.reset_index(drop=True), operation=operation, call_id=call_id)


def _as_string(series: pd.Series) -> pd.Series:
    return series.map(lambda v: v if is_missing(v) or isinstance(v, str) else str(v)).astype(
        "string"
    )


def _as_utc(series: pd.Series, name: str) -> pd.Series:
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        return series.dt.tz_convert("UTC")
    values = series.dropna()
    if not all(isinstance(v, str) for v in values):
        return series
    try:
        return pd.to_datetime(series, utc=True, format="ISO8601")
    except (ValueError, TypeError):
        logger.warning("column %s holds values that are not ISO 8601 times; kept as text", name)
        return series.astype("string")
