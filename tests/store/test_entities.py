"""Entity upserts: request and transcript details with their PESC fields and child records,
events, detail failures and the incremental-pull question."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.store.helpers import at, exchange, listed, store_detail
from workbench.errors import StoreError
from workbench.store import Store

FLAT = {
    "message_type": "TranscriptRequest",
    "document_id": "DOC-1",
    "request_tracking_id": "R-1",
    "student_first_name": "Ada",
    "student_last_name": "Lovelace",
    "student_birth_date": "1815-12-10",
    "request_count": 1,
    "release_authorized": True,
    "a_key_nobody_declared": {"kept": True},
}
DETAIL = [{"RequestID": "R-1", "RequestDate": "2026-03-01T08:00:00.000Z", "PESCXML": "<TR/>"}]


def test_a_request_detail_stores_pesc_fields_and_the_whole_record(store: Store) -> None:
    call = store.record_call(exchange())
    store_detail(
        store,
        "supplier_requests",
        "R-1",
        request_date="2026-03-01T08:00:00.000Z",
        seen_at=at(0),
        detail=DETAIL,
        flat=FLAT,
        call_id=call,
        validation=[{"line": 3, "message": "too long"}],
    )
    row = store.table("transcript_requests").iloc[0]
    assert row["detail_call_id"] == call and str(row["detail_fetched_at"]) == str(at(0))
    assert store.document("R-1") == "<TR/>"  # the detail's document: its version 1
    # The entity row stays narrow: the texts are its current document's.
    assert not {"pescxml", "pesc_json", "validation", "detail_json"} & set(row.index)
    document = store.current_documents("supplier_requests").loc["R-1"]
    assert set(document.index) == {"validation"}
    document = store.current_documents(
        "supplier_requests", ("pescxml", "detail_json", "pesc_json", "validation")
    ).loc["R-1"]
    assert document["pescxml"] == "<TR/>"
    assert json.loads(document["detail_json"]) == {
        "RequestDate": "2026-03-01T08:00:00.000Z",
        "RequestID": "R-1",
    }
    assert row["student_last_name"] == "Lovelace" and row["document_id"] == "DOC-1"
    assert row["request_count"] == 1 and row["release_authorized"] == 1
    assert json.loads(document["pesc_json"])["a_key_nobody_declared"] == {"kept": True}
    assert json.loads(document["validation"]) == [{"line": 3, "message": "too long"}]
    assert not row["on_list"]  # a detail alone does not put it on the list
    assert store.table("transcript_requests")["request_id"].dtype == "string"


def test_upsert_keeps_first_and_last_seen_and_list_membership(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=at(5))
    store_detail(store, "supplier_requests", "R-1", seen_at=at(10), detail=DETAIL, flat=FLAT)
    store_detail(store, "supplier_requests", "R-1", seen_at=at(1))  # an older sighting
    row = store.table("transcript_requests").iloc[0]
    assert str(row["first_seen_at"]) == "2026-03-02 09:01:00+00:00"
    assert str(row["last_seen_at"]) == "2026-03-02 09:10:00+00:00"
    assert row["on_list"] and store.document("R-1") == "<TR/>"  # an upsert without detail keeps it


def test_a_new_detail_replaces_the_pesc_fields_of_the_old_one(store: Store) -> None:
    store_detail(store, "supplier_requests", "R-1", seen_at=at(0), detail=DETAIL, flat=FLAT)
    store_detail(
        store,
        "supplier_requests",
        "R-1",
        seen_at=at(1),
        detail=DETAIL,
        parse_error="not XML at line 1",
    )
    row = store.table("transcript_requests").iloc[0]
    assert row["parse_error"] == "not XML at line 1"
    assert pd.isna(row["student_last_name"])
    document = store.current_documents("supplier_requests", ("pesc_json", "parse_error"))
    assert pd.isna(document.loc["R-1", "pesc_json"])
    assert document.loc["R-1", "parse_error"] == "not XML at line 1"


def test_children_become_rows_with_a_column_per_field(store: Store) -> None:
    courses = [
        {"course_title": "Calculus", "course_credit_value": 3.0, "grade": "A", "session": "F24"},
        {"course_title": "Poetry", "course_credit_value": 1.5, "grade": "B+", "extra": [1]},
    ]
    children = {
        "courses": courses,
        "awards": [{"award_title": "Diploma"}],
        "sessions": [{"name": "Fall 2024"}],
    }
    store_detail(
        store,
        "consumer_transcripts",
        "T-1",
        seen_at=at(0),
        detail={"PESCXML": "<CT/>"},
        children=children,
    )
    got = store.table("courses")
    assert list(got["transcript_id"]) == ["T-1", "T-1"] and list(got["position"]) == [0, 1]
    assert list(got["course_title"]) == ["Calculus", "Poetry"]
    assert list(got["course_credit_value"]) == [3.0, 1.5]
    assert got["extra"].iloc[1] == "[1]" and pd.isna(got["extra_json"].iloc[0])
    assert store.table("awards")["award_title"].tolist() == ["Diploma"]
    other = store.table("document_records").iloc[0]
    assert (other["entity"], other["record_type"], other["parent_id"]) == (
        "transcripts_received",
        "sessions",
        "T-1",
    )
    # A re-fetched document replaces its children.
    store_detail(
        store, "consumer_transcripts", "T-1", seen_at=at(1), children={"courses": courses[:1]}
    )
    assert len(store.table("courses")) == 1 and len(store.table("awards")) == 0


def test_child_fields_that_are_not_safe_column_names_stay_in_the_json(store: Store) -> None:
    weird = {"Bad Name": 1, "x; DROP TABLE calls": 2, "position": 99, "ok_name": 3}
    store_detail(store, "supplier_requests", "R-1", seen_at=at(0), children={"recipients": [weird]})
    row = store.table("recipients").iloc[0]
    assert row["position"] == 0 and row["ok_name"] == 3
    assert json.loads(row["extra_json"]) == {
        "Bad Name": 1,
        "x; DROP TABLE calls": 2,
        "position": 99,
    }
    assert "calls" in store.db.table_names()


def test_missing_details_is_the_incremental_pull_question(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("A", "B", "C", "D"))
    store_detail(store, "supplier_requests", "A", detail=DETAIL, flat=FLAT)
    store_detail(store, "supplier_requests", "B", detail=DETAIL)
    assert store.missing_details("supplier_requests", ["A", "B", "C", "D", "C"]) == ["C", "D"]
    run = store.begin_run()
    store.record_detail_failure(
        "supplier_requests", "B", TimeoutError("read timed out"), run_id=run
    )
    store.record_detail_failure("supplier_requests", "C", "HTTP 503", run_id=run)
    assert store.missing_details("supplier_requests", ["A", "B", "C", "D"]) == ["B", "C", "D"]
    failures = store.table("detail_failures")
    assert failures["item_id"].tolist() == ["B", "C"] and failures["run_id"].tolist() == [run, run]
    store_detail(store, "supplier_requests", "B", detail=DETAIL)  # the retry worked
    assert store.missing_details("supplier_requests", ["B", "C"]) == ["C"]
    row = store.table("transcript_requests", where="request_id = 'B'").iloc[0]
    assert pd.isna(row["detail_error"])


def test_missing_details_only_for_the_two_detail_lists(store: Store) -> None:
    assert store.missing_details("consumer_transcripts", ["T"]) == ["T"]
    with pytest.raises(StoreError, match="consumer_transcripts"):
        store.missing_details("placement_events", ["E"])


def test_events_are_deduped_by_id_then_by_content(store: Store) -> None:
    events = [
        {"eventId": "E1", "eventType": "offer", "occurredAt": "2026-03-01T10:00:00Z"},
        {"eventType": "anonymous", "payload": {"n": 1}},
        {"eventType": "anonymous", "payload": {"n": 1}},
    ]
    first = store.record_snapshot(None, "domestic_events", events, taken_at=at(0))
    assert first.appeared[0] == "E1" and len(first.appeared) == 2
    second = store.record_snapshot(None, "domestic_events", events[:2], taken_at=at(3))
    assert second.appeared == () and len(second.unchanged) == 2
    rows = store.table("events")
    assert len(rows) == 2 and set(rows["source"]) == {"domestic"}
    assert (rows["last_seen_at"] > rows["first_seen_at"]).all()
    assert rows["on_list"].all()


def test_the_xml_is_kept_once_and_read_back_either_way(store: Store) -> None:
    body = '{"RequestID": "T-1", "PESCXml": "<CollegeTranscript/>"}'  # another key casing
    call = store.record_call(exchange(url="http://h/api/transcripts/T-1", response_body=body))
    store_detail(store, "consumer_transcripts", "T-1", detail=body, call_id=call)
    store_detail(
        store, "supplier_requests", "R-9", detail=[{"PESCXML": "<TR/>"}]
    )  # no call: kept in the row
    assert store.document("T-1") == "<CollegeTranscript/>"
    assert store.document("T-1", list_name="supplier_requests") is None
    assert store.document("R-9") == "<TR/>" and store.document("nobody") is None
    documents = store.table("documents").set_index("item_id")
    assert documents.loc["T-1", "pescxml"] == "<CollegeTranscript/>"
    assert documents.loc["R-9", "pescxml"] == "<TR/>"
    assert documents.loc["T-1", "entity"] == "transcripts_received"
