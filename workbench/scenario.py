"""A morning's work against the sandbox: what the demo and the tests send through the outbox.

After a pull, :func:`act_out` answers some requests (holds, other statuses), sends transcripts
(one of them another student's: the mistake a reconciliation must catch), acknowledges some of
the transcripts received, and, when it can reach the embedded sandbox, loses the answer to one
send so that it stays ``uncertain`` until the next pull settles it. What it leaves alone stays
awaiting a response, and ages.

>>> with wb.connect("sandbox", db="data/demo.db") as w:  # doctest: +SKIP
...     w.pull(progress=False)
...     acted = act_out(w)
...     acted["transcript_wrong_student"]
['9F3A...']
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import pandas as pd
from lxml import etree

from workbench import pesc
from workbench.errors import TransportError
from workbench.spec import PROCESS_CODES

if TYPE_CHECKING:
    from workbench.client import Workbench

# (status, hold reason, days until the planned release) of the responses sent, in order.
RESPONSES = (
    ("Hold", "Financial", 14),
    ("Hold", "TranscriptFee", -2),  # a hold whose planned release is already past
    ("TranscriptRequestReceived", None, None),
    ("NoRecord", None, None),
)
TRANSCRIPTS = 4  # of the requested student; one more goes out of another student
ACKNOWLEDGMENTS = 3


def act_out(w: Workbench, *, seed: int = 1) -> dict[str, list[str]]:
    """Send a realistic mix through ``w``'s outbox; the ids acted on, by what was done.

    Needs stored request details (pull first). Requests are taken newest first, so the oldest
    stay open and run over the SLA. With ``w.sandbox`` (the embedded sandbox), one transcript's
    answer is dropped after the partner processed it: an ``uncertain`` send.
    """
    requests = w.store.table("open_requests")
    ids = _newest_first(requests)
    needed = len(RESPONSES) + TRANSCRIPTS + 2
    if len(ids) < needed:
        raise ValueError(
            f"act_out needs {needed} open requests with stored details; the store has "
            f"{len(ids)}. Pull first, or start the sandbox with more initial_requests."
        )
    acted: dict[str, list[str]] = {
        "response": [],
        "transcript": [],
        "transcript_wrong_student": [],
        "transcript_uncertain": [],
        "acknowledgment": [],
    }
    now = datetime.now(UTC)
    for (status, reason, days), rid in zip(RESPONSES, ids, strict=False):
        release = (now + timedelta(days=days)).date() if days is not None else None
        document = _request_document(w, rid)
        w.supplier.send_response(
            rid,
            pesc.build_response(
                document, status=status, hold_reason=reason, planned_release_date=release
            ),
        )
        acted["response"].append(rid)
    rest = ids[len(RESPONSES) :]
    for index, rid in enumerate(rest[:TRANSCRIPTS]):
        document = _request_document(w, rid)
        w.supplier.send_transcript(rid, transcript_for(document, rid, seed=seed, index=index))
        acted["transcript"].append(rid)
    wrong = rest[TRANSCRIPTS]
    # The mistake the report must catch: the send's student check would refuse it.
    request = pesc.flatten(pesc.parse(_request_document(w, wrong)))
    tracking, code = request.get("request_tracking_id"), request["process_code"]
    another = transcript_for(None, str(tracking or wrong), seed=seed, index=97, process_code=code)
    w.supplier.send_transcript(wrong, another, check=False)
    acted["transcript_wrong_student"].append(wrong)
    if w.sandbox is not None:
        lost = rest[TRANSCRIPTS + 1]
        document = _request_document(w, lost)
        w.sandbox.set_faults(drop_after_rate=1.0, path_pattern=lost)
        try:
            w.supplier.send_transcript(lost, transcript_for(document, lost, seed=seed, index=98))
        except TransportError:
            acted["transcript_uncertain"].append(lost)
        finally:
            w.sandbox.set_faults(drop_after_rate=0.0, path_pattern="")
    waiting = w.store.table("transcripts_awaiting_ack")
    readable = waiting[waiting["has_detail"].astype(bool)]
    for tid in readable["transcript_id"].astype(str).head(ACKNOWLEDGMENTS):
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
    """A CollegeTranscript answering the request ``request_xml``: its RequestTrackingID, the
    student it asks for, its namespace family and its DocumentProcessCode (``process_code``
    when it states none; else PRODUCTION). Without a request (None), of a generated other
    student, tracked as ``request_id``; the API's id stands in for a request with no
    tracking id too (under the "guid" id scheme the two differ)."""
    from workbench.sandbox import generator

    request = pesc.parse(request_xml) if request_xml is not None else None
    family = "v1.1.0" if request is not None and request.version == "1.1.0" else "v1.0.0"
    fields = pesc.flatten(request) if request is not None else {}
    tracking = fields.get("request_tracking_id") or request_id
    code = str(fields.get("process_code") or process_code or "PRODUCTION").upper()
    xml = generator.college_transcript_xml(
        seed,
        900 + index,
        request_id=str(tracking),
        created=datetime.now(UTC),
        namespaces=family,
        process_code=code if code in PROCESS_CODES else "PRODUCTION",
    )
    if request is None:
        return xml
    transcript = etree.fromstring(xml.encode())
    theirs = _first(request.root, "Request", "RequestedStudent", "Person")
    ours = _first(transcript, "Student", "Person")
    ours.getparent().replace(ours, copy.deepcopy(theirs))
    return etree.tostring(transcript, encoding="unicode")


def _request_document(w: Workbench, request_id: str) -> str:
    document = w.store.document(request_id, list_name="supplier_requests")
    if document is None:
        document = str(w.supplier.request(request_id).loc[0, "pescxml"])
    return document


def _newest_first(requests: pd.DataFrame) -> list[str]:
    """Open requests whose detail is stored and readable, newest first."""
    usable = requests[requests["has_detail"].astype(bool) & requests["parse_error"].isna()]
    return usable.sort_values("request_date", ascending=False)["request_id"].astype(str).tolist()


def _first(root: etree._Element, *path: str) -> etree._Element:
    found = root.xpath("/*/" + "/".join(f"*[local-name()='{p}']" for p in path))
    if not found:
        raise ValueError(f"the document has no {'/'.join(path)}")
    return found[0]
