"""The outbox and document versions: a second acknowledgment of one transcript is a new send
when it acknowledges another version (DocumentID); settling from the lists stays right with
several acknowledgments for one id, and a transcript back on the list with a new document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

import workbench as wb
from tests.store.helpers import listed
from workbench.store import Store

LIST = "consumer_transcripts"
ACK = "send_acknowledgment"


@pytest.fixture
def clock() -> Iterator[Callable[[float], datetime]]:
    """Move the clock (time-machine) ``minutes`` from a fixed start; the time it now shows."""
    start = datetime.now(UTC)
    with time_machine.travel(start, tick=False) as traveller:

        def set_to(minutes: float) -> datetime:
            moment = start + timedelta(minutes=minutes)
            traveller.move_to(moment, tick=False)
            return moment

        yield set_to


def ack(store: Store, document_id: str | None, *, force: bool = False, tid: str = "T-1") -> int:
    flat = {"document_id": document_id} if document_id else {}
    return store.outbox.begin(ACK, tid, f"<Ack>{document_id}</Ack>", flat=flat, force=force)


def sent(store: Store, document_id: str | None) -> int:
    entry = ack(store, document_id)
    store.outbox.mark_sent(entry, status=200, response_body="[]")
    return entry


def test_an_acknowledgment_of_another_version_is_a_new_send(store: Store) -> None:
    first = sent(store, "CT-1")
    second = ack(store, "CT-2")  # the re-issued transcript's DocumentID
    assert second != first and store.db["outbox"].get(second)["forced"] == 0


def test_the_same_version_twice_is_refused_unless_forced(store: Store) -> None:
    sent(store, "CT-1")
    sent(store, "CT-2")
    for document_id in ("CT-1", "CT-2"):
        with pytest.raises(wb.DuplicateSend, match="acknowledges DocumentID"):
            ack(store, document_id)
    forced = ack(store, "CT-2", force=True)
    assert store.db["outbox"].get(forced)["forced"] == 1


def test_an_acknowledgment_of_no_known_version_keeps_one_per_transcript(store: Store) -> None:
    sent(store, None)  # which version it acknowledges is unknown: it may be any
    with pytest.raises(wb.DuplicateSend):
        ack(store, "CT-2")
    ack(store, "CT-1", tid="T-2")
    with pytest.raises(wb.DuplicateSend):
        ack(store, None, tid="T-2")  # neither is this one's


def test_a_failed_acknowledgment_does_not_block_its_version(store: Store) -> None:
    entry = ack(store, "CT-1")
    store.outbox.mark(entry, "failed", error="refused", status=400)
    ack(store, "CT-1")


def test_responses_and_transcripts_keep_one_per_request(store: Store) -> None:
    for operation in ("send_response", "send_transcript"):
        store.outbox.begin(operation, "R-1", "<Doc/>", flat={"document_id": "D-1"})
        with pytest.raises(wb.DuplicateSend):
            store.outbox.begin(operation, "R-1", "<Doc/>", flat={"document_id": "D-2"})


def test_a_transcript_back_with_a_new_document_does_not_fail_an_uncertain_ack(
    store: Store, clock: Callable[[float], datetime]
) -> None:
    store.record_snapshot(None, LIST, listed("T-1", day=1), taken_at=clock(-60))
    clock(0)
    entry = ack(store, "CT-1")
    store.outbox.mark(entry, "uncertain", error="connection dropped after sending")
    # Re-issued: listed again, long past the margin, but with a new RequestDate.
    diff = store.record_snapshot(None, LIST, listed("T-1", day=2), taken_at=clock(30))
    assert [d["state"] for d in diff.resolved] == ["uncertain"]
    assert "new document" in store.db["outbox"].get(entry)["resolution"]
    with pytest.raises(wb.DuplicateSend):
        ack(store, "CT-1")  # may have reached the partner: still not to be resent
    ack(store, "CT-2")


def test_an_acknowledgment_of_the_reissue_is_inferred_sent_when_it_leaves(
    store: Store, clock: Callable[[float], datetime]
) -> None:
    store.record_snapshot(None, LIST, listed("T-1", day=1), taken_at=clock(-120))
    clock(-119)
    sent(store, "CT-1")
    gone = store.record_snapshot(None, LIST, [], taken_at=clock(-90))
    assert gone.left == {"T-1": "outbox"}
    store.record_snapshot(None, LIST, listed("T-1", day=2), taken_at=clock(-30))  # re-issued
    clock(0)
    entry = ack(store, "CT-2")
    store.outbox.mark(entry, "uncertain", error="read timeout")

    diff = store.record_snapshot(None, LIST, [], taken_at=clock(5))

    assert [(d["entry_id"], d["state"]) for d in diff.resolved] == [(entry, "sent")]
    assert diff.left == {"T-1": "outbox"}


def test_a_reissue_closed_elsewhere_is_not_explained_by_the_old_ack(
    store: Store, clock: Callable[[float], datetime]
) -> None:
    store.record_snapshot(None, LIST, listed("T-1", day=1), taken_at=clock(-10))
    clock(0)
    sent(store, "CT-1")
    assert store.record_snapshot(None, LIST, [], taken_at=clock(5)).left == {"T-1": "outbox"}
    store.record_snapshot(None, LIST, listed("T-1", day=2), taken_at=clock(60))  # re-issued
    diff = store.record_snapshot(None, LIST, [], taken_at=clock(120))  # someone else acked it
    assert diff.left == {"T-1": "elsewhere"}
