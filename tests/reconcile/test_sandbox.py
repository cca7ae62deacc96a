"""End to end: pull from a sandbox, send through the outbox, pull again, reconcile; under
both id schemes (the API id is the tracking id, or a GUID distinct from it)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from lxml import etree

import workbench as wb
from workbench import pesc, reconcile
from workbench.sandbox import Sandbox, generator


@pytest.fixture(params=["tracking", "guid"])
def sandbox(request: pytest.FixtureRequest, sandbox_factory) -> Sandbox:
    return sandbox_factory(id_scheme=request.param)


def _person(root: etree._Element, *path: str) -> etree._Element:
    found = root.xpath("/*/" + "/".join(f"*[local-name()='{p}']" for p in path))
    assert found, path
    return found[0]


def _transcript(sb: Sandbox, request_xml: str, request_id: str, *, same_student: bool) -> str:
    """A CollegeTranscript filling ``request_id``: of the requested student, or of another."""
    tracking = sb.state.requests[request_id].tracking  # what the documents are keyed by
    xml = generator.college_transcript_xml(
        sb.settings.seed, 900, request_id=tracking, created=sb.state.now
    )
    if not same_student:
        return xml
    transcript = etree.fromstring(xml.encode())
    request = etree.fromstring(request_xml.encode())
    theirs = _person(request, "Request", "RequestedStudent", "Person")
    ours = _person(transcript, "Student", "Person")
    ours.getparent().replace(ours, copy.deepcopy(theirs))
    return etree.tostring(transcript, encoding="unicode")


def test_reconcile_what_we_did_against_the_sandbox(sandbox: Sandbox, tmp_path: Path) -> None:
    sb = sandbox
    w = wb.connect(env=sb.env, db=tmp_path / "x.db")
    try:
        w.pull(progress=False)
        ids = sb.pending_request_ids()
        held, good, wrong, dropped = ids[-1], ids[-2], ids[-3], ids[-4]
        documents = {i: w.supplier.request(i).loc[0, "pescxml"] for i in (held, good, wrong)}
        w.supplier.send_response(held, pesc.build_response(
            documents[held], status="Hold", hold_reason="Financial",
            planned_release_date="2026-03-01"))  # fmt: skip
        w.supplier.send_transcript(good, _transcript(sb, documents[good], good, same_student=True))
        # Another student's transcript: refused unless unchecked, caught by reconciliation.
        with pytest.raises(wb.InvalidValue, match="may be another student's transcript"):
            w.supplier.send_transcript(wrong, _transcript(sb, "", wrong, same_student=False))
        w.supplier.send_transcript(
            wrong, _transcript(sb, "", wrong, same_student=False), check=False
        )
        sb.set_faults(drop_after_rate=1.0)  # processed by the partner, the answer is lost
        with pytest.raises(wb.TransportError):
            w.supplier.send_transcript(
                dropped, _transcript(sb, "", dropped, same_student=False), check=False
            )
        sb.set_faults(drop_after_rate=0.0)
        acknowledged = sb.pending_transcript_ids()[0]
        w.consumer.send_acknowledgment(acknowledged)
        sb.settings.closed_elsewhere_per_hour = 1
        sb.advance(1)  # the partner moves on: one request answered by someone else
        elsewhere = [i for i, item in sb.state.requests.items() if item.closed_by == "elsewhere"]
        w.pull(progress=False)

        rec = reconcile.reconcile(reconcile.load(w.store), now=sb.state.now, sla_days=5)
    finally:
        w.close()

    states = rec.requests.set_index("request_id")["state"].astype(str)
    assert len(elsewhere) == 1
    assert states.to_dict() == {
        i: {held: "responded", good: "acknowledged", wrong: "acknowledged",
            dropped: "transcript_sent", elsewhere[0]: "closed_elsewhere"}.get(i,
                                                                              "awaiting_response")
        for i in states.index
    }  # fmt: skip
    assert set(states[states == "awaiting_response"].index) == set(sb.pending_request_ids())
    rows = rec.requests.set_index("request_id")
    assert (rows.loc[held, "response_status"], rows.loc[held, "hold_reason"]) == (
        "Hold",
        "Financial",
    )
    assert rows.loc[dropped, "transcript_inferred"]  # settled from the lists, not resent
    assert rows.loc[good, "ack_course_total"] == rows.loc[good, "sent_course_count"]
    assert len(sb.received) == 5

    consumer = rec.transcripts.set_index("transcript_id")["state"].astype(str)
    assert consumer[acknowledged] == "acknowledged"
    assert set(consumer[consumer == "awaiting_ack"].index) == set(sb.pending_transcript_ids())

    ex = rec.exceptions
    kinds = {(k, i) for k, i in zip(ex["kind"], ex["id"], strict=True)}
    assert ("identity_mismatch", wrong) in kinds  # another student's transcript went out
    assert ("identity_mismatch", good) not in kinds
    assert ("hold_overdue", held) in kinds
    assert ("transcript_unacknowledged", dropped) in kinds
    assert ("closed_elsewhere", elsewhere[0]) in kinds
    overdue = set(rows.index[rows["sla_breached"]])
    assert overdue and {i for k, i in kinds if k == "response_overdue"} == overdue
    assert ex.loc[ex["id"] == wrong, "severity"].astype(str).tolist() == ["critical"]
    assert not (rec.checks["check"] == "tracking_id").any()  # no document contradicts another
    assert rec.headline["open_requests"] == len(sb.pending_request_ids())
    assert rec.headline["responses_by_status"] == {"Hold": 1}
