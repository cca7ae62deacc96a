"""What changed since the previous run: list movements, lifecycle transitions, exceptions.

The latest two pull runs that finished ``ok`` or ``partial`` are compared: what each partner
list showed after each (``Store.diff``), and the reconciliation as of the previous run's finish
against the current one (state transitions per request and transcript; exceptions new and
resolved).

The reconciliation as of the previous run is also a point of the trends: a notebook makes it
once (:func:`previous_reconciliation`) and gives it to both.

>>> before = previous_reconciliation(store, rec)  # doctest: +SKIP
>>> display(changes_section(store, current=rec, previous=before))  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd
from IPython.display import HTML

from workbench.errors import InvalidParameter
from workbench.reconcile import Reconciliation, load, reconcile
from workbench.report.markup import MAX_ROWS, heading, moment, page, paragraph, table, text
from workbench.store import Store
from workbench.store.lists import LIST_NAMES

CHANGE_KINDS = ("appeared", "vanished", "changed")
NOT_SEEN = "(not seen yet)"
TRANSITION_COLUMNS = ("side", "from_state", "to_state", "count", "examples")
EXCEPTION_KEY = ["kind", "id"]


@dataclass(frozen=True)
class Changes:
    """The comparison ``changes`` makes. With fewer than two runs only ``runs`` is filled."""

    runs: pd.DataFrame
    lists: pd.DataFrame = field(default_factory=pd.DataFrame)
    items: pd.DataFrame = field(default_factory=pd.DataFrame)
    transitions: pd.DataFrame = field(default_factory=pd.DataFrame)
    new_exceptions: pd.DataFrame = field(default_factory=pd.DataFrame)
    resolved_exceptions: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def comparable(self) -> bool:
        return len(self.runs) >= 2


def pull_runs(store: Store, *, until: pd.Timestamp | None = None) -> pd.DataFrame:
    """Pull runs that finished ``ok`` or ``partial`` (by ``until``, if given), oldest first."""
    runs = store.table(
        "runs",
        where="kind = 'pull' AND status IN ('ok', 'partial') AND finished_at IS NOT NULL",
    )
    if until is not None:
        runs = runs[runs["finished_at"] <= until]
    runs = runs.sort_values(["finished_at", "id"], kind="stable")
    return runs[["id", "started_at", "finished_at", "status", "profile"]].reset_index(drop=True)


def as_of_run(
    store: Store,
    at: pd.Timestamp,
    *,
    sla_days: float,
    grace_hours: float = 0.0,
    reuse: Iterable[Reconciliation | None] = (),
) -> Reconciliation:
    """The store reconciled as of ``at`` (a pull run's finish): the first of ``reuse`` that is
    exactly that (same database, moment, SLA and grace), else a new one."""
    for rec in reuse:
        if rec is not None and _is_as_of(rec, store, at, sla_days, grace_hours):
            return rec
    return reconcile(load(store, as_of=at), sla_days=sla_days, grace_hours=grace_hours)


def _is_as_of(
    rec: Reconciliation, store: Store, at: pd.Timestamp, sla_days: float, grace_hours: float
) -> bool:
    attrs = rec.attrs
    return (
        attrs.get("db") == str(store.path)
        and attrs.get("as_of") is not None
        and attrs["as_of"] == at
        and rec.now == at
        and rec.sla_days == sla_days
        and rec.grace_hours == grace_hours
    )


def previous_reconciliation(store: Store, current: Reconciliation) -> Reconciliation | None:
    """The store reconciled as of the finish of the pull run before the latest one finished
    by ``current.now``, with ``current``'s SLA and grace: what :func:`changes` compares
    ``current`` with (None with fewer than two such runs). :func:`changes` and
    :func:`~workbench.report.trend_points.trends` take it rather than reconcile it again."""
    runs = pull_runs(store, until=current.now).tail(2)
    if len(runs) < 2:
        return None
    at = runs.iloc[0]["finished_at"]
    return as_of_run(store, at, sla_days=current.sla_days, grace_hours=current.grace_hours)


def changes(
    store: Store,
    *,
    current: Reconciliation | None = None,
    previous: Reconciliation | None = None,
    sla_days: float = 5.0,
) -> Changes:
    """Compare the latest two pull runs (those finished by ``current.now`` when given).

    ``current``: the reconciliation to compare with (default: one of the store as it is now,
    with ``sla_days``); the previous one is taken as of the previous run's finish, with
    ``current``'s SLA and grace. ``previous``: that one, already made
    (:func:`previous_reconciliation`); an ``InvalidParameter`` when it is as of another moment.
    """
    runs = pull_runs(store, until=current.now if current is not None else None).tail(2)
    runs = runs.reset_index(drop=True)
    if len(runs) < 2:
        return Changes(runs=runs)
    previous_run, latest_run = runs.iloc[0], runs.iloc[1]
    items = store.diff(int(previous_run["id"]), int(latest_run["id"]))
    if current is None:
        current = reconcile(load(store), sla_days=sla_days)
    at, sla, grace = previous_run["finished_at"], current.sla_days, current.grace_hours
    if previous is not None and not _is_as_of(previous, store, at, sla, grace):
        raise InvalidParameter(
            f"previous is the store as of {moment(previous.now)} (SLA {previous.sla_days:g} days, "
            f"grace {previous.grace_hours:g} h), not as of the previous run's finish "
            f"{moment(at)} (SLA {sla:g} days, grace {grace:g} h): pass "
            "report.previous_reconciliation(store, current), or nothing",
            parameter="previous",
        )
    before = as_of_run(store, at, sla_days=sla, grace_hours=grace, reuse=[previous])
    old, new = before.exceptions, current.exceptions
    return Changes(
        runs=runs,
        lists=list_changes(items),
        items=items,
        transitions=transitions(before, current),
        new_exceptions=_missing_from(new, old),
        resolved_exceptions=_missing_from(old, new),
    )


def list_changes(items: pd.DataFrame) -> pd.DataFrame:
    """``Store.diff`` rows counted per list and change (every list, zeros included)."""
    counts = pd.crosstab(items["list"].astype(str), items["change"].astype(str))
    counts = counts.reindex(index=list(LIST_NAMES), columns=list(CHANGE_KINDS), fill_value=0)
    return counts.rename_axis(index="list", columns=None).reset_index()


def transitions(before: Reconciliation, after: Reconciliation) -> pd.DataFrame:
    """How many requests (and transcripts) moved from one state to another, most first;
    ``examples``: up to three of their ids."""
    parts = []
    for side, attribute, id_column in (
        ("supplier", "requests", "request_id"),
        ("consumer", "transcripts", "transcript_id"),
    ):
        old = getattr(before, attribute).set_index(id_column)["state"].astype(str)
        new = getattr(after, attribute).set_index(id_column)["state"].astype(str)
        pair = pd.DataFrame({"from_state": old, "to_state": new}).fillna(
            {"from_state": NOT_SEEN, "to_state": "(gone)"}
        )
        moved = pair[pair["from_state"] != pair["to_state"]].rename_axis("id").reset_index()
        if moved.empty:
            continue
        grouped = moved.groupby(["from_state", "to_state"], sort=False)["id"]
        found = grouped.agg(count="size", examples=lambda ids: ", ".join(list(ids)[:3]))
        parts.append(found.reset_index().assign(side=side))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in TRANSITION_COLUMNS})
    out = pd.concat(parts, ignore_index=True)[list(TRANSITION_COLUMNS)]
    return out.sort_values(["side", "count"], ascending=[False, False], ignore_index=True)


def _missing_from(these: pd.DataFrame, others: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``these`` whose (kind, id) is not in ``others``."""
    known = pd.MultiIndex.from_frame(others[EXCEPTION_KEY].astype(str))
    keys = pd.MultiIndex.from_frame(these[EXCEPTION_KEY].astype(str))
    return these[~keys.isin(known)].reset_index(drop=True)


def _noun(side: str, count: int) -> str:
    noun = "request" if side == "supplier" else "transcript"
    return noun if count == 1 else noun + "s"


def _run_line(run: pd.Series, tz: str | None = None) -> str:
    return f"run {run['id']} ({run['status']}, finished {moment(run['finished_at'], tz)})"


def _nothing_to_compare(
    store: Store, runs: pd.DataFrame, until: pd.Timestamp | None, tz: str | None = None
) -> str:
    """Why ``runs`` (the usable pull runs by ``until``; fewer than two) compare nothing: none
    recorded at all, none succeeded, or the others finished after ``until``."""
    every = store.table("runs", where="kind = 'pull'")
    usable = pull_runs(store)
    later = len(usable) - len(runs)
    by = f"by {moment(until, tz)}, the time this report is as of" if until is not None else ""
    if len(runs) == 1:
        so_far = f"had finished {by}" if later else "so far"
        return (
            f"Only one pull run {so_far} ({_run_line(runs.iloc[0], tz)}): nothing to compare it "
            "with yet." + (f" {later} more finished after it." if later else "")
        )
    if every.empty:
        return (
            "No pull run is recorded yet: nothing to compare. Run `workbench pull` (twice) to "
            "see what changes."
        )
    if later:
        first = usable.iloc[0]
        return (
            f"No pull run had finished {by}: nothing to compare. The first one that did not "
            f"fail, {_run_line(first, tz)}, is later: report as of a later time to compare runs."
        )
    counts = every["status"].astype(str).value_counts()
    statuses = ", ".join(f"{n} {status}" for status, n in counts.items())
    return (
        f"No pull run has finished ok or partial yet ({statuses}): nothing to compare. Their "
        "errors are in the runs table (`summary`); run `workbench doctor`, then "
        "`workbench pull` again."
    )


def changes_section(
    store: Store,
    *,
    current: Reconciliation | None = None,
    previous: Reconciliation | None = None,
    sla_days: float = 5.0,
    max_rows: int = MAX_ROWS,
    tz: str | None = None,
) -> HTML:
    """``changes`` as HTML: per list what appeared, vanished or changed; lifecycle moves
    ("3 requests moved awaiting_response → responded"); exceptions new and resolved. With
    fewer than two runs to compare, it says why: none recorded, none succeeded, or the
    others finished after ``current.now``. Times show in zone ``tz`` (None: UTC);
    ``previous`` as :func:`changes` takes it."""
    found = changes(store, current=current, previous=previous, sla_days=sla_days)
    runs = found.runs
    if len(runs) < 2:
        until = current.now if current is not None else None
        return page(paragraph(_nothing_to_compare(store, runs, until, tz), "wb-empty"))
    sentences = [
        f"{row['count']} {_noun(row['side'], row['count'])} moved {row['from_state']} → "
        f"{row['to_state']}"
        for _, row in found.transitions.iterrows()
    ]
    moves = (
        "<ul>" + "".join(f"<li>{text(s)}</li>" for s in sentences) + "</ul>"
        if sentences
        else paragraph("No request or transcript changed state.", "wb-empty")
    )
    columns = {"severity": "severity", "kind": "kind", "id": "id", "detail": "detail"}
    return page(
        paragraph(f"Comparing {_run_line(runs.iloc[1], tz)} with the previous "
                  f"{_run_line(runs.iloc[0], tz)}."),
        heading("Partner lists", 4),
        table(found.lists),
        heading("Lifecycle moves", 4),
        moves,
        table(found.transitions, {"side": "side", "from_state": "from", "to_state": "to",
                                  "count": "count", "examples": "examples"}, max_rows=max_rows,
              empty=""),
        heading(f"New exceptions ({len(found.new_exceptions)})", 4),
        table(found.new_exceptions, columns, max_rows=max_rows, row_class="severity",
              empty="No new exceptions."),
        heading(f"Resolved exceptions ({len(found.resolved_exceptions)})", 4),
        table(found.resolved_exceptions, columns, max_rows=max_rows, row_class="severity",
              empty="No exception was resolved."),
    )  # fmt: skip
