"""Daily volumes: what the partner listed and what we sent, per day."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from workbench.reconcile.inputs import conform, timestamp
from workbench.reconcile.load import load
from workbench.reconcile.plausible import outside
from workbench.store import Store

# column -> (input table, time column, outbox operation or None). Requests and transcripts
# count on the partner's date (``request_date``; when it is missing or implausible, the day we
# first saw them): a first pull of a ten-day backlog is ten days of volume, not one.
VOLUME_COLUMNS: dict[str, tuple[str, str, str | None]] = {
    "requests_listed": ("requests", "request_date", None),
    "transcripts_received": ("transcripts", "request_date", None),
    "responses_sent": ("outbox", "created_at", "send_response"),
    "transcripts_sent": ("outbox", "created_at", "send_transcript"),
    "acknowledgments_sent": ("outbox", "created_at", "send_acknowledgment"),
}


def daily_volumes(
    source: Store | Mapping[str, pd.DataFrame], *, until: Any = None, tz: str | None = None
) -> pd.DataFrame:
    """Per day in zone ``tz`` (None: UTC): requests and transcripts by the partner's date,
    and the responses, transcripts and acknowledgments we sent (outbox entries that did not
    fail), up to ``until`` (default: the ``as_of`` that ``reconcile.load`` stamped, if any).

    ``source``: a store, or the tables ``reconcile.load`` returns. One row per day (``day``:
    its midnight in ``tz``) from the first to the last day with anything, zeros included; no
    rows when there is nothing. ``attrs["after_until"]``: how many were dated after ``until``
    (a partner clock ahead of ours) and left out; ``attrs["implausible"]``: how many partner
    dates were outside the plausible ones (``reconcile.plausible``), counted on the day first
    seen instead.

    >>> daily_volumes(store, tz="America/Toronto").tail(3)  # doctest: +SKIP
    """
    tables: Any = load(source) if isinstance(source, Store) else source
    if until is None:
        until = next((f.attrs.get("as_of") for f in tables.values()
                      if f.attrs.get("as_of") is not None), None)  # fmt: skip
    zone = tz or "UTC"
    tables = conform(tables)
    counts = {}
    after = implausible = 0
    for column, (name, time_column, operation) in VOLUME_COLUMNS.items():
        frame = tables[name]
        if operation is not None:
            frame = frame[(frame["operation"] == operation) & (frame["state"] != "failed")]
        when = frame[time_column]
        if "first_seen_at" in frame.columns:  # a partner's date: ours when it is not usable
            bad = outside(when, pd.Timestamp.now(tz="UTC") if until is None else until)
            implausible += int(bad.sum())
            when = when.where(~bad).fillna(frame["first_seen_at"])
        when = when.dropna()
        if until is not None:
            late = when > timestamp(until)
            after += int(late.sum())
            when = when[~late]
        days = when.dt.tz_convert(zone).dt.tz_localize(None).dt.normalize()
        counts[column] = days.value_counts()
    found = [c.index for c in counts.values() if len(c)]
    if not found:
        out = pd.DataFrame({"day": pd.Series(dtype=f"datetime64[us, {zone}]")})
        for column in VOLUME_COLUMNS:
            out[column] = pd.Series(dtype="int64")
        out.attrs.update(after_until=after, implausible=implausible)
        return out
    first = min(i.min() for i in found)
    last = max(i.max() for i in found)
    days = pd.date_range(first, last, freq="D")
    out = pd.DataFrame({"day": days.tz_localize(zone, ambiguous=False,
                                                nonexistent="shift_forward")})  # fmt: skip
    for column, values in counts.items():
        out[column] = values.reindex(days, fill_value=0).to_numpy(dtype="int64")
    out.attrs.update(after_until=after, implausible=implausible)
    return out
