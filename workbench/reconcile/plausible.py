"""The dates a partner can plausibly send: one window, for the reconciliation and the reports.

A partner's date (a ``RequestDate``, an event's time) outside ``EARLIEST`` .. ``now + AHEAD``
is a data problem, not a date: the store keeps it as sent; the reconciliation and the reports
treat it as missing (the item is dated when we first saw it, as one without a date is), list
it with its item, field and value, and leave it out of every chart.

Why these bounds:

- ``EARLIEST``, 1990-01-01: this exchange is PESC XML over a JSON API, and XML itself dates
  from 1998; no request, transcript or event of it can be older. The margin keeps any genuine
  early date, while year 1 (a default ``DateTime``), 1900 or 1970 (an epoch written as a date)
  are caught.
- ``AHEAD``, one day past the moment reconciled or reported: a partner clock a little ahead of
  ours, or a local time written as UTC (at most 14 hours off), stays within it and counts as
  dated after the as-of time; a date days or years ahead (9999-12-31, a "never") does not.

>>> times = pd.Series(pd.to_datetime(["0001-01-01", "2026-03-01", "9999-12-31"], utc=True))
>>> outside(times, pd.Timestamp("2026-03-02", tz="UTC")).tolist()
[True, False, True]
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.store.schema import PLAUSIBLE_AHEAD_DAYS, PLAUSIBLE_FROM

# The store's views measure ages by the same window.
EARLIEST = pd.Timestamp(PLAUSIBLE_FROM, tz="UTC")
AHEAD = pd.Timedelta(days=PLAUSIBLE_AHEAD_DAYS)
# The window in words, for messages written without the moment at hand.
WINDOW = "from 1990-01-01 to a day past the as-of time"


def window(now: Any) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The first and last plausible moments of data reconciled or reported at ``now`` (a
    time; naive taken as UTC)."""
    moment = pd.Timestamp(now)
    moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")
    return EARLIEST, moment + AHEAD


def outside(times: pd.Series, now: Any) -> pd.Series:
    """Which of ``times`` (tz-aware) are present and outside the window, as plain bools."""
    first, last = window(now)
    return ((times < first) | (times > last)).fillna(False).astype(bool)


def screened(frame: pd.DataFrame, column: str, now: Any) -> pd.DataFrame:
    """``frame`` with ``column`` (tz-aware times) missing where outside the window, and what
    was there in ``implausible_<column>`` (missing elsewhere)."""
    bad = outside(frame[column], now)
    return frame.assign(
        **{column: frame[column].where(~bad), f"implausible_{column}": frame[column].where(bad)}
    )
