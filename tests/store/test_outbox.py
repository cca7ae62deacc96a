"""The outbox: recorded before sending, never twice by accident, settled from the lists."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from tests.store.helpers import ago, exchange, listed, soon, store_detail
from workbench.errors import InvalidValue, StoreError, WorkbenchError
from workbench.store import DuplicateSend, Store

RESPONSE_FLAT = {
    "document_id": "RESP-1",
    "request_tracking_id": "R-1",
    "response_status": "Hold",
    "hold_reason": "FinancialHold",
}
TRANSCRIPT_FLAT = {"document_id": "CT-1", "award_count": 2, "course_count": 20}
ACK_FLAT = {"document_id": "CT-1", "academic_award_total": 2, "course_total": 19}


def states(store: Store) -> dict[int, str]:
    rows = store.table("outbox")
    return dict(zip(rows["id"], rows["state"], strict=True))


def test_begin_records_pending_before_the_send(store: Store) -> None:
    entry = store.outbox.begin("send_response", "R-1", {"PESCXML": "<TResp/>"}, flat=RESPONSE_FLAT)
    row = store.db["outbox"].get(entry)
    assert row["state"] == "pending" and row["request_id"] == "R-1"
    assert len(row["payload_sha256"]) == 64 and json.loads(row["payload"]) == {
        "PESCXML": "<TResp/>"
    }
    assert json.loads(row["payload_flat"])["response_status"] == "Hold"
    frame = store.table("outbox_unresolved")
    assert frame["outbox_id"].tolist() == [entry] and frame["request_id"].dtype == "string"


def test_sent_files_the_response_we_sent(store: Store) -> None:
    entry = store.outbox.begin("send_response", "R-1", {"PESCXML": "<TResp/>"}, flat=RESPONSE_FLAT)
    call = store.record_call(exchange(method="POST", status=200))
    store.outbox.mark_sent(
        entry, status=200, response_body={"RequestID": "R-1", "PESCXML": "<TResp/>"}, call_id=call
    )
    assert states(store) == {entry: "sent"}
    response = store.table("responses").iloc[0]
    assert response["request_id"] == "R-1" and response["response_status"] == "Hold"
    assert response["pescxml"] == "<TResp/>" and not response["inferred"]
    assert store.table("outbox_unresolved").empty


def test_the_same_send_twice_is_refused_unless_forced(store: Store) -> None:
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>")
    store.outbox.mark_sent(entry, status=200, response_body="{}")
    with pytest.raises(DuplicateSend, match="already sent") as caught:
        store.outbox.begin("send_response", "R-1", "<TResp/>")
    assert caught.value.entry_id == entry and caught.value.state == "sent"
    assert isinstance(caught.value, InvalidValue) and isinstance(caught.value, WorkbenchError)
    assert "force=True" in str(caught.value) and "the same payload" in str(caught.value)
    # Another operation, or another request, is not a duplicate.
    store.outbox.begin("send_transcript", "R-1", "<CT/>")
    store.outbox.begin("send_response", "R-2", "<TResp/>")
    forced = store.outbox.begin("send_response", "R-1", "<TResp2/>", force=True)
    assert store.db["outbox"].get(forced)["forced"] == 1


@pytest.mark.parametrize(
    ("mark", "blocks", "message"),
    [
        (None, True, "being sent right now"),
        ("uncertain", True, "may already have reached the partner"),
        ("failed", False, ""),
    ],
)
def test_which_states_block_a_second_send(
    store: Store, mark: str | None, blocks: bool, message: str
) -> None:
    entry = store.outbox.begin("send_acknowledgment", "T-1", "<Ack/>")
    if mark == "uncertain":
        store.outbox.mark(entry, "uncertain", error="ReadTimeout after sending")
    elif mark == "failed":
        store.outbox.mark(entry, "failed", error="400 Cannot find transcript by ID.", status=400)
    if blocks:
        with pytest.raises(DuplicateSend, match=message):
            store.outbox.begin("send_acknowledgment", "T-1", "<Ack/>")
    else:
        again = store.outbox.begin("send_acknowledgment", "T-1", "<Ack/>")
        assert store.db["outbox"].get(again)["forced"] == 0


def test_settled_entries_cannot_be_marked_again(store: Store) -> None:
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>")
    store.outbox.mark(entry, "failed", error="refused")
    with pytest.raises(StoreError, match="already failed"):
        store.outbox.mark_sent(entry, status=200, response_body="{}")
    with pytest.raises(StoreError, match="no outbox entry 999"):
        store.outbox.mark(999, "uncertain", error="x")
    with pytest.raises(StoreError, match=r"CHECK constraint failed: operation IN .*send_response"):
        store.outbox.begin("send_everything", "R-1", "x")


def test_send_transcript_files_the_acknowledgment_received(store: Store) -> None:
    entry = store.outbox.begin("send_transcript", "R-1", {"PESCXML": "<CT/>"}, flat=TRANSCRIPT_FLAT)
    body = {"RequestID": "R-1", "PESCXML": "<Ack/>"}
    call = store.record_call(exchange(method="POST"))
    store.outbox.mark_sent(entry, status=200, response_body=body, call_id=call, reply_flat=ACK_FLAT)
    ack = store.table("acknowledgments").iloc[0]
    assert (ack["direction"], ack["request_id"], ack["call_id"]) == ("received", "R-1", call)
    assert (ack["academic_award_total"], ack["course_total"], ack["pescxml"]) == (2, 19, "<Ack/>")
    check = store.table("ack_totals_check").iloc[0]
    assert (check["transcript_awards"], check["transcript_courses"]) == (2, 20)
    assert not check["totals_match"]  # 19 courses acknowledged, 20 sent


def test_an_unreadable_acknowledgment_files_no_row(store: Store) -> None:
    entry = store.outbox.begin("send_transcript", "R-1", {"PESCXML": "<CT/>"}, flat=TRANSCRIPT_FLAT)
    store.outbox.mark_sent(entry, status=200, response_body="not an acknowledgment")
    assert store.db["outbox"].get(entry)["state"] == "sent"
    assert store.table("acknowledgments").empty  # not a row of NULLs that reads as a mismatch


def test_send_acknowledgment_files_the_acknowledgment_sent(store: Store) -> None:
    store.record_snapshot(None, "consumer_transcripts", listed("T-1"))
    store_detail(store, "consumer_transcripts", "T-1", flat={"award_count": 2, "course_count": 19})
    entry = store.outbox.begin("send_acknowledgment", "T-1", {"PESCXML": "<Ack/>"}, flat=ACK_FLAT)
    assert store.table("transcripts_awaiting_ack").empty  # being acknowledged
    store.outbox.mark_sent(entry, status=200, response_body={"PESCXML": "<Ack/>"})
    ack = store.table("acknowledgments").iloc[0]
    assert ack["direction"] == "sent" and ack["pescxml"] == "<Ack/>"
    assert bool(store.table("ack_totals_check")["totals_match"].iloc[0])


def test_uncertain_still_listed_becomes_failed(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=ago(1))
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>")
    store.outbox.mark(entry, "uncertain", error="ReadTimeout")
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=soon(16))
    assert diff.resolved[0]["state"] == "failed"
    row = store.db["outbox"].get(entry)
    assert row["state"] == "failed" and "did not take effect" in row["resolution"]
    assert row["resolved_at"] is not None
    store.outbox.begin("send_response", "R-1", "<TResp/>")  # a new send is allowed now


def test_uncertain_gone_after_being_listed_becomes_sent_by_inference(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>", flat=RESPONSE_FLAT)
    store.outbox.mark(entry, "uncertain", error="connection dropped after sending")
    diff = store.record_snapshot(None, "supplier_requests", listed("R-2"), taken_at=soon(1))
    assert [d["state"] for d in diff.resolved] == ["sent"]
    assert diff.left == {"R-1": "outbox"}
    row = store.db["outbox"].get(entry)
    assert row["state"] == "sent" and "inferred sent" in row["resolution"]
    response = store.table("responses").iloc[0]
    assert response["inferred"] and response["response_status"] == "Hold"
    with pytest.raises(DuplicateSend):
        store.outbox.begin("send_response", "R-1", "<TResp/>")


def test_uncertain_gone_without_evidence_stays_uncertain(store: Store) -> None:
    entry = store.outbox.begin("send_transcript", "R-1", "<CT/>")  # never listed before
    store.outbox.mark(entry, "uncertain", error="ReadTimeout")
    diff = store.record_snapshot(None, "supplier_requests", [], taken_at=soon(1))
    assert [d["state"] for d in diff.resolved] == ["uncertain"]
    row = store.db["outbox"].get(entry)
    assert row["state"] == "uncertain" and "cannot tell" in row["resolution"]
    assert row["resolved_at"] is None


def test_uncertain_gone_but_explained_by_another_send_stays_uncertain(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=ago(1))
    response = store.outbox.begin("send_response", "R-1", "<TResp/>")
    store.outbox.mark_sent(response, status=200, response_body="{}")
    transcript = store.outbox.begin("send_transcript", "R-1", "<CT/>")
    store.outbox.mark(transcript, "uncertain", error="ReadTimeout")
    store.record_snapshot(None, "supplier_requests", [], taken_at=soon(1))
    row = store.db["outbox"].get(transcript)
    assert row["state"] == "uncertain" and f"entry {response}" in row["resolution"]


def test_lists_taken_before_the_send_turned_uncertain_decide_nothing(store: Store) -> None:
    entry = store.outbox.begin("send_acknowledgment", "T-1", "<Ack/>")
    store.outbox.mark(entry, "uncertain", error="ReadTimeout")
    diff = store.record_snapshot(None, "consumer_transcripts", listed("T-1"), taken_at=ago(600))
    assert diff.resolved == () and store.db["outbox"].get(entry)["state"] == "uncertain"


def test_a_departure_is_explained_by_a_send_that_may_have_taken_effect(store: Store) -> None:
    store.record_snapshot(None, "consumer_transcripts", listed("T-1", "T-2"), taken_at=ago(1))
    store.record_snapshot(None, "supplier_requests", listed("T-1"), taken_at=ago(1))
    store.outbox.begin("send_acknowledgment", "T-1", "<Ack/>")
    failed = store.outbox.begin("send_acknowledgment", "T-2", "<Ack/>")
    store.outbox.mark(failed, "failed", error="refused")
    diff = store.record_snapshot(None, "consumer_transcripts", [], taken_at=soon(1))
    assert diff.left == {"T-1": "outbox", "T-2": "elsewhere"}
    diff = store.record_snapshot(None, "supplier_requests", [], taken_at=soon(1))
    assert diff.left == {"T-1": "elsewhere"}


def test_stale_pending_from_a_dead_process_becomes_uncertain(db_path: Path) -> None:
    with Store(db_path) as store:
        entry = store.outbox.begin("send_response", "R-1", "<TResp/>")
        gone = subprocess.run([sys.executable, "-S", "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        store.db.execute("UPDATE outbox SET pid = ? WHERE id = ?", [int(gone.stdout), entry])
    with Store(db_path) as store:  # opening sweeps: that process is gone
        row = store.db["outbox"].get(entry)
        assert row["state"] == "uncertain" and "interrupted" in row["error"]
        assert store.table("outbox_unresolved")["outbox_id"].tolist() == [entry]


def test_stale_pending_by_age_even_when_the_process_lives(db_path: Path) -> None:
    with Store(db_path) as store:
        entry = store.outbox.begin("send_response", "R-1", "<TResp/>")
        assert store.recover() == []  # our own, fresh: left alone
        old = (pd.Timestamp.now(tz="UTC") - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        store.db.execute("UPDATE outbox SET created_at = ? WHERE id = ?", [old, entry])
        assert store.recover() == [entry]
        assert store.db["outbox"].get(entry)["state"] == "uncertain"


def test_a_late_answer_overrides_an_inference(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=ago(1))
    entry = store.outbox.begin("send_response", "R-1", "<TResp/>")
    store.outbox.mark(entry, "uncertain", error="ReadTimeout")
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=soon(1))
    store.outbox.mark_sent(entry, status=200, response_body="{}")
    assert store.db["outbox"].get(entry)["state"] == "sent"


def test_stale_pending_of_a_run_that_ended(store: Store) -> None:
    run = store.begin_run()
    entry = store.outbox.begin("send_transcript", "R-1", "<CT/>", run_id=run)
    store.finish_run(run, status="failed", summary={"error": "a bug between begin and mark"})
    assert store.recover() == [entry]
