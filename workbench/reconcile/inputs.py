"""The input tables reconciliation works on, and the small vectorised helpers it shares.

``load`` reads these from a store; tests and benchmarks may build them by hand. A frame may
leave out any column (it is added, all missing) or any table (an empty one is used), so a
hand-built case names only what it is about. :func:`conform` gives every table its columns
and dtypes: ids and text as pandas ``string``, times tz-aware UTC, counts ``Int64``, flags
``boolean``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from string import Formatter
from typing import Any

import numpy as np
import pandas as pd

TIME = "datetime64[us, UTC]"
TEXT = "string"
COUNT = "Int64"
FLAG = "boolean"

SUPPLIER_OPERATIONS = ("send_response", "send_transcript")
UNSETTLED = ("uncertain", "pending")  # outbox states that may or may not have reached the partner
IDENTITY = (
    "student_first_name",
    "student_last_name",
    "student_birth_date",
    "student_oen",
    "student_ocas_account",
    "student_ocas_application",
    "student_school_assigned_id",
)
_DOCUMENT = {
    "detail_error": TEXT,
    "parse_error": TEXT,
    "validation_status": TEXT,
    "validation_error": TEXT,
    "document_id": TEXT,
    "request_tracking_id": TEXT,
    "source_org_id": TEXT,
    "source_org_name": TEXT,
    "destination_org_id": TEXT,
    "destination_org_name": TEXT,
    **dict.fromkeys(IDENTITY, TEXT),
}
_LISTED = {
    "request_date": TIME,
    "on_list": FLAG,
    "first_seen_at": TIME,
    "left_at": TIME,
    "left_reason": TEXT,
}
# Which of an id's documents the row's fields are from (``versions``), and whether the current
# one is a Cancellation (the item is closed).
_VERSIONED = {
    "transmission_type": TEXT,
    "current_version": COUNT,
    "version_count": COUNT,
    "cancelled_at": TIME,
}

# table -> column -> dtype: what ``load`` returns and what the pure functions read.
TABLES: dict[str, dict[str, str]] = {
    # transcript requests of the supplier's no-response list (one row per RequestID)
    "requests": {"request_id": TEXT, **_LISTED, **_DOCUMENT, **_VERSIONED},
    # transcripts of the consumer's list (one row per RequestID)
    "transcripts": {
        "transcript_id": TEXT,
        **_LISTED,
        **_DOCUMENT,
        **_VERSIONED,
        "award_count": COUNT,
        "course_count": COUNT,
    },
    # every distinct document received for an id (the store's ``documents``), oldest first;
    # ``entity``: transcript_requests or transcripts_received, ``item_id``: the API RequestID
    "versions": {
        "entity": TEXT,
        "item_id": TEXT,
        "version": COUNT,
        "document_id": TEXT,
        "transmission_type": TEXT,
        "request_tracking_id": TEXT,
        "request_date": TIME,
        "first_seen_at": TIME,
    },
    # every POST of ours; ``sent_*``: fields of the document we sent (``outbox.payload_flat``)
    "outbox": {
        "outbox_id": COUNT,
        "operation": TEXT,
        "request_id": TEXT,
        "state": TEXT,
        "created_at": TIME,
        "updated_at": TIME,
        "resolved_at": TIME,
        "error": TEXT,
        "resolution": TEXT,
        "sent_document_id": TEXT,
        "sent_request_tracking_id": TEXT,
        "sent_response_status": TEXT,
        "sent_award_count": COUNT,
        "sent_course_count": COUNT,
        **{f"sent_{c}": TEXT for c in IDENTITY},
    },
    # TranscriptResponses we sent (filed from the outbox)
    "responses": {
        "outbox_id": COUNT,
        "request_id": TEXT,
        "sent_at": TIME,
        "inferred": FLAG,
        "response_status": TEXT,
        "hold_reason": TEXT,
        "planned_release_date": TEXT,
        "request_tracking_id": TEXT,
    },
    # acknowledgments received back for our transcripts, or sent by us for theirs
    "acknowledgments": {
        "outbox_id": COUNT,
        "direction": TEXT,
        "request_id": TEXT,
        "recorded_at": TIME,
        "inferred": FLAG,
        "document_id": TEXT,
        "request_tracking_id": TEXT,
        "academic_award_total": COUNT,
        "course_total": COUNT,
    },
}
AGE_BUCKETS = ("0-2", "3-5", "6-10", ">10")
_BUCKET_EDGES = np.array([2, 5, 10])  # whole days: 0-2 | 3-5 | 6-10 | >10


def empty_tables() -> dict[str, pd.DataFrame]:
    """Every input table, empty, with its columns and dtypes.

    >>> tables = empty_tables()
    >>> tables["requests"] = pd.DataFrame({"request_id": ["R1"], "on_list": [True]})
    """
    return {name: _empty(columns) for name, columns in TABLES.items()}


def _empty(columns: Mapping[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in columns.items()})


def conform(tables: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each input table with exactly its contract's columns and dtypes (extra columns dropped)."""
    return {name: _conform(tables.get(name), columns) for name, columns in TABLES.items()}


def _conform(frame: pd.DataFrame | None, columns: Mapping[str, str]) -> pd.DataFrame:
    if frame is None or frame.empty:
        return _empty(columns)
    frame = frame.reset_index(drop=True)
    n = len(frame)
    data = {
        c: as_dtype(frame[c], d)
        if c in frame.columns
        else pd.Series(pd.NA, index=range(n)).pipe(as_dtype, d)
        for c, d in columns.items()
    }
    return pd.DataFrame(data, copy=False)


def typed(frame: pd.DataFrame, columns: Mapping[str, str | None]) -> pd.DataFrame:
    """``frame``'s ``columns`` in that order, each in its dtype (None: as it is)."""
    return pd.DataFrame(
        {c: frame[c] if d is None else as_dtype(frame[c], d) for c, d in columns.items()},
        index=frame.index,
        copy=False,
    )


def as_dtype(series: pd.Series, dtype: str) -> pd.Series:
    """``series`` in one of the contract's dtypes; what does not convert becomes missing."""
    if dtype == TIME:
        return utc_times(series)
    if str(series.dtype) == dtype:
        return series
    if dtype == COUNT:
        if series.dtype == object or isinstance(series.dtype, pd.StringDtype):
            series = pd.to_numeric(series, errors="coerce")
        return series.astype(COUNT)
    if dtype == FLAG:
        return series.astype(FLAG)
    return series.astype(object).where(series.notna(), None).astype(TEXT)


def utc_times(series: pd.Series) -> pd.Series:
    """Times as tz-aware UTC (naive ones taken as UTC); text that does not parse is NaT."""
    if str(series.dtype) == TIME:
        return series
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        out = series.dt.tz_convert("UTC")
    elif pd.api.types.is_datetime64_dtype(series.dtype):
        out = series.dt.tz_localize("UTC")
    elif series.isna().all():
        return pd.Series(pd.NaT, index=series.index, dtype=TIME)
    else:
        present = series.notna()
        out = pd.Series(pd.NaT, index=series.index, dtype=TIME)
        out[present] = pd.to_datetime(series[present], utc=True, errors="coerce", format="ISO8601")
        return out
    return out.astype(TIME)


def timestamp(value: Any) -> pd.Timestamp:
    """A moment as a UTC ``Timestamp`` (naive taken as UTC)."""
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    ts = pd.Timestamp(value)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.as_unit("us")


def resolve_now(now: Any, tables: Mapping[str, pd.DataFrame]) -> pd.Timestamp:
    """``now`` as given; else the ``as_of`` that ``load`` stamped on the tables; else now."""
    if now is not None:
        return timestamp(now)
    for frame in tables.values():
        as_of = frame.attrs.get("as_of") if isinstance(frame, pd.DataFrame) else None
        if as_of is not None:
            return timestamp(as_of)
    return timestamp(pd.Timestamp.now(tz="UTC"))


def days_between(start: pd.Series, end: pd.Timestamp | pd.Series) -> pd.Series:
    """Days from ``start`` to ``end`` as floats rounded to 0.1 (missing where ``start`` is)."""
    delta = (end - start) / pd.Timedelta(days=1)
    return delta.astype("Float64").round(1)


def age_bucket(age_days: pd.Series) -> pd.Series:
    """Ageing bucket of whole days: ``0-2``, ``3-5``, ``6-10``, ``>10`` (missing age: missing)."""
    values = age_days.to_numpy(dtype="float64", na_value=np.nan)
    codes = np.searchsorted(_BUCKET_EDGES, np.floor(values), side="left")
    codes = np.where(np.isnan(values), -1, codes)
    labels = pd.Categorical.from_codes(codes, categories=list(AGE_BUCKETS), ordered=True)
    return pd.Series(labels, index=age_days.index)


def states(conditions: list[tuple[str, pd.Series]], default: str, order: tuple[str, ...]) -> Any:
    """An ordered categorical of the first condition that holds, in precedence order."""
    codes = np.select(
        [c.fillna(False).to_numpy(dtype=bool) for _, c in conditions],
        [order.index(name) for name, _ in conditions],
        default=order.index(default),
    )
    return pd.Categorical.from_codes(codes, categories=list(order), ordered=True)


def text(series: pd.Series, missing: str = "?") -> np.ndarray:
    """Values as display text (``missing`` where missing), an object array for messages.

    Times show as ``2026-03-02 09:00`` (UTC), floats with one decimal (``9``, ``9.5``).
    """
    absent = series.isna().to_numpy(dtype=bool)
    if not len(series):
        return np.empty(0, dtype=object)
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        minutes = series.dt.tz_localize(None).to_numpy(dtype="datetime64[m]")
        shown = np.char.replace(np.datetime_as_string(minutes), "T", " ").astype(object)
    elif pd.api.types.is_float_dtype(series.dtype):
        values = series.to_numpy(dtype="float64", na_value=np.nan).round(1)
        whole = np.isnan(values) | (values == np.floor(values))
        safe = np.where(np.isnan(values), 0, values)
        shown = np.where(whole, safe.astype("int64").astype(str), np.char.mod("%.1f", safe))
        shown = shown.astype(object)
    elif isinstance(series.dtype, pd.StringDtype):
        shown = series.to_numpy(dtype=object, na_value=missing)
    else:
        shown = series.to_numpy(dtype=object, na_value=missing).astype(str).astype(object)
    shown[absent] = missing
    return shown


def fill(template: str, frame: pd.DataFrame) -> np.ndarray:
    """``template.format`` over the rows of ``frame``, vectorised: ``{column}`` is replaced by
    each row's value as :func:`text` shows it (``?`` where missing).

    >>> fill("open {days} days", pd.DataFrame({"days": [9, None]})).tolist()
    ['open 9 days', 'open ? days']
    """
    out = np.full(len(frame), "", dtype=object)
    for literal, name, _spec, _conversion in Formatter().parse(template):
        if literal:
            out = out + literal
        if name:
            out = out + text(frame[name])
    return out


def whole_days(series: pd.Series) -> pd.Series:
    """Floats as whole days (floored) for messages: ``9.8`` -> ``9`` (missing stays missing)."""
    return np.floor(series.astype("Float64")).astype("Int64")


def normalised(series: pd.Series) -> pd.Series:
    """Identity text for comparing: case-folded, trimmed, inner whitespace collapsed."""
    return series.str.casefold().str.strip().str.replace(r"\s+", " ", regex=True)
