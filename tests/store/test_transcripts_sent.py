"""``transcripts_sent``: one row per CollegeTranscript we sent, filed where responses are (a
send the partner answered, or one the lists showed took effect), never for a send that failed;
and the view that shows a received transcript under the API's ``request_id``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from tests.conftest import FAST
from tests.store.helpers import ago, exchange, listed, soon, store_detail
from tests.test_send_cli import send, transcript_file
from workbench import pesc, spec
from workbench.sandbox import Sandbox
from workbench.store import Store
from workbench.store.metadata import query_sql


def test_a_transcript_sent_from_the_command_line_has_its_row(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    request_id = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, request_id, tmp_path)
    done = send(sandbox, db, "transcript", request_id, str(path), "--yes")
    assert done.exit_code == 0, done.output
    flat = pesc.flatten(pesc.parse(path.read_text(encoding="utf-8")))

    with Store(db) as store:
        (entry,) = store.table("outbox").itertuples()
        sent = store.table("transcripts_sent")
        ack = store.table("acknowledgments")
        timeline = store.timeline(request_id)
    assert len(sent) == 1
    row = sent.iloc[0]
    assert row["outbox_id"] == entry.id and row["request_id"] == request_id
    assert row["sent_at"] == entry.updated_at and not row["inferred"]
    assert pesc.parse(row["pescxml"]).message_type == "CollegeTranscript"
    assert json.loads(row["pesc_json"])["document_id"] == flat["document_id"]
    assert row["document_id"] == flat["document_id"]
    assert row["request_tracking_id"] == sandbox.state.requests[request_id].tracking
    assert row["student_last_name"] == flat["student_last_name"]
    assert (row["award_count"], row["course_count"]) == (flat["award_count"], flat["course_count"])
    assert row["course_count"] == 30  # transcript_file's transcript: 30 courses
    # The partner's acknowledgment of it, beside it: the same outbox entry, direction received.
    assert ack["outbox_id"].tolist() == [entry.id] and ack["direction"].tolist() == ["received"]
    assert "transcript_sent" in timeline["kind"].tolist()

    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        story = conn.execute(query_sql("request_story"), {"request_id": request_id}).fetchall()
    assert any(kind == "transcript_sent" for _, kind, *_ in story)


def test_a_send_the_lists_show_took_effect_is_filed_inferred_and_a_failed_one_is_not(
    store: Store,
) -> None:
    xml = "<CollegeTranscript>T</CollegeTranscript>"
    flat = {"document_id": "CT-9", "award_count": 1, "course_count": 3}
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    gone = store.outbox.begin("send_transcript", "R-1", xml, flat=flat)
    store.outbox.mark(gone, "uncertain", error="connection dropped after sending")
    refused = store.outbox.begin("send_transcript", "R-2", xml, flat=flat)
    store.outbox.mark(refused, "failed", error="400 Bad Request", status=400)
    url = "http://127.0.0.1:8765/exchange" + spec.SUPPLIER_PENDING_PATH
    call = store.record_call(
        exchange(operation="supplier.pending_requests", url=url, started_at=soon(16))
    )
    diff = store.record_snapshot(None, "supplier_requests", listed("R-2"), call_id=call)
    assert {d["entry_id"]: d["state"] for d in diff.resolved} == {gone: "sent"}

    sent = store.table("transcripts_sent")
    assert sent["outbox_id"].tolist() == [gone]  # the failed send has no row
    row = sent.iloc[0]
    assert row["inferred"] and row["pescxml"] == xml and row["document_id"] == "CT-9"
    assert (row["award_count"], row["course_count"]) == (1, 3)
    assert store.table("acknowledgments").empty  # no answer was seen: no acknowledgment


def test_a_received_transcript_is_found_by_the_apis_request_id(store: Store) -> None:
    store_detail(
        store,
        "consumer_transcripts",
        "T-7",
        detail={"RequestID": "T-7", "PESCXML": "<CollegeTranscript/>"},
        flat={"document_id": "CT-7", "course_count": 2},
        children={"courses": [{"course_title": "Algebra"}, {"course_title": "Poetry"}]},
    )
    by_api_id = store.table("transcripts_received_by_request_id", where="request_id = ?",
                            params=["T-7"])  # fmt: skip
    assert len(by_api_id) == 1
    row = by_api_id.iloc[0]
    assert row["transcript_id"] == "T-7" and row["document_id"] == "CT-7"
    assert row["course_count"] == 2
    courses = store.table("courses", where="transcript_id = ?", params=[row["request_id"]])
    assert courses["course_title"].tolist() == ["Algebra", "Poetry"]
    received = store.table("transcripts_received")
    same = by_api_id.drop(columns=["request_id"])
    pd.testing.assert_frame_equal(same, received[same.columns], check_like=True)


def _inferred_transcript(store: Store) -> int:
    """A send_transcript for R-1 that became uncertain, then inferred sent from the lists."""
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    entry = store.outbox.begin(
        "send_transcript", "R-1", "<CollegeTranscript>T</CollegeTranscript>",
        flat={"document_id": "CT-9", "award_count": 1, "course_count": 3},
    )  # fmt: skip
    store.outbox.mark(entry, "uncertain", error="connection dropped after sending")
    url = "http://127.0.0.1:8765/exchange" + spec.SUPPLIER_PENDING_PATH
    call = store.record_call(
        exchange(operation="supplier.pending_requests", url=url, started_at=soon(16))
    )
    diff = store.record_snapshot(None, "supplier_requests", listed("R-2"), call_id=call)
    assert {d["entry_id"]: d["state"] for d in diff.resolved} == {entry: "sent"}
    return entry


def test_an_inferred_send_then_answered_keeps_one_row_no_longer_inferred(store: Store) -> None:
    entry = _inferred_transcript(store)
    store.outbox.mark_sent(entry, status=200, response_body="{}", reply_flat={"course_total": 3})
    sent = store.table("transcripts_sent")
    assert sent["outbox_id"].tolist() == [entry] and not sent.iloc[0]["inferred"]
    ack = store.table("acknowledgments")
    assert ack["outbox_id"].tolist() == [entry] and ack["course_total"].tolist() == [3]


def test_an_inferred_send_later_known_failed_is_no_longer_filed_as_sent(store: Store) -> None:
    entry = _inferred_transcript(store)
    assert len(store.table("transcripts_sent")) == 1
    store.outbox.mark(entry, "failed", error="the partner never received it", status=404)
    assert store.db["outbox"].get(entry)["state"] == "failed"
    assert store.table("transcripts_sent").empty
    assert "transcript_sent" not in store.timeline("R-1")["kind"].tolist()


def test_an_acknowledgment_we_sent_names_the_call_that_carried_it(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    transcript_id = sandbox.pending_transcript_ids()[0]
    done = send(sandbox, db, "ack", transcript_id, "--yes")
    assert done.exit_code == 0, done.output
    with Store(db) as store:
        (entry,) = store.table("outbox").itertuples()
        (ack,) = store.table("acknowledgments").itertuples()
        call = store.table("calls").set_index("id").loc[ack.call_id]
    assert (ack.direction, ack.outbox_id) == ("sent", entry.id)
    assert ack.call_id == entry.call_id and call["method"] == "POST"


def test_an_acknowledgment_inferred_sent_names_the_call_that_carried_it(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path
) -> None:
    sb = sandbox_factory()
    with wb.connect(env={**sb.env, **FAST}, db=tmp_path / "wb.db") as w:
        w.pull(progress=False)
        transcript_id = sb.pending_transcript_ids()[0]
        sb.set_faults(drop_after_rate=1.0, path_pattern="/acknowledgment$")  # taken, unanswered
        with pytest.raises(wb.TransportError) as lost:
            w.consumer.send_acknowledgment(transcript_id)
        sb.set_faults(drop_after_rate=0.0, path_pattern="")
        w.pull(progress=False)  # the transcript is gone from the list: inferred sent
        (entry,) = w.store.table("outbox").itertuples()
        (ack,) = w.store.table("acknowledgments", where="direction = 'sent'").itertuples()
        call = w.store.table("calls").set_index("id").loc[ack.call_id]
    assert (entry.state, ack.inferred, ack.outbox_id) == ("sent", 1, entry.id)
    assert ack.call_id == entry.call_id == lost.value.call_id and call["method"] == "POST"
