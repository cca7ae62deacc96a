"""The reconciliation as of the previous pull run, made once: changes compare with it, and it
is a point of the trends, with the same figures as when each makes its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from workbench import reconcile
from workbench.errors import InvalidParameter
from workbench.report import (
    changes,
    changes_section,
    open_store,
    previous_reconciliation,
    pull_runs,
    trends,
)
from workbench.store import Store

SLA = 5.0


@pytest.fixture
def store(report_db: Path) -> Iterator[Store]:
    """The report scenario's store: two pull runs, sends between them."""
    with open_store(report_db) as opened:
        yield opened


def _as_of(store: Store, at: pd.Timestamp, grace_hours: float = 0.0) -> reconcile.Reconciliation:
    return reconcile.reconcile(
        reconcile.load(store, as_of=at), sla_days=SLA, grace_hours=grace_hours
    )


def test_it_is_the_store_as_of_the_previous_run_with_the_reports_sla_and_grace(
    store: Store,
) -> None:
    runs = pull_runs(store)
    assert len(runs) == 2
    current = reconcile.reconcile(reconcile.load(store), sla_days=SLA, grace_hours=36)
    before = previous_reconciliation(store, current)
    assert before is not None
    first = runs["finished_at"].iloc[0]
    assert (before.now, before.sla_days, before.grace_hours) == (first, SLA, 36)
    direct = _as_of(store, first, grace_hours=36)
    assert_frame_equal(before.requests, direct.requests)
    assert_frame_equal(before.exceptions, direct.exceptions)


def test_with_one_run_by_the_reports_moment_there_is_none(store: Store) -> None:
    first = pull_runs(store)["finished_at"].iloc[0]
    assert previous_reconciliation(store, _as_of(store, first)) is None


def test_changes_given_it_are_the_changes_made_alone(store: Store) -> None:
    current = reconcile.reconcile(reconcile.load(store), sla_days=SLA)
    before = previous_reconciliation(store, current)
    alone, shared = (
        changes(store, current=current),
        changes(store, current=current, previous=before),
    )
    assert not alone.transitions.empty  # the scenario moved requests: something to compare
    for name in ("lists", "transitions", "new_exceptions", "resolved_exceptions"):
        assert_frame_equal(getattr(shared, name), getattr(alone, name))
    html = changes_section(store, current=current, previous=before).data
    assert html == changes_section(store, current=current).data


def test_changes_compare_with_the_reports_grace(store: Store) -> None:
    """The previous run is reconciled with the grace of the report it is compared with: with
    a grace no item outlives, no item is "resolved" from overdue (at the previous run's
    finish, without a grace, some were)."""
    first = pull_runs(store)["finished_at"].iloc[0]
    kinds = ["response_overdue", "ack_overdue"]  # what the SLA and the grace decide
    assert _as_of(store, first).exceptions["kind"].astype(str).isin(kinds).sum() > 0
    current = reconcile.reconcile(reconcile.load(store), sla_days=SLA, grace_hours=10_000)
    found = changes(store, current=current)
    for moved in (found.new_exceptions, found.resolved_exceptions):
        assert not moved["kind"].astype(str).isin(kinds).any()


@pytest.mark.parametrize("other", ["now", "sla", "grace"])
def test_a_previous_reconciliation_of_another_moment_or_sla_is_refused(
    store: Store, other: str
) -> None:
    current = reconcile.reconcile(reconcile.load(store), sla_days=SLA)
    first = pull_runs(store)["finished_at"].iloc[0]
    wrong = {
        "now": current,
        "sla": reconcile.reconcile(reconcile.load(store, as_of=first), sla_days=SLA + 1),
        "grace": _as_of(store, first, grace_hours=1),
    }[other]
    with pytest.raises(InvalidParameter, match="previous_reconciliation") as raised:
        changes(store, current=current, previous=wrong)
    assert raised.value.parameter == "previous"


def test_trends_reusing_it_have_exactly_the_same_points(store: Store) -> None:
    current = reconcile.reconcile(reconcile.load(store), sla_days=SLA)
    before = previous_reconciliation(store, current)
    alone = trends(store, days=30, until=current.now, sla_days=SLA)
    shared = trends(store, days=30, until=current.now, sla_days=SLA, reuse=[before, None])
    assert len(shared.points) == 2
    assert_frame_equal(shared.points, alone.points)
    assert_frame_equal(shared.by_kind, alone.by_kind)


def test_trends_take_a_given_reconciliation_as_the_point_of_its_run(store: Store) -> None:
    """Proof that a point is not reconciled again: a reconciliation as of the first run with
    its requests left out (marked as that run's) gives that point 0 open requests."""
    first = pull_runs(store)["finished_at"].iloc[0]
    tables = reconcile.load(store, as_of=first)
    attrs = dict(tables["requests"].attrs)
    tables["requests"] = tables["requests"].iloc[0:0]
    tables["requests"].attrs.update(attrs)
    hollow = reconcile.reconcile(tables, sla_days=SLA)
    assert _as_of(store, first).headline["open_requests"] > 0
    until = pull_runs(store)["finished_at"].iloc[-1]
    found = trends(store, days=30, until=until, sla_days=SLA, reuse=[hollow]).points
    assert list(found["open_requests"]) == [
        0,
        _as_of(store, until).headline["open_requests"],
    ]
    # not as of the run with these figures: each is reconciled as usual
    for grace, sla in ((1.0, SLA), (0.0, SLA + 1)):
        other = trends(store, days=30, until=until, sla_days=sla, grace_hours=grace,
                       reuse=[hollow]).points  # fmt: skip
        assert other["open_requests"].iloc[0] > 0


def test_trends_count_with_the_reports_grace(store: Store) -> None:
    until = pull_runs(store)["finished_at"].iloc[-1]
    found = {}
    for grace in (0.0, 10_000.0):
        found[grace] = trends(store, days=30, until=until, sla_days=SLA, grace_hours=grace).points
        assert found[grace].attrs["grace_hours"] == grace
        for row in found[grace].itertuples():
            rec = _as_of(store, row.at, grace_hours=grace)
            assert row.exceptions == len(rec.exceptions)
            assert row.open_requests == rec.headline["open_requests"]
    assert (found[10_000.0]["exceptions"] < found[0.0]["exceptions"]).all()
