"""History as DataFrames: as_of, diff, timeline, and any table, typed as DESIGN §5 says."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.store.helpers import ago, at, exchange, listed, soon, store_detail
from workbench.errors import StoreError
from workbench.store import LIST_NAMES, Store


def test_as_of_shows_the_latest_snapshot_at_or_before_a_time(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("A", "B"), taken_at=at(0))
    store.record_snapshot(None, "supplier_requests", listed("B", "C"), taken_at=at(10))
    store.record_snapshot(
        None, "placement_events", [{"eventId": "E1", "eventType": "x"}], taken_at=at(5)
    )
    before = store.as_of(at(-1))
    assert set(before) == set(LIST_NAMES)
    assert all(frame.empty for frame in before.values())
    assert list(before["supplier_requests"].columns[:3]) == [
        "item_key",
        "request_id",
        "request_date",
    ]
    assert store.as_of(at(0))["supplier_requests"]["request_id"].tolist() == ["A", "B"]
    middle = store.as_of(at(9))
    assert middle["supplier_requests"]["request_id"].tolist() == ["A", "B"]
    assert middle["placement_events"]["event_id"].tolist() == ["E1"]
    latest = store.as_of(at(10))["supplier_requests"]
    assert latest["request_id"].tolist() == ["B", "C"]
    assert latest.attrs["snapshot_id"] == 2 and latest.attrs["operation"] == "store.as_of"
    assert latest["request_id"].dtype == "string"
    assert str(latest["request_date"].dtype) == "datetime64[us, UTC]"
    assert str(latest["taken_at"].iloc[0]) == "2026-03-02 09:10:00+00:00"


def test_as_of_flattens_nested_items_to_snake_case(store: Store) -> None:
    event = {"eventId": "E1", "eventType": "offer", "payload": {"placementId": "PL1"}}
    store.record_snapshot(None, "domestic_events", [event], taken_at=at(0))
    frame = store.as_of(at(1))["domestic_events"]
    assert frame["payload_placement_id"].tolist() == ["PL1"]
    assert frame["event_type"].tolist() == ["offer"]


def test_diff_between_two_runs(store: Store) -> None:
    run_a = store.begin_run()
    store.record_snapshot(run_a, "supplier_requests", listed("A", "B"), taken_at=at(0))
    store.record_snapshot(run_a, "consumer_transcripts", listed("T1"), taken_at=at(0))
    store.finish_run(run_a, status="ok")
    run_b = store.begin_run()
    changed = {"RequestID": "B", "RequestDate": "2026-03-09T00:00:00.000Z"}
    store.record_snapshot(run_b, "supplier_requests", [changed, *listed("C")], taken_at=at(9))
    store.finish_run(run_b, status="ok")
    frame = store.diff(run_a, run_b)
    got = sorted(zip(frame["list"], frame["key"], frame["change"], strict=True))
    assert got == [
        ("supplier_requests", "A", "vanished"),
        ("supplier_requests", "B", "changed"),
        ("supplier_requests", "C", "appeared"),
    ]  # consumer_transcripts: run_b did not list it and nothing changed since run_a
    row = frame[frame["key"] == "B"].iloc[0]
    assert "2026-03-09" in row["after"] and "2026-03-01" in row["before"]
    assert frame["key"].dtype == "string" and frame.attrs["run_b"] == run_b


def test_diff_of_runs_without_changes_is_empty_with_its_columns(store: Store) -> None:
    run_a, run_b = store.begin_run(), store.begin_run()
    frame = store.diff(run_a, run_b)
    assert frame.empty and list(frame.columns[:3]) == ["list", "key", "change"]
    with pytest.raises(StoreError, match="no run 99"):
        store.diff(run_a, 99)


def test_timeline_tells_the_story_of_one_request(store: Store) -> None:
    run = store.begin_run()
    store.record_snapshot(run, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(10))
    call = store.record_call(exchange(started_at=ago(9)), run_id=run)
    store_detail(
        store,
        "supplier_requests",
        "R-1",
        seen_at=ago(9),
        detail=[{"PESCXML": "<TR/>"}],
        call_id=call,
    )
    store.record_detail_failure("supplier_requests", "R-1", "HTTP 503", run_id=run)
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>", flat={"response_status": "Hold"})
    store.outbox.mark_sent(entry, status=200, response_body="{}")
    store.record_snapshot(run, "supplier_requests", listed("R-2"), taken_at=soon(1))
    store.record_snapshot(run, "supplier_requests", listed("R-1", "R-2"), taken_at=soon(2))
    frame = store.timeline("R-1")
    assert frame["kind"].tolist() == [
        "appeared", "call", "detail", "document", "detail_failed", "outbox", "outbox",
        "response", "vanished", "left", "appeared",
    ]  # fmt: skip
    assert frame["at"].is_monotonic_increasing
    assert str(frame["at"].dtype) == "datetime64[us, UTC]"
    assert frame.loc[frame["kind"] == "call", "call_id"].tolist() == [call]
    assert "outbox" in frame.loc[frame["kind"] == "left", "description"].iloc[0]
    assert "Hold" in frame.loc[frame["kind"] == "response", "description"].iloc[0]
    assert store.timeline("nobody").empty


def test_a_departure_shows_once_in_the_timeline(store: Store) -> None:
    run = store.begin_run()
    store.record_snapshot(run, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(10))
    store.record_snapshot(run, "supplier_requests", listed("R-2"), taken_at=ago(5))
    frame = store.timeline("R-1")
    assert frame["kind"].tolist() == ["appeared", "vanished", "left"]
    assert "someone else closed it" in frame["description"].iloc[-1]


def test_table_types_ids_times_and_flags(store: Store) -> None:
    store.record_snapshot(store.begin_run(), "supplier_requests", listed("A"))
    frame = store.table("transcript_requests")
    assert frame["request_id"].dtype == "string"
    assert str(frame["first_seen_at"].dtype) == "datetime64[us, UTC]"
    assert str(frame["detail_fetched_at"].dtype) == "datetime64[us, UTC]"  # all null, still time
    assert frame["on_list"].dtype == "boolean"
    assert frame["detail_call_id"].dtype == "Int64"
    runs = store.table("runs")
    assert runs["id"].dtype == "Int64" and runs["pid"].dtype == "Int64"


def test_empty_tables_and_views_keep_their_columns(store: Store) -> None:
    for name in ("calls", "outbox", "open_requests", "transcripts_awaiting_ack", "courses"):
        frame = store.table(name)
        assert frame.empty and len(frame.columns) > 2, name
    assert store.table("calls")["request_id"].dtype == "string"


def test_table_refuses_names_that_are_not_tables(store: Store) -> None:
    with pytest.raises(StoreError, match="open_requests"):
        store.table("calls; DROP TABLE calls")
    with pytest.raises(StoreError, match="no such column: nonsense"):
        store.table("calls", where="nonsense = 1")


def test_open_requests_view_has_age_and_student(store: Store) -> None:
    old = {
        "RequestID": "OLD",
        "RequestDate": (pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=30)).isoformat(),
    }
    store.record_snapshot(None, "supplier_requests", [old, *listed("NEW")])
    store_detail(
        store,
        "supplier_requests",
        "OLD",
        flat={"student_first_name": "Ada", "student_last_name": "King"},
    )
    view = store.table("open_requests")
    row = view.set_index("request_id").loc["OLD"]
    assert 29.9 <= row["age_days"] <= 30.1
    assert (row["student_first_name"], row["student_last_name"]) == ("Ada", "King")
    store.record_snapshot(None, "supplier_requests", listed("NEW"))
    assert store.table("open_requests")["request_id"].tolist() == ["NEW"]
    latest = store.table("latest_snapshots")
    assert latest["item_count"].tolist() == [1] and latest["vanished"].tolist() == [1]


@pytest.mark.parametrize("date", ["0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z", "soon"])
def test_a_view_s_age_is_from_when_first_seen_when_the_date_is_implausible(
    store: Store, date: str
) -> None:
    store.record_snapshot(None, "supplier_requests", [{"RequestID": "R-1", "RequestDate": date}])
    (age,) = store.table("open_requests")["age_days"]
    assert 0 <= age <= 0.1  # not 739,000 days, nor negative


def test_ids_taken_from_dataframes_are_accepted(store: Store) -> None:
    store.begin_run()
    store.begin_run()
    runs = store.table("runs")["id"]  # Int64: its items are numpy integers
    assert store.diff(runs.iloc[0], runs.iloc[1]).empty
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>", run_id=runs.iloc[0])
    pending = store.table("outbox_unresolved")["outbox_id"].iloc[0]
    store.outbox.mark_sent(pending, status=200, response_body="{}")
    assert store.db["outbox"].get(entry)["state"] == "sent"


def test_table_filters_accept_values_taken_from_a_dataframe(tmp_path):
    from workbench.store import Store

    with Store(tmp_path / "n.db") as store:
        store.begin_run(kind="pull")
        run_id = store.table("runs")["id"].iloc[0]  # a numpy integer
        assert len(store.table("runs", where="id = ?", params=[run_id])) == 1
