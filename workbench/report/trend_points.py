"""Trends over the store's pulls: the reconciliation's figures as of each pull run.

The store keeps every pull, so the workbench can say how the backlog moved. Each point is one
pull run that finished ``ok`` or ``partial`` in the window (the last ``days`` days up to
``until``): the store reconciled as of that run's finish (``reconcile.load(as_of=...)``, with
the report's SLA and grace), so a point shows what was known then, never what was learnt
later. A reconciliation already made as of a run (``reuse``: the one the changes since the
previous run compare with) is not made again. When the window holds more than
``MAX_POINTS`` runs, the last run of each day (in zone ``tz``) stands for its day.

Per point (``TREND_COLUMNS``):

- ``open_requests`` and ``transcripts_awaiting_ack``, as the headline counts them;
- ``within_sla_share``: of the requests whose SLA is decided (``sla_decided``: answered, by
  a response or a transcript, or still open past the SLA), the share answered within
  ``sla_days`` of their ``RequestDate`` (missing when none is decided);
- ``median_response_days``: the median days from a request's date to our first answer
  (response or transcript, whichever came first);
- ``median_ack_days``: the median days from a received transcript's date to our
  acknowledgment of it (transcripts whose current version we acknowledged);
- ``median_partner_ack_days``: the median days from a transcript we sent to the partner's
  acknowledgment of it;
- ``exceptions``, and per kind in ``Trends.by_kind``.

Durations below 0 (a partner clock ahead of ours) count as 0.

>>> before = previous_reconciliation(store, rec)  # doctest: +SKIP
>>> t = trends(store, days=14, until=rec.now, sla_days=5, reuse=[before])  # doctest: +SKIP
>>> t.points[["at", "open_requests", "within_sla_share"]]  # doctest: +SKIP
>>> display(trends_section(t))  # doctest: +SKIP

Its chart is :mod:`workbench.report.trend_charts`'s: this module loads no matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.errors import InvalidParameter
from workbench.reconcile import EXCEPTION_KINDS, Reconciliation
from workbench.reconcile.inputs import days_text, timestamp
from workbench.report.markup import local_time, moment, page, paragraph, table, text
from workbench.report.run_changes import as_of_run, pull_runs
from workbench.store import Store

MAX_POINTS = 30  # more runs than this in the window: one point per day (each costs a reconcile)
TREND_COLUMNS = {
    "run_id": "Int64",
    "at": "datetime64[us, UTC]",
    "status": "string",
    "open_requests": "Int64",
    "transcripts_awaiting_ack": "Int64",
    "answered": "Int64",
    "answered_within_sla": "Int64",
    "sla_decided": "Int64",
    "within_sla_share": "Float64",
    "median_response_days": "Float64",
    "median_ack_days": "Float64",
    "median_partner_ack_days": "Float64",
    "exceptions": "Int64",
}
TREND_TABLE = {
    "at": "pull finished",
    "status": "pull",
    "open_requests": "open requests",
    "transcripts_awaiting_ack": "awaiting our ack",
    "within_sla": "answered within SLA",
    "median_response_days": "median days to respond",
    "median_ack_days": "median days to acknowledge",
    "median_partner_ack_days": "median days to the partner's ack",
    "exceptions": "exceptions",
}


@dataclass(frozen=True)
class Trends:
    """What :func:`trends` measured: ``points`` (one row per pull run, ``TREND_COLUMNS``),
    ``by_kind`` (the same rows' exceptions per kind, one column per ``EXCEPTION_KINDS``),
    the window (``days`` up to ``until``), the SLA, and ``runs_in_window`` (more than the
    points when runs were thinned to one a day)."""

    points: pd.DataFrame
    by_kind: pd.DataFrame
    days: float
    until: pd.Timestamp
    sla_days: float
    runs_in_window: int


def trends(
    store: Store,
    *,
    days: float = 14,
    until: Any = None,
    sla_days: float = 5.0,
    grace_hours: float = 0.0,
    tz: str | None = None,
    max_points: int = MAX_POINTS,
    reuse: Iterable[Reconciliation | None] = (),
) -> Trends:
    """The reconciliation's figures as of each pull run of the last ``days`` days up to
    ``until`` (default: now); beyond ``max_points`` runs, the last of each day in zone ``tz``.
    ``reuse``: reconciliations already made; one exactly as of a run (its finish, this
    database, ``sla_days`` and ``grace_hours``) is its point. See the module docstring for
    what each figure counts."""
    if (
        isinstance(days, bool)
        or not isinstance(days, int | float)
        or not (math.isfinite(days) and days > 0)
    ):
        raise InvalidParameter(
            f"{days!r} is not a number of days: use a finite number above 0", parameter="trend_days"
        )
    end = timestamp(until) if until is not None else pd.Timestamp.now(tz="UTC")
    runs = pull_runs(store, until=end)
    runs = runs[runs["finished_at"] > end - pd.Timedelta(days=days)]
    chosen = _thinned(runs, tz, max_points)
    rows, kinds, known = [], [], list(reuse)
    for run in chosen.itertuples(index=False):
        rec = as_of_run(store, run.finished_at, sla_days=sla_days, grace_hours=grace_hours,
                        reuse=known)  # fmt: skip
        rows.append({"run_id": run.id, "at": run.finished_at, "status": run.status,
                     **point(rec)})  # fmt: skip
        kinds.append(rec.exceptions["kind"].astype(str).value_counts())
    points = pd.DataFrame(rows, columns=list(TREND_COLUMNS)).astype(TREND_COLUMNS)
    by_kind = pd.DataFrame(kinds, columns=list(EXCEPTION_KINDS)).fillna(0).astype("Int64")
    by_kind.index = pd.Index(points["run_id"], name="run_id")
    points.attrs.update(operation="report.trends", days=days, until=end, sla_days=sla_days,
                        grace_hours=grace_hours)  # fmt: skip
    return Trends(points, by_kind, float(days), end, float(sla_days), len(runs))


def point(rec: Reconciliation) -> dict[str, Any]:
    """One trend point's figures from a reconciliation (``TREND_COLUMNS`` but the run's)."""
    r, t = rec.requests, rec.transcripts
    answered_at = pd.concat([r["responded_at"], r["transcript_sent_at"]], axis=1).min(axis=1)
    to_answer = _days(r["request_date"], answered_at)
    answered = to_answer.notna()
    within = int((to_answer <= rec.sla_days).fillna(False).sum())
    late_open = int(((r["state"] == "awaiting_response") & r["sla_breached"]).fillna(False).sum())
    decided = int(answered.sum()) + late_open
    acknowledged = t[t["state"] == "acknowledged"]
    h = rec.headline
    return {
        "open_requests": h["open_requests"],
        "transcripts_awaiting_ack": h["transcripts_awaiting_ack"],
        "answered": int(answered.sum()),
        "answered_within_sla": within,
        "sla_decided": decided,
        "within_sla_share": within / decided if decided else pd.NA,
        "median_response_days": _median(to_answer),
        "median_ack_days": _median(
            _days(acknowledged["request_date"], acknowledged["acknowledged_at"])
        ),
        "median_partner_ack_days": _median(_days(r["transcript_sent_at"], r["acknowledged_at"])),
        "exceptions": len(rec.exceptions),
    }


def _days(start: pd.Series, end: pd.Series) -> pd.Series:
    """Days from ``start`` to ``end`` (floats, 0 at least; missing where either is)."""
    delta = (pd.to_datetime(end, utc=True) - pd.to_datetime(start, utc=True)) / pd.Timedelta(days=1)
    return delta.astype("Float64").clip(lower=0)


def _median(days: pd.Series) -> Any:
    found = days.dropna()
    return float(found.median()) if len(found) else pd.NA


def _thinned(runs: pd.DataFrame, tz: str | None, max_points: int) -> pd.DataFrame:
    """``runs`` as they are, or the last of each day (in zone ``tz``) beyond ``max_points``."""
    if len(runs) <= max_points:
        return runs
    day = runs["finished_at"].dt.tz_convert(tz or "UTC").dt.date
    return runs.assign(day=day).drop_duplicates("day", keep="last").drop(columns="day")


def trends_table(t: Trends) -> pd.DataFrame:
    """``t.points`` as the section shows them, newest first; ``within_sla`` as text
    (``"8 of 10 (80%)"``), the medians as days with one decimal (``"9.0"``), as ages show."""
    p = t.points
    shown = [
        f"{w} of {n} ({w / n:.0%})" if n else "none decided yet"
        for w, n in zip(p["answered_within_sla"], p["sla_decided"], strict=True)
    ]
    out = p.assign(within_sla=pd.Series(shown, index=p.index, dtype="string"))
    for column in ("median_response_days", "median_ack_days", "median_partner_ack_days"):
        out[column] = days_text(out[column])
    return out.iloc[::-1].reset_index(drop=True)


def trends_section(t: Trends, *, tz: str | None = None) -> HTML:
    """The trends chart and a table of its points, newest first; the block carries
    ``data-trend-points`` (how many), ``data-trend-days`` and ``data-trend-since``."""
    from workbench.report.sections import figure_html  # matplotlib: only to draw
    from workbench.report.trend_charts import trends_chart

    n = len(t.points)
    window = f"the last {t.days:g} days up to {moment(t.until, tz)}"
    if not n:
        body = paragraph(f"No pull run finished in {window}: no trend yet.", "wb-empty")
    else:
        thinned = (f" ({t.runs_in_window} runs: the last of each day)"
                   if t.runs_in_window > n else "")  # fmt: skip
        runs = f"{n} pull run{'s' if n > 1 else ''}"
        said = (f"{runs} in {window}{thinned}, each reconciled as the store stood when it "
                f"finished; SLA {t.sla_days:g} days. Answered within the SLA: of the requests "
                "answered or open past the SLA.")  # fmt: skip
        body = (
            paragraph(said)
            + figure_html(trends_chart(t, tz=tz)).data
            + table(trends_table(t), TREND_TABLE, tz=tz)
        )
    start = local_time(t.until - pd.Timedelta(days=t.days), tz).isoformat()
    return page(
        f'<div class="wb-trends" data-trend-points="{n}" data-trend-days="{text(t.days)}" '
        f'data-trend-since="{text(start)}">{body}</div>'
    )
