"""The dates a partner can plausibly send: one window, for the reconciliation and the reports.

A partner's date (a ``RequestDate``, an event's time) outside ``EARLIEST`` .. ``now + AHEAD``
is a data problem, not a date: the store keeps it as sent; the reconciliation and the reports
take it as missing (the item is dated when we first saw it), list it with its item, and leave
it out of every chart. ``EARLIEST``, 1990-01-01: this exchange is PESC XML over a JSON API, and
XML dates from 1998, while year 1, 1900 or 1970 (a default or an epoch written as a date) are
caught. ``AHEAD``, one day: a partner clock a little ahead of ours, or a local time written as
UTC (at most 14 hours off), stays within it; 9999-12-31 (a "never") does not.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.store.schema import PLAUSIBLE_AHEAD_DAYS, PLAUSIBLE_FROM

# The store's views measure ages by the same window.
EARLIEST = pd.Timestamp(PLAUSIBLE_FROM, tz="UTC")
AHEAD = pd.Timedelta(days=PLAUSIBLE_AHEAD_DAYS)
WINDOW = "from 1990-01-01 to a day past the as-of time"  # for messages without the moment


def window(now: Any) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The first and last plausible moments of data reconciled or reported at ``now`` (naive:
    UTC)."""
    moment = pd.Timestamp(now)
    moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment.tz_convert("UTC")
    return EARLIEST, moment + AHEAD


def outside(times: pd.Series, now: Any) -> pd.Series:
    """Which of ``times`` (tz-aware) are present and outside the window, as plain bools."""
    first, last = window(now)
    return ((times < first) | (times > last)).fillna(False).astype(bool)
