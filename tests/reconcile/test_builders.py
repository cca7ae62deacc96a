"""The builders' flat rows are what ``pesc.flatten`` makes of a document with the same values.

``builders.py`` writes the flat record of each message by hand (a crafted case then changes one
field, or leaves out one no document could); each is held here to ``flatten`` of a document built
from the same values: the request and transcript by ``tests.pesc.factories`` (valid against the
PESC schemas), our response and acknowledgment by ``workbench.pesc``'s builders. A change to
``flatten`` (a renamed key, a value written another way) that the builders do not follow fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.pesc.factories import Request, Student, Transcript, make_request, make_transcript
from tests.reconcile.builders import STUDENT, ack_flat, request_flat, response_flat, transcript_flat
from workbench import pesc, reconcile
from workbench.pesc.fields import KEYS

_STUDENT = Student(**{k.removeprefix("student_"): v for k, v in STUDENT.items()}, gender=None)
REQUEST = make_request(Request(document_id="doc-R1", tracking_id="R1", student=_STUDENT))
TRANSCRIPT = make_transcript(
    Transcript(document_id="ct-R1", tracking_id="R1", student=_STUDENT, record_awards=2,
               record_courses=12, sessions=[])
)  # fmt: skip
RESPONSE = pesc.build_response(
    REQUEST,
    status="Hold",
    hold_reason="Financial",
    planned_release_date="2026-03-20",
    document_id="resp-R1",
)
ACKNOWLEDGMENT = pesc.build_acknowledgment(TRANSCRIPT)

# What the reconciliation reads of each message's flat record: of a request and a transcript, the
# fields the store copies into its row (``pesc.fields.KEYS``); of what we send, ``sent_*``.
SENT = {c.removeprefix("sent_") for c in reconcile.TABLES["outbox"] if c.startswith("sent_")}
READ = {
    "request": set(reconcile.TABLES["requests"]) & set(KEYS["request"]),
    "transcript": (set(reconcile.TABLES["transcripts"]) & set(KEYS["transcript"])) | SENT,
    "response": set(reconcile.TABLES["responses"]) | SENT,
    "acknowledgment": set(reconcile.TABLES["acknowledgments"]) | SENT,
}
# What a builder's row leaves unstated though ``flatten`` fills it and the reconciliation reads
# it: the environment and the TransmissionType (a case states them when it is about them), whom
# a transcript is addressed to (no rule reads it), and the student of what is not a transcript
# (only a transcript we sent is compared with the request's student).
UNSTATED = {"process_code", "transmission_type"}
CASES = [
    ("request", request_flat("R1"), REQUEST, UNSTATED),
    ("transcript", transcript_flat("R1"), TRANSCRIPT,
     UNSTATED | {"destination_org_id", "destination_org_name"}),
    ("response", response_flat("R1", "Hold", hold_reason="Financial", planned="2026-03-20"),
     RESPONSE, set(STUDENT)),
    ("acknowledgment", ack_flat("R1", awards=2, courses=12), ACKNOWLEDGMENT,
     set(STUDENT) - {"student_first_name", "student_last_name"}),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "row", "xml", "unstated"), CASES, ids=[c[0] for c in CASES])
def test_a_builder_writes_what_flatten_makes_of_the_same_document(
    kind: str, row: dict[str, Any], xml: str, unstated: set[str]
) -> None:
    flat = pesc.flatten(xml)

    assert {k: flat.get(k, "not a flatten key") for k in row} == row
    read = {k for k in READ[kind] & flat.keys() if flat[k] is not None}
    assert read - row.keys() == unstated
