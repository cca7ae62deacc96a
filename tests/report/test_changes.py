"""What changed since the previous run, with no run, one run, and two or more."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from workbench import reconcile
from workbench.report import changes, changes_section, pull_runs
from workbench.store import Store

from .conftest import Scenario


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "changes.db") as s:
        yield s


# Ten days before the tests run: past a five-day SLA whatever the real date is (the store
# stamps runs and snapshots with the real clock, so a fixed date would age with it).
ASKED = (datetime.now(UTC) - timedelta(days=10)).replace(microsecond=0).isoformat()


def _pull(store: Store, *ids: str, status: str = "ok", kind: str = "pull") -> int:
    """A run listing ``ids``, each requested at ``ASKED``."""
    run = store.begin_run(kind=kind)
    if ids:
        items = [{"RequestID": i, "RequestDate": ASKED} for i in ids]
        store.record_snapshot(run, "supplier_requests", items)
    store.finish_run(run, status=status)
    return run


def _as_of(store: Store, when: pd.Timestamp) -> reconcile.Reconciliation:
    return reconcile.reconcile(reconcile.load(store, as_of=when), now=when, sla_days=5)


def test_no_run_yet(store: Store) -> None:
    assert len(changes(store).runs) < 2  # nothing to compare
    html = changes_section(store).data
    assert "Nothing to compare: 0 pull runs had finished ok or partial by" in html


def test_only_failed_runs_say_so(store: Store) -> None:
    _pull(store, "R1", status="failed")
    _pull(store, status="failed")
    store.begin_run(kind="pull")  # still running
    html = changes_section(store).data
    assert "Nothing to compare: 0 pull runs had finished ok or partial by" in html
    assert "workbench doctor" in html


def test_a_report_as_of_before_every_run_says_so(store: Store) -> None:
    before = pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=1)
    _pull(store, "R1")
    html = changes_section(store, current=_as_of(store, before)).data
    assert f"0 pull runs had finished ok or partial by {before:%Y-%m-%d %H:%M} UTC" in html


def test_one_run_by_the_as_of_time_and_more_after_it(store: Store) -> None:
    _pull(store, "R1")
    finished = pull_runs(store)["finished_at"].iloc[0]
    _pull(store, "R2")
    _pull(store, "R3")
    html = changes_section(store, current=_as_of(store, finished)).data
    assert f"1 pull run had finished ok or partial by {finished:%Y-%m-%d %H:%M} UTC" in html


def test_one_run_is_nothing_to_compare(store: Store) -> None:
    run = _pull(store, "R1")
    found = changes(store)
    assert found.runs["id"].tolist() == [run] and found.before is None
    assert "Nothing to compare: 1 pull run had finished" in changes_section(store).data


def test_two_runs_compare_lists_states_and_exceptions(store: Store) -> None:
    first = _pull(store, "R1", "R2")
    _pull(store, status="failed")  # neither failed runs nor other kinds count
    _pull(store, kind="doctor")
    second = _pull(store, "R2", "R3")
    found = changes(store, sla_days=5)
    assert found.runs["id"].tolist() == [first, second]
    lists = found.lists.set_index("list")
    assert lists.loc["supplier_requests"].tolist() == [1, 1, 0]  # appeared, vanished, changed
    assert lists.loc["consumer_transcripts"].tolist() == [0, 0, 0]
    moves = {(r.side, r.from_state, r.to_state): (r.count, r.examples)
             for r in found.transitions.itertuples()}  # fmt: skip
    assert moves == {
        ("supplier", "awaiting_response", "closed_elsewhere"): (1, "R1"),
        ("supplier", "(not seen yet)", "awaiting_response"): (1, "R3"),
    }
    assert ("closed_elsewhere", "R1") in set(
        zip(found.new_exceptions["kind"], found.new_exceptions["id"], strict=True)
    )
    assert ("response_overdue", "R1") in set(
        zip(found.resolved_exceptions["kind"], found.resolved_exceptions["id"], strict=True)
    )
    html = changes_section(store, sla_days=5).data
    assert f"Comparing run {second} (ok" in html and f"previous run {first} (ok" in html
    assert "1 request moved awaiting_response → closed_elsewhere (R1)" in html
    assert "New exceptions (" in html and "Resolved exceptions (" in html


def test_runs_after_the_reconciliation_are_not_compared(store: Store) -> None:
    first = _pull(store, "R1")
    rec = _as_of(store, pull_runs(store)["finished_at"].iloc[0])
    _pull(store, "R2")
    assert pull_runs(store, until=rec.now)["id"].tolist() == [first]
    assert "1 pull run had finished ok or partial by" in changes_section(store, current=rec).data


def test_the_scenario_moves_the_requests_it_answered(
    report_scenario: Scenario, report_copy: Path
) -> None:
    with Store(report_copy) as store:
        rec = reconcile.reconcile(reconcile.load(store))
        found = changes(store, current=rec)
        diff = store.diff(*found.runs["id"].tolist())
    assert len(found.runs) == 2
    assert found.lists[["appeared", "vanished", "changed"]].to_numpy().sum() == len(diff)
    moves = found.transitions.set_index(["side", "from_state", "to_state"])["count"]
    assert moves[("supplier", "awaiting_response", "responded")] == len(
        report_scenario.acted["response"]
    )
    # A transcript the partner re-issued after our acknowledgment awaits ours again.
    transcripts = rec.transcripts
    reissued = set(transcripts.loc[transcripts["reissued_after_ack"], "transcript_id"])
    acknowledged = set(report_scenario.acted["acknowledgment"])
    assert reissued <= acknowledged
    assert moves[("consumer", "awaiting_ack", "acknowledged")] == len(acknowledged - reissued)
    wrong = report_scenario.acted["transcript_wrong_student"][0]
    new = set(zip(found.new_exceptions["kind"], found.new_exceptions["id"], strict=True))
    assert ("identity_mismatch", wrong) in new
