"""A morning's work against the sandbox (:func:`act_out`), and :func:`transcript_for`, which
writes a transcript for a request's student (README, "Acting from the command line")."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from workbench import pesc
from workbench.errors import TransportError
from workbench.pesc import elements as el
from workbench.spec import PROCESS_CODES

if TYPE_CHECKING:
    from workbench.client import Workbench

# (status, hold reason, days until the planned release) of the responses act_out sends.
RESPONSES = (
    ("Hold", "Financial", 14),
    ("Hold", "TranscriptFee", -2),  # a hold whose planned release is already past
    ("TranscriptRequestReceived", None, None),
    ("NoRecord", None, None),
)
TRANSCRIPTS, ACKNOWLEDGMENTS = 4, 3  # and one more transcript, of another student


def act_out(w: Workbench, *, seed: int = 1) -> dict[str, list[str]]:
    """Send a realistic mix through ``w``'s outbox (after a pull); the ids acted on, by what was
    done. Newest requests first (the oldest run over the SLA); one transcript of another student;
    on the embedded sandbox, one send's answer lost after the partner processed it."""
    usable = "has_detail AND parse_error IS NULL ORDER BY request_date DESC"
    ids = w.store.table("open_requests", where=usable)["request_id"].astype(str).tolist()
    needed = len(RESPONSES) + TRANSCRIPTS + 2
    if len(ids) < needed:
        raise ValueError(
            f"act_out needs {needed} open requests with stored details; the store has "
            f"{len(ids)}. Pull first, or start the sandbox with more initial_requests."
        )
    kinds = "response transcript transcript_wrong_student transcript_uncertain acknowledgment"
    acted: dict[str, list[str]] = {kind: [] for kind in kinds.split()}
    now = datetime.now(UTC)
    for (status, reason, days), rid in zip(RESPONSES, ids, strict=False):
        release = (now + timedelta(days=days)).date() if days is not None else None
        response = pesc.build_response(
            _request_document(w, rid),
            status=status,
            hold_reason=reason,
            planned_release_date=release,
        )
        w.supplier.send_response(rid, response)
        acted["response"].append(rid)
    rest = ids[len(RESPONSES) :]
    for index, rid in enumerate(rest[:TRANSCRIPTS]):
        w.supplier.send_transcript(
            rid, transcript_for(_request_document(w, rid), rid, seed=seed, index=index)
        )
        acted["transcript"].append(rid)
    wrong = rest[TRANSCRIPTS]
    request = pesc.flatten(pesc.parse(_request_document(w, wrong)))
    tracking, code = request.get("request_tracking_id"), request["process_code"]
    another = transcript_for(None, str(tracking or wrong), seed=seed, index=97, process_code=code)
    w.supplier.send_transcript(wrong, another, check=False)  # the check would refuse it
    acted["transcript_wrong_student"].append(wrong)
    if w.sandbox is not None:
        lost = rest[TRANSCRIPTS + 1]
        transcript = transcript_for(_request_document(w, lost), lost, seed=seed, index=98)
        w.sandbox.set_faults(drop_after_rate=1.0, path_pattern=lost)
        try:
            w.supplier.send_transcript(lost, transcript)
        except TransportError:
            acted["transcript_uncertain"].append(lost)
        finally:
            w.sandbox.set_faults(drop_after_rate=0.0, path_pattern="")
    waiting = w.store.table("transcripts_awaiting_ack", where=f"has_detail LIMIT {ACKNOWLEDGMENTS}")
    for tid in waiting["transcript_id"].astype(str):
        w.consumer.send_acknowledgment(tid)
        acted["acknowledgment"].append(tid)
    return acted


def transcript_for(
    request_xml: str | None,
    request_id: str,
    *,
    seed: int = 1,
    index: int = 0,
    process_code: str | None = None,
) -> str:
    """A CollegeTranscript answering ``request_xml`` (its tracking id, student, namespaces and
    process code); without one, of a generated student, tracked as ``request_id``."""
    from lxml import etree

    from workbench.sandbox import generator

    request = pesc.parse(request_xml) if request_xml is not None else None
    fields = pesc.flatten(request) if request is not None else {}
    code = str(fields.get("process_code") or process_code or "PRODUCTION").upper()
    xml = generator.college_transcript_xml(
        seed,
        900 + index,
        request_id=str(fields.get("request_tracking_id") or request_id),
        created=datetime.now(UTC),
        namespaces="v1.1.0" if request is not None and request.version == "1.1.0" else "v1.0.0",
        process_code=code if code in PROCESS_CODES else "PRODUCTION",
    )
    if request is None:
        return xml
    transcript = etree.fromstring(xml.encode())
    theirs = el.find(request.root, "Request", "RequestedStudent", "Person")
    ours = el.find(transcript, "Student", "Person")
    if theirs is None or ours is None:
        raise ValueError("the request has no Request/RequestedStudent/Person")
    ours.getparent().replace(ours, copy.deepcopy(theirs))
    return etree.tostring(transcript, encoding="unicode")


def _request_document(w: Workbench, request_id: str) -> str:
    document = w.store.document(request_id, list_name="supplier_requests")
    return (
        document if document is not None else str(w.supplier.request(request_id).loc[0, "pescxml"])
    )
