"""Runs, calls and list snapshots: append-only records, and the bookkeeping they drive."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from tests.store.helpers import at, exchange, listed
from workbench.errors import StoreError
from workbench.store import Store
from workbench.store.core import request_id_from_url


def test_runs_begin_running_and_finish_with_a_summary(store: Store) -> None:
    run = store.begin_run(kind="pull", profile="sandbox")
    row = store.table("runs").iloc[0]
    assert (row["id"], row["kind"], row["profile"], row["status"]) == (
        run,
        "pull",
        "sandbox",
        "running",
    )
    assert row["pid"] > 0 and row["workbench_version"]
    store.finish_run(run, status="partial", summary={"new": 3, "failed": ["R-9"]})
    row = store.table("runs").iloc[0]
    assert row["status"] == "partial"
    assert json.loads(row["summary"]) == {"failed": ["R-9"], "new": 3}
    assert row["finished_at"] >= row["started_at"]


@pytest.mark.parametrize("status", ["running", "done", ""])
def test_finish_run_refuses_unknown_statuses(store: Store, status: str) -> None:
    run = store.begin_run()
    with pytest.raises(StoreError, match="ok, partial, failed"):
        store.finish_run(run, status=status)


def test_finish_run_of_an_unknown_run_is_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match="no run 42"):
        store.finish_run(42, status="ok")


def test_record_call_keeps_every_field_and_returns_its_id(store: Store) -> None:
    run = store.begin_run()
    first = store.record_call(exchange(), run_id=run)
    second = store.record_call(exchange(status=500, error=None, attempt=2), run_id=run)
    assert second == first + 1
    calls = store.table("calls")
    row = calls.iloc[0]
    assert row["request_id"] == "R-1"  # from the by-id URL
    assert row["operation"] == "supplier.request" and row["method"] == "GET"
    assert row["status"] == 200 and row["attempt"] == 1 and row["run_id"] == run
    assert str(row["started_at"]) == "2026-03-02 09:00:00+00:00"
    assert json.loads(row["response_body"]) == [
        {"RequestID": "R-1", "PESCXML": "<TranscriptRequest/>"}
    ]
    assert json.loads(row["request_headers"])["Accept"] == "application/json"
    assert list(calls["attempt"]) == [1, 2]


def test_a_recorded_call_is_committed_at_once(store: Store) -> None:
    call = store.record_call(exchange())
    other = sqlite3.connect(store.path)  # another program sees it without waiting for more
    try:
        assert other.execute("SELECT id FROM calls").fetchall() == [(call,)]
    finally:
        other.close()


def test_record_call_takes_any_object_with_the_exchange_attributes(store: Store) -> None:
    class Minimal:
        method = "POST"
        url = "https://id.example/auth/connect/token"
        status = None
        error = "ConnectError: refused"
        response_body = b"bytes are fine"

    call = store.record_call(Minimal(), request_id="given")
    row = store.table("calls", where="id = ?", params=[call]).iloc[0]
    assert row["request_id"] == "given" and row["error"] == "ConnectError: refused"
    assert row["response_body"] == "bytes are fine" and row["started_at"] is not None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h/exchange/api/transcriptrequests/abc-1", "abc-1"),
        ("http://h/exchange/api/transcriptrequests/abc-1/responses", "abc-1"),
        ("http://h/api/transcripts/A%20B/acknowledgment", "A B"),
        ("http://h/api/transcripts/T1/", "T1"),
        ("http://h/api/transcriptrequests/no_response", None),
        ("http://h/api/transcripts/no_response", None),
        ("http://h/gateway/apply/domestic/api/v1/events/peek?Count=10", None),
        ("", None),
    ],
)
def test_request_id_is_read_from_by_id_urls(url: str, expected: str | None) -> None:
    assert request_id_from_url(url) == expected


def test_first_snapshot_makes_every_item_appear(store: Store) -> None:
    run = store.begin_run()
    diff = store.record_snapshot(run, "supplier_requests", listed("A", "B"), taken_at=at(0))
    assert diff.appeared == ("A", "B") and diff.vanished == () and diff.previous_id is None
    snap = store.table("snapshots").iloc[0]
    assert (snap["item_count"], snap["appeared"], snap["key"]) == (2, 2, "RequestID")
    items = store.table("snapshot_items")
    assert list(items["item_key"]) == ["A", "B"] and list(items["position"]) == [0, 1]


def test_snapshot_diff_against_the_previous_one(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("A", "B", "C"), taken_at=at(0))
    items = [*listed("B"), {"RequestID": "C", "RequestDate": "2026-03-05T00:00:00Z"}]
    items += listed("D")
    diff = store.record_snapshot(None, "supplier_requests", items, taken_at=at(5))
    assert diff.appeared == ("D",)
    assert diff.vanished == ("A",)
    assert diff.changed == ("C",)
    assert diff.unchanged == ("B",)
    assert diff.left == {"A": "elsewhere"}


def test_snapshots_of_other_lists_do_not_interfere(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("A"), taken_at=at(0))
    diff = store.record_snapshot(None, "consumer_transcripts", listed("T"), taken_at=at(1))
    assert diff.previous_id is None and diff.appeared == ("T",)
    requests = store.table("transcript_requests")
    assert list(requests["request_id"]) == ["A"] and bool(requests["on_list"].iloc[0])


def test_snapshot_bookkeeping_on_the_entity_table(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("A", "B"), taken_at=at(0))
    store.record_snapshot(None, "supplier_requests", listed("B"), taken_at=at(10))
    rows = store.table("transcript_requests").set_index("request_id")
    assert not rows.loc["A", "on_list"] and rows.loc["A", "left_reason"] == "elsewhere"
    assert rows.loc["A", "left_at"] == rows.loc["B", "last_seen_at"]
    assert (
        rows.loc["B", "on_list"] and rows.loc["B", "first_seen_at"] < rows.loc["B", "last_seen_at"]
    )
    assert str(rows.loc["B", "request_date"]) == "2026-03-01 08:00:00+00:00"
    # A comes back: on the list again, left_at cleared, first_seen_at kept.
    store.record_snapshot(None, "supplier_requests", listed("A", "B"), taken_at=at(20))
    row = store.table("transcript_requests", where="request_id = 'A'").iloc[0]
    assert row["on_list"] and pd.isna(row["left_at"]) and pd.isna(row["left_reason"])
    assert str(row["first_seen_at"]) == "2026-03-02 09:00:00+00:00"


def test_an_empty_list_means_everything_left(store: Store) -> None:
    store.record_snapshot(None, "consumer_transcripts", listed("T1", "T2"), taken_at=at(0))
    diff = store.record_snapshot(None, "consumer_transcripts", [], taken_at=at(1))
    assert diff.vanished == ("T1", "T2") and set(diff.left) == {"T1", "T2"}
    assert store.table("transcripts_received")["on_list"].sum() == 0


def test_events_lists_key_by_event_id_else_by_content(store: Store) -> None:
    events = [
        {"eventId": "E1", "eventType": "offer", "occurredAt": "2026-03-01T10:00:00Z"},
        {"type": "no-id", "n": 1},
    ]
    diff = store.record_snapshot(None, "placement_events", events, taken_at=at(0))
    assert diff.appeared[0] == "E1" and diff.appeared[1].startswith("sha256:")
    stored = store.table("events").set_index("event_key")
    assert stored.loc["E1", "event_type"] == "offer" and stored.loc["E1", "source"] == "placement"
    assert str(stored.loc["E1", "occurred_at"]) == "2026-03-01 10:00:00+00:00"
    again = store.record_snapshot(None, "placement_events", events[:1], taken_at=at(1))
    assert again.unchanged == ("E1",) and again.vanished == (diff.appeared[1],)
    assert store.table("events", where="on_list = 1")["event_key"].tolist() == ["E1"]


def test_unknown_list_names_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="supplier_requests"):
        store.record_snapshot(None, "requests", [])


def test_snapshot_items_keep_the_item_as_listed(store: Store) -> None:
    item = {"RequestID": "A", "RequestDate": "2026-03-01T08:00:00.000Z", "Extra": [1, 2]}
    store.record_snapshot(None, "supplier_requests", [item])
    assert json.loads(store.table("snapshot_items")["item_json"].iloc[0]) == item
