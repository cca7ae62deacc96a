"""The store's history as the report tells it: what changed since the previous pull run, and
how the figures moved over the pull runs of the last days, each reconciled as of its finish."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.errors import InvalidParameter
from workbench.reconcile import EXCEPTION_KINDS, Reconciliation, load, reconcile
from workbench.reconcile.inputs import timestamp
from workbench.report.markup import MAX_ROWS, heading, moment, page, paragraph, table
from workbench.report.markup import text as escape
from workbench.store import Store
from workbench.store.lists import LIST_NAMES

CHANGE_KINDS = ("appeared", "vanished", "changed")
MAX_POINTS = 30  # more runs than this in the window: one point per day (each costs a reconcile)
TREND_COLUMNS = {
    "run_id": "Int64", "at": "datetime64[us, UTC]", "status": "string",
    "open_requests": "Int64", "transcripts_awaiting_ack": "Int64", "answered": "Int64",
    "answered_within_sla": "Int64", "sla_decided": "Int64", "within_sla_share": "Float64",
    "median_response_days": "Float64", "median_ack_days": "Float64",
    "median_partner_ack_days": "Float64", "exceptions": "Int64",
}  # fmt: skip


@dataclass(frozen=True)
class Changes:
    """The comparison :func:`changes` makes. With fewer than two runs only ``runs`` is filled;
    ``before``: the store reconciled as of the previous run (:func:`trends` takes it too)."""

    runs: pd.DataFrame
    before: Reconciliation | None = None
    lists: pd.DataFrame = field(default_factory=pd.DataFrame)
    items: pd.DataFrame = field(default_factory=pd.DataFrame)
    transitions: pd.DataFrame = field(default_factory=pd.DataFrame)
    new_exceptions: pd.DataFrame = field(default_factory=pd.DataFrame)
    resolved_exceptions: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass(frozen=True)
class Trends:
    """What :func:`trends` measured: a point per pull run, exceptions per kind, window, SLA."""

    points: pd.DataFrame
    by_kind: pd.DataFrame
    days: float
    until: pd.Timestamp
    sla_days: float
    runs_in_window: int


def pull_runs(store: Store, *, until: pd.Timestamp | None = None) -> pd.DataFrame:
    """Pull runs that finished ``ok`` or ``partial`` (by ``until``, if given), oldest first."""
    runs = store.table(
        "runs", where="kind = 'pull' AND status IN ('ok', 'partial') AND finished_at IS NOT NULL"
    )
    if until is not None:
        runs = runs[runs["finished_at"] <= until]
    runs = runs.sort_values(["finished_at", "id"], kind="stable")
    return runs[["id", "started_at", "finished_at", "status", "profile"]].reset_index(drop=True)


def changes(
    store: Store, *, current: Reconciliation | None = None, sla_days: float = 5.0
) -> Changes:
    """Compare the latest two pull runs by ``current.now`` with ``current`` (default: now)."""
    runs = pull_runs(store, until=None if current is None else current.now).tail(2)
    runs = runs.reset_index(drop=True)
    if len(runs) < 2:
        return Changes(runs=runs)
    items = store.diff(int(runs["id"].iloc[0]), int(runs["id"].iloc[1]))
    current = current or reconcile(load(store), sla_days=sla_days)
    before = reconcile(load(store, as_of=runs["finished_at"].iloc[0]), sla_days=current.sla_days,
                       grace_hours=current.grace_hours)  # fmt: skip
    counts = pd.crosstab(items["list"].astype(str), items["change"].astype(str))
    counts = counts.reindex(index=list(LIST_NAMES), columns=list(CHANGE_KINDS), fill_value=0)
    old, new = before.exceptions, current.exceptions
    return Changes(
        runs=runs,
        before=before,
        lists=counts.rename_axis(index="list", columns=None).reset_index(),
        items=items,
        transitions=transitions(before, current),
        new_exceptions=_missing_from(new, old),
        resolved_exceptions=_missing_from(old, new),
    )


def transitions(before: Reconciliation, after: Reconciliation) -> pd.DataFrame:
    """Requests and transcripts per move from one state to another, with examples."""
    parts = []
    for side, frames, column in (("supplier", "requests", "request_id"),
                                 ("consumer", "transcripts", "transcript_id")):  # fmt: skip
        old = getattr(before, frames).set_index(column)["state"].astype(str)
        new = getattr(after, frames).set_index(column)["state"].astype(str)
        pair = pd.DataFrame({"from_state": old, "to_state": new}).fillna(
            {"from_state": "(not seen yet)", "to_state": "(gone)"}
        )
        moved = pair[pair["from_state"] != pair["to_state"]].rename_axis("id").reset_index()
        if len(moved):
            grouped = moved.groupby(["from_state", "to_state"], sort=False)["id"]
            found = grouped.agg(count="size", examples=lambda ids: ", ".join(list(ids)[:3]))
            parts.append(found.reset_index().assign(side=side))
    columns = ["side", "from_state", "to_state", "count", "examples"]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    out = pd.concat(parts, ignore_index=True)[columns]
    return out.sort_values(["side", "count"], ascending=[False, False], ignore_index=True)


def _missing_from(these: pd.DataFrame, others: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``these`` whose (kind, id) is not in ``others``."""
    known = pd.MultiIndex.from_frame(others[["kind", "id"]].astype(str))
    keys = pd.MultiIndex.from_frame(these[["kind", "id"]].astype(str))
    return these[~keys.isin(known)].reset_index(drop=True)


def _run_line(run: pd.Series, tz: str | None = None) -> str:
    return f"run {run['id']} ({run['status']}, finished {moment(run['finished_at'], tz)})"


def changes_section(
    store: Store, *, current: Reconciliation | None = None, sla_days: float = 5.0,
    max_rows: int = MAX_ROWS, tz: str | None = None, found: Changes | None = None,
) -> HTML:  # fmt: skip
    """:func:`changes` (``found``, if made already) as HTML, or why there is none."""
    found = found or changes(store, current=current, sla_days=sla_days)
    runs = found.runs
    if len(runs) < 2:
        n = len(runs)
        by = moment(pd.Timestamp.now(tz="UTC") if current is None else current.now, tz)
        return page(paragraph(
            f"Nothing to compare: {n} pull run{'s' * (n != 1)} had finished ok or partial by {by}"
            ", and changes need two. `workbench pull` adds one (when pulls fail, the runs table "
            "says why: run `workbench doctor`).", "wb-empty"))  # fmt: skip
    moves = [
        f"{r['count']} {'request' if r['side'] == 'supplier' else 'transcript'}"
        f"{'s' * (r['count'] != 1)} moved {r['from_state']} → {r['to_state']} ({r['examples']})"
        for _, r in found.transitions.iterrows()
    ]
    columns = {"severity": "severity", "kind": "kind", "id": "id", "detail": "detail"}
    return page(
        paragraph(f"Comparing {_run_line(runs.iloc[1], tz)} with the previous "
                  f"{_run_line(runs.iloc[0], tz)}."),
        heading("Partner lists", 4),
        table(found.lists),
        heading("Lifecycle moves", 4),
        "<ul>" + "".join(f"<li>{escape(s)}</li>" for s in moves) + "</ul>" if moves
        else paragraph("No request or transcript changed state.", "wb-empty"),
        heading(f"New exceptions ({len(found.new_exceptions)})", 4),
        table(found.new_exceptions, columns, max_rows=max_rows, row_class="severity",
              empty="No new exceptions."),
        heading(f"Resolved exceptions ({len(found.resolved_exceptions)})", 4),
        table(found.resolved_exceptions, columns, max_rows=max_rows, row_class="severity",
              empty="No exception was resolved."),
    )  # fmt: skip


def trends(
    store: Store, *, days: float = 14, until: Any = None, sla_days: float = 5.0,
    grace_hours: float = 0.0, tz: str | None = None, max_points: int = MAX_POINTS,
    known: Iterable[Reconciliation | None] = (),
) -> Trends:  # fmt: skip
    """Trend points (:func:`point`) over the pull runs of ``days`` up to ``until``; beyond
    ``max_points`` runs, the last of each day in zone ``tz``. ``known``: reconciliations made
    already (``Changes.before``), each the point of the run it is as of, with this SLA and grace
    (bench/report.py: a reconciliation is a tenth of the notebook's work)."""
    if isinstance(days, bool) or not isinstance(days, int | float) or not 0 < days < math.inf:
        raise InvalidParameter(f"{days!r} is not a number of days: use a finite number above 0",
                               parameter="trend_days")  # fmt: skip
    end = timestamp(until) if until is not None else pd.Timestamp.now(tz="UTC")
    runs = pull_runs(store, until=end)
    runs = runs[runs["finished_at"] > end - pd.Timedelta(days=days)]
    chosen = runs
    if len(runs) > max_points:  # the last run of each day stands for its day
        day = runs["finished_at"].dt.tz_convert(tz or "UTC").dt.date
        chosen = runs[~day.duplicated(keep="last")]
    made = {(r.now, r.sla_days, r.grace_hours): r for r in known if r is not None}
    rows, kinds = [], []
    for run in chosen.itertuples(index=False):
        rec = made.get((run.finished_at, sla_days, grace_hours)) or reconcile(
            load(store, as_of=run.finished_at), sla_days=sla_days, grace_hours=grace_hours
        )
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
    """One trend point's figures (``TREND_COLUMNS`` but the run's): ``within_sla_share`` of the
    requests whose SLA is decided (answered, or open past it); median days from a request to our
    first answer, a transcript received to our ack, ours sent to the partner's (0 at least)."""
    r, t = rec.requests, rec.transcripts
    answered_at = pd.concat([r["responded_at"], r["transcript_sent_at"]], axis=1).min(axis=1)
    to_answer = _days(r["request_date"], answered_at)
    answered = int(to_answer.notna().sum())
    within = int((to_answer <= rec.sla_days).fillna(False).sum())
    late_open = int(((r["state"] == "awaiting_response") & r["sla_breached"]).fillna(False).sum())
    acked = t[t["state"] == "acknowledged"]
    return {
        "open_requests": rec.headline["open_requests"],
        "transcripts_awaiting_ack": rec.headline["transcripts_awaiting_ack"],
        "answered": answered,
        "answered_within_sla": within,
        "sla_decided": answered + late_open,
        "within_sla_share": within / (answered + late_open) if answered + late_open else pd.NA,
        "median_response_days": _median(to_answer),
        "median_ack_days": _median(_days(acked["request_date"], acked["acknowledged_at"])),
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
