"""Versions: every distinct document received for an id is kept; the entity row shows the
current one; a Cancellation closes a request; a re-issued transcript awaits our ack again."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tests.store.helpers import at, listed, store_detail
from workbench.store import Store


def _flat(kind: str, document_id: str, transmission: str = "Original") -> dict[str, Any]:
    return {
        "message_type": kind,
        "document_id": document_id,
        "transmission_type": transmission,
        "request_tracking_id": "C2026030200001",
        "created_at": "2026-03-02T09:00:00Z",
    }


def _detail(item_id: str, xml: str, date: str = "2026-03-01T08:00:00.000Z") -> list[dict]:
    return [{"RequestID": item_id, "RequestDate": date, "PESCXML": xml}]


def _transcript(store: Store, xml: str, document_id: str, transmission: str, minute: int) -> None:
    store_detail(
        store,
        "consumer_transcripts",
        "T-1",
        seen_at=at(minute),
        detail=_detail("T-1", xml),
        flat=_flat("CollegeTranscript", document_id, transmission),
    )


def test_each_distinct_document_is_a_version_and_the_row_shows_the_current(store: Store) -> None:
    _transcript(store, "<CollegeTranscript>1</CollegeTranscript>", "CT-1", "Original", 0)
    _transcript(store, "<CollegeTranscript>1</CollegeTranscript>", "CT-1", "Original", 5)  # again
    _transcript(store, "<CollegeTranscript>2</CollegeTranscript>", "CT-2", "Reissue", 10)

    versions = store.versions("T-1")
    assert versions["version"].tolist() == [1, 2]
    assert versions["document_id"].tolist() == ["CT-1", "CT-2"]
    assert versions["transmission_type"].tolist() == ["Original", "Reissue"]
    assert versions["first_seen_at"].tolist() == [pd.Timestamp(at(0)), pd.Timestamp(at(10))]
    assert versions["item_id"].dtype == "string"
    row = store.table("transcripts_received").iloc[0]
    assert (row["current_version"], row["version_count"]) == (2, 2)
    assert row["document_id"] == "CT-2"
    assert store.document("T-1") == "<CollegeTranscript>2</CollegeTranscript>"
    assert store.document("T-1", version=1) == "<CollegeTranscript>1</CollegeTranscript>"
    assert store.document("T-1", version=3) is None


def test_a_document_sent_escaped_comes_back_unescaped_once(store: Store) -> None:
    store_detail(
        store,
        "supplier_requests",
        "R-1",
        detail=_detail("R-1", "&lt;TranscriptRequest a=&quot;&amp;amp;&quot;/&gt;"),
        flat=_flat("TranscriptRequest", "DOC-1"),
    )

    assert store.document("R-1") == '<TranscriptRequest a="&amp;"/>'
    assert store.versions("R-1")["pescxml"].tolist() == ['<TranscriptRequest a="&amp;"/>']


def test_a_cancellation_closes_the_request(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=at(0))
    for minute, (document_id, kind) in enumerate(
        [("DOC-1", "Original"), ("DOC-2", "Cancellation")]
    ):
        store_detail(
            store,
            "supplier_requests",
            "R-1",
            seen_at=at(minute + 1),
            detail=_detail("R-1", f"<TranscriptRequest>{kind}</TranscriptRequest>"),
            flat=_flat("TranscriptRequest", document_id, kind),
        )
        if kind == "Original":
            assert store.table("open_requests")["request_id"].tolist() == ["R-1"]

    row = store.table("transcript_requests").iloc[0]
    assert row["cancelled_at"] == pd.Timestamp(at(2))
    assert row["on_list"]  # still listed until the partner drops it, but closed
    assert store.table("open_requests").empty


def test_a_transcript_reissued_after_our_ack_awaits_our_ack_again(store: Store) -> None:
    store.record_snapshot(None, "consumer_transcripts", listed("T-1"), taken_at=at(0))
    _transcript(store, "<CollegeTranscript>1</CollegeTranscript>", "CT-1", "Original", 1)
    entry = store.outbox.begin("send_acknowledgment", "T-1", "<Acknowledgment/>")
    store.outbox.mark_sent(entry, status=200, response_body="{}")
    store.record_snapshot(None, "consumer_transcripts", [], taken_at=at(2))
    assert store.table("transcripts_awaiting_ack").empty

    # Re-issued: back on the list with a new document, fetched after our acknowledgment.
    store.record_snapshot(None, "consumer_transcripts", listed("T-1", day=3), taken_at=at(3))
    store_detail(
        store,
        "consumer_transcripts",
        "T-1",
        detail=_detail("T-1", "<CollegeTranscript>2</CollegeTranscript>"),
        flat=_flat("CollegeTranscript", "CT-2", "Reissue"),
    )  # seen now: after the acknowledgment (the outbox keeps real time)

    awaiting = store.table("transcripts_awaiting_ack")
    assert awaiting["transcript_id"].tolist() == ["T-1"]
    assert awaiting["document_id"].tolist() == ["CT-2"]


def test_the_timeline_shows_each_version_received(store: Store) -> None:
    _transcript(store, "<CollegeTranscript>1</CollegeTranscript>", "CT-1", "Original", 0)
    _transcript(store, "<CollegeTranscript>2</CollegeTranscript>", "CT-2", "Reissue", 10)

    timeline = store.timeline("T-1")
    documents = timeline[timeline["kind"] == "document"]
    assert documents["description"].tolist() == [
        "version 1 received: Original, document CT-1",
        "version 2 received: Reissue, document CT-2",
    ]
    assert documents["list"].tolist() == ["consumer_transcripts"] * 2


_MINUTES = (at(minute) for minute in range(10**6))  # each fetch a minute after the last


def _fetched(store: Store, list_name: str, item_id: str, xml: str, listed_as: str, **flat) -> None:
    """A detail fetched by a pull for the list's RequestDate ``listed_as``."""
    store.write_details(
        [
            store.prepare_detail(
                list_name,
                item_id,
                request_date=listed_as,
                listed_date=listed_as,
                seen_at=next(_MINUTES),
                detail=_detail(item_id, xml),
                flat=flat["flat"],
                children=None,
                call_id=None,
                parse_error=None,
                validation=None,
            )
        ]
    )


def test_an_older_document_served_again_never_replaces_the_current_one(store: Store) -> None:
    """A lagging partner answers a new RequestDate with version 1 again: nothing new is kept,
    the row stays on version 2, and the detail is fetched once more, not at every pull."""
    one, two = (
        "<CollegeTranscript>1</CollegeTranscript>",
        "<CollegeTranscript>2</CollegeTranscript>",
    )
    ct1, ct2 = _flat("CollegeTranscript", "CT-1"), _flat("CollegeTranscript", "CT-2", "Reissue")
    d1, d2, d3 = "2026-03-02T09:00:00Z", "2026-03-03T10:00:00Z", "2026-03-04T10:00:00Z"
    _fetched(store, "consumer_transcripts", "T-1", one, d1, flat=ct1)
    _fetched(store, "consumer_transcripts", "T-1", two, d2, flat=ct2)

    _fetched(store, "consumer_transcripts", "T-1", one, d3, flat=ct1)  # stale, for d3

    row = store.table("transcripts_received").iloc[0]
    assert (row["document_id"], row["current_version"], row["version_count"]) == ("CT-2", 2, 2)
    assert row["transmission_type"] == "Reissue"
    assert store.document("T-1") == two
    assert store.versions("T-1")["document_id"].tolist() == ["CT-1", "CT-2"]
    assert "older" in row["detail_error"]
    assert store.missing_details("consumer_transcripts", ["T-1"], {"T-1": d3}) == ["T-1"]

    _fetched(store, "consumer_transcripts", "T-1", one, d3, flat=ct1)  # stale once more
    assert store.missing_details("consumer_transcripts", ["T-1"], {"T-1": d3}) == []
    assert store.table("transcripts_received").iloc[0]["document_id"] == "CT-2"

    _fetched(store, "consumer_transcripts", "T-1", two, d3, flat=ct2)  # the current again
    row = store.table("transcripts_received").iloc[0]
    assert (row["document_id"], row["current_version"]) == ("CT-2", 2)
    assert pd.isna(row["detail_error"])


def test_a_cancelled_request_stays_closed_when_its_original_comes_back(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=at(0))
    original = ("<TranscriptRequest>1</TranscriptRequest>", _flat("TranscriptRequest", "DOC-1"))
    cancel = _flat("TranscriptRequest", "DOC-2", "Cancellation")
    _fetched(store, "supplier_requests", "R-1", original[0], "2026-03-02T09:00:00Z",
             flat=original[1])  # fmt: skip
    _fetched(store, "supplier_requests", "R-1", "<TranscriptRequest>2</TranscriptRequest>",
             "2026-03-03T10:00:00Z", flat=cancel)  # fmt: skip
    assert store.table("open_requests").empty

    _fetched(store, "supplier_requests", "R-1", original[0], "2026-03-04T10:00:00Z",
             flat=original[1])  # fmt: skip

    assert store.table("open_requests").empty
    row = store.table("transcript_requests").iloc[0]
    assert (row["document_id"], row["current_version"]) == ("DOC-2", 2)
    assert pd.notna(row["cancelled_at"])
