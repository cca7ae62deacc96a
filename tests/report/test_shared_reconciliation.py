"""Changes and trends reconcile the store as of a pull run with the report's SLA and grace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from workbench import reconcile
from workbench.report import changes, open_store, pull_runs, trends
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


def test_trends_count_with_the_reports_grace(store: Store) -> None:
    until = pull_runs(store)["finished_at"].iloc[-1]
    found = {}
    for grace in (0.0, 10_000.0):
        found[grace] = trends(store, days=30, until=until, sla_days=SLA, grace_hours=grace).points
        assert found[grace].attrs["grace_hours"] == grace
        assert len(found[grace]) == 2
        for row in found[grace].itertuples():
            rec = _as_of(store, row.at, grace_hours=grace)
            assert row.exceptions == len(rec.exceptions)
            assert row.open_requests == rec.headline["open_requests"]
    assert (found[10_000.0]["exceptions"] < found[0.0]["exceptions"]).all()


def test_the_previous_run_reconciled_for_changes_is_a_trend_point_unchanged(store: Store) -> None:
    current = reconcile.reconcile(reconcile.load(store), sla_days=SLA, grace_hours=36)
    before = changes(store, current=current).before
    first = pull_runs(store)["finished_at"].iloc[0]
    assert before is not None and (before.now, before.sla_days, before.grace_hours) == (
        first,
        SLA,
        36,
    )
    alone = trends(store, days=30, until=current.now, sla_days=SLA, grace_hours=36)
    shared = trends(store, days=30, until=current.now, sla_days=SLA, grace_hours=36,
                    known=[before, None])  # fmt: skip
    assert len(shared.points) == 2
    pd.testing.assert_frame_equal(shared.points, alone.points)
    pd.testing.assert_frame_equal(shared.by_kind, alone.by_kind)


def test_a_known_reconciliation_is_the_point_of_its_run_only(store: Store) -> None:
    """Proof that a point is not reconciled again: one as of the first run with its requests
    left out gives that point 0 open requests; of another SLA or grace it is not used."""
    runs = pull_runs(store)["finished_at"]
    tables = reconcile.load(store, as_of=runs.iloc[0])
    attrs = dict(tables["requests"].attrs)
    tables["requests"] = tables["requests"].iloc[0:0]
    tables["requests"].attrs.update(attrs)
    hollow = reconcile.reconcile(tables, sla_days=SLA)
    assert _as_of(store, runs.iloc[0]).headline["open_requests"] > 0
    found = trends(store, days=30, until=runs.iloc[-1], sla_days=SLA, known=[hollow]).points
    assert found["open_requests"].iloc[0] == 0
    for grace, sla in ((1.0, SLA), (0.0, SLA + 1)):
        other = trends(store, days=30, until=runs.iloc[-1], sla_days=sla, grace_hours=grace,
                       known=[hollow]).points  # fmt: skip
        assert other["open_requests"].iloc[0] > 0
