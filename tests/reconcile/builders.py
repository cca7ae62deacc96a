"""Crafted store states for the reconciliation tests, built through the store's own API.

:class:`Partner` drives a real :class:`~workbench.store.Store`: what the partner's lists show
(``list_requests``, ``list_transcripts``), the documents it hands us (``request``,
``transcript``) and what we send back through the outbox (``respond``, ``send_transcript``,
``acknowledge``). Flat records are written the way ``workbench.pesc.flatten`` writes them
(``test_builders.py`` holds each to ``flatten`` of a document with the same values).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from tests.store.helpers import store_detail
from workbench.store import SnapshotDiff, Store

NOW = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
STUDENT = {
    "student_first_name": "Emma",
    "student_last_name": "Tremblay",
    "student_birth_date": "1999-04-14",
    "student_oen": "123456789",
    "student_ocas_account": "20278453",
    "student_ocas_application": "266133020",
    "student_school_assigned_id": "228528460",
}


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def request_flat(request_id: str, **changes: Any) -> dict[str, Any]:
    """A flattened TranscriptRequest from OCAS to us."""
    return {
        "message_type": "TranscriptRequest",
        "document_id": f"doc-{request_id}",
        "request_tracking_id": request_id,
        "source_org_id_type": "MutuallyDefined",
        "source_org_id": "OCAS",
        "source_org_name": "OCAS Application Services Inc.",
        "destination_org_id": "555555",
        "destination_org_name": "Demo College",
        **STUDENT,
        **changes,
    }


def transcript_flat(request_id: str, *, awards: int = 2, courses: int = 12, **changes: Any):
    """A flattened CollegeTranscript (what we send for a request, or what we receive)."""
    return {
        "message_type": "CollegeTranscript",
        "document_id": f"ct-{request_id}",
        "request_tracking_id": request_id,
        "document_type_code": "RequestedRecord",
        "source_org_id": "555555",
        "source_org_name": "Demo College",
        "award_count": awards,
        "course_count": courses,
        **STUDENT,
        **changes,
    }


def response_flat(
    request_id: str, status: str, *, hold_reason: str | None = None, planned: str | None = None
) -> dict[str, Any]:
    """A flattened TranscriptResponse of ours to a request."""
    return {
        "message_type": "TranscriptResponse",
        "document_id": f"resp-{request_id}",
        "request_tracking_id": request_id,
        "response_status": status,
        "hold_reason": hold_reason,
        "planned_release_date": planned,
    }


def ack_flat(request_id: str, *, awards: int | None, courses: int | None, **changes: Any):
    """A flattened Acknowledgment carrying the totals its sender counted."""
    return {
        "message_type": "Acknowledgment",
        "document_id": f"ct-{request_id}",
        "request_tracking_id": request_id,
        "academic_award_total": awards,
        "course_total": courses,
        "student_first_name": STUDENT["student_first_name"],
        "student_last_name": STUDENT["student_last_name"],
        **changes,
    }


class Partner:
    """A store, and what the partner showed and we sent, step by step."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.minute = 0
        self.dates: dict[str, datetime] = {}  # each item's RequestDate, as the lists show it
        self.last_send: datetime | None = None  # just after the latest send, by the real clock

    def _tick(self) -> datetime:
        self.minute += 1
        tick = days_ago(1) + timedelta(minutes=self.minute)  # snapshot times, in order
        # Sends are stamped by the real clock: a list taken after one is requested after it,
        # or it could not speak of it (workbench/store/outbox.py).
        return max(tick, self.last_send) if self.last_send else tick

    # -- what the partner shows us --------------------------------------------------------

    def list_requests(self, *ids: str) -> SnapshotDiff:
        """A complete supplier list: these ids, nothing else."""
        return self._list("supplier_requests", ids)

    def list_transcripts(self, *ids: str) -> None:
        """A complete consumer list: these ids, nothing else."""
        self._list("consumer_transcripts", ids)

    def _list(self, name: str, ids: tuple[str, ...]) -> SnapshotDiff:
        items = [
            {"RequestID": i, "RequestDate": self.dates.get(i, days_ago(1)).isoformat()} for i in ids
        ]
        return self.store.record_snapshot(None, name, items, taken_at=self._tick())

    def request(
        self, request_id: str, *, days: float = 1, flat: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        """Store a request's detail, dated ``days`` before NOW."""
        self.dates[request_id] = days_ago(days)
        store_detail(
            self.store,
            "supplier_requests",
            request_id,
            request_date=days_ago(days),
            seen_at=days_ago(days),
            detail={"RequestID": request_id, "PESCXML": "<TranscriptRequest/>"},
            flat=flat if flat is not None else request_flat(request_id),
            validation=kw.pop("validation", {"status": "valid", "errors": []}),
            **kw,
        )

    def transcript(
        self, transcript_id: str, *, days: float = 1, flat: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        """Store a received transcript's detail, dated ``days`` before NOW."""
        self.dates[transcript_id] = days_ago(days)
        store_detail(
            self.store,
            "consumer_transcripts",
            transcript_id,
            request_date=days_ago(days),
            seen_at=days_ago(days),
            detail={"RequestID": transcript_id, "PESCXML": "<CollegeTranscript/>"},
            flat=flat
            if flat is not None
            else transcript_flat(
                transcript_id, source_org_id="354540", source_org_name="St. Brendan's College"
            ),
            validation=kw.pop("validation", {"status": "valid", "errors": []}),
            **kw,
        )

    def new_version(
        self,
        item_id: str,
        transmission_type: str,
        *,
        days: float = 0.5,
        seen_at: datetime | None = None,
        **changes: Any,
    ) -> str:
        """A new document for a request or transcript already stored (Resubmission, Reissue,
        Cancellation): a new DocumentID and RequestDate, the same tracking id. Its DocumentID."""
        request = not self.store.table(
            "transcript_requests", where="request_id = ?", params=[item_id]
        ).empty
        table = "transcript_requests" if request else "transcripts_received"
        column = "request_id" if request else "transcript_id"
        current = self.store.table(table, where=f"{column} = ?", params=[item_id]).iloc[0]
        document_id = f"{current['document_id']}-{transmission_type}"
        kept = {k: current[k] for k in STUDENT if pd.notna(current[k])}  # the same student
        fields = {**kept, "document_id": document_id, "transmission_type": transmission_type,
                  "request_tracking_id": current["request_tracking_id"], **changes}  # fmt: skip
        if request:
            flat = request_flat(item_id, **fields)
        else:
            source = {k: current[k] for k in ("source_org_id", "source_org_name")}
            flat = transcript_flat(item_id, **source, **fields)
        self.dates[item_id] = days_ago(days)
        list_name = "supplier_requests" if request else "consumer_transcripts"
        root = "TranscriptRequest" if request else "CollegeTranscript"
        store_detail(
            self.store,
            list_name,
            item_id,
            request_date=days_ago(days),
            seen_at=seen_at or days_ago(days),
            detail={"RequestID": item_id, "PESCXML": f'<{root} id="{document_id}"/>'},
            flat=flat,
            validation={"status": "valid", "errors": []},
        )
        return document_id

    # -- what we send -----------------------------------------------------------------------

    def respond(
        self,
        request_id: str,
        status: str = "TranscriptRequestReceived",
        *,
        hold_reason: str | None = None,
        planned: str | None = None,
        state: str = "sent",
        tracking: str | None = None,
    ) -> int:
        """Send a TranscriptResponse; ``tracking``: its RequestTrackingID (default the id)."""
        flat = response_flat(request_id, status, hold_reason=hold_reason, planned=planned)
        if tracking:
            flat["request_tracking_id"] = tracking
        return self._send("send_response", request_id, flat, state=state)

    def send_transcript(
        self,
        request_id: str,
        *,
        awards: int = 2,
        courses: int = 12,
        ack: tuple[int | None, int | None] | None = (2, 12),
        state: str = "sent",
        ack_changes: dict[str, Any] | None = None,
        **changes: Any,
    ) -> int:
        """Send a transcript; ``ack``: the totals the partner's acknowledgment reports
        (``ack_changes``: its other fields)."""
        flat = transcript_flat(request_id, awards=awards, courses=courses, **changes)
        reply = None
        if ack is not None:
            fields = {"document_id": flat["document_id"], **(ack_changes or {})}
            reply = ack_flat(request_id, awards=ack[0], courses=ack[1], **fields)
        return self._send("send_transcript", request_id, flat, state=state, reply=reply)

    def acknowledge(
        self,
        transcript_id: str,
        *,
        awards: int = 2,
        courses: int = 12,
        state: str = "sent",
        **changes: Any,
    ) -> int:
        """Send our acknowledgment of a transcript; ``changes``: its fields (``tracking``:
        its RequestTrackingID, default the id)."""
        if "tracking" in changes:
            changes["request_tracking_id"] = changes.pop("tracking")
        flat = ack_flat(transcript_id, awards=awards, courses=courses, **changes)
        return self._send("send_acknowledgment", transcript_id, flat, state=state)

    def _send(
        self,
        operation: str,
        request_id: str,
        flat: dict[str, Any],
        *,
        state: str,
        reply: dict[str, Any] | None = None,
    ) -> int:
        outbox = self.store.outbox
        entry = outbox.begin(operation, request_id, f"<{operation}/>", flat=flat, force=True)
        if state == "sent":
            outbox.mark_sent(entry, status=200, response_body="{}", reply_flat=reply)
        elif state == "uncertain":
            outbox.mark(entry, "uncertain", error="connection dropped after sending")
        elif state == "failed":
            outbox.mark(entry, "failed", error="HTTP 400: refused", status=400)
        else:
            assert state == "pending", state
        self.last_send = datetime.now(UTC) + timedelta(milliseconds=1)
        return entry
