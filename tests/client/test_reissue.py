"""Re-issues are sends of their own: a transcript sent again with a new DocumentID and
TransmissionType Reissue, or a response answering the request's cancellation, goes without
``force`` and is a new version in the store and the timeline; a document carrying the
DocumentID of one already sent, or a second Original, is a duplicate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from tests.students import of_student, request_xml
from workbench.sandbox import Sandbox, generator

QUIET = {
    "requests_per_hour": 0,
    "transcripts_per_hour": 0,
    "closed_elsewhere_per_hour": 0,
    "reissue_per_hour": 0,
    "resubmission_per_hour": 0,
    "cancellation_per_hour": 0,
    "token_ttl": 24 * 3600,
}


def transcript(sb: Sandbox, item: str, *, version: int = 1, kind: str = "Original") -> str:
    """A transcript of request ``item``'s student: ``version`` 2, 3, ... get a new DocumentID."""
    xml = generator.college_transcript_xml(
        5,
        1,
        request_id=sb.state.requests[item].tracking,
        created=sb.state.now,
        version=version,
        transmission_type=kind,
    )
    return of_student(xml, request_xml(sb, item))


def test_a_reissue_is_sent_without_force_and_a_duplicate_is_refused(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    w = connect_to(sandbox, db=tmp_path / "w.db")
    item = sandbox.pending_request_ids()[0]
    first, reissue = transcript(sandbox, item), transcript(sandbox, item, version=2, kind="Reissue")
    ids = [wb.pesc.flatten(x)["document_id"] for x in (first, reissue)]
    assert ids[0] != ids[1]
    w.supplier.send_transcript(item, first)
    w.supplier.send_transcript(item, reissue)  # no force: a send of its own
    assert len(sandbox.received) == 2

    with pytest.raises(wb.DuplicateSend, match=f"DocumentID {ids[1]!r}"):  # the same again
        w.supplier.send_transcript(item, reissue)
    accidental = transcript(sandbox, item, version=3)  # a new DocumentID, but no Reissue
    new_id = wb.pesc.flatten(accidental)["document_id"]
    with pytest.raises(wb.DuplicateSend) as refused:
        w.supplier.send_transcript(item, accidental)
    said = str(refused.value)  # it tells this document's DocumentID from the one sent before
    assert f"another DocumentID ({new_id!r}) but its TransmissionType is not Reissue" in said
    assert f"DocumentID {ids[1]!r}" in said and said.index(ids[1]) > said.index("outbox entry")
    assert len(sandbox.received) == 2
    w.supplier.send_transcript(item, accidental, force=True)  # the rare true resend
    assert len(sandbox.received) == 3

    versions = w.store.sent_versions(item)
    assert versions["version"].tolist() == [1, 2, 3]
    assert versions["transmission_type"].tolist() == ["Original", "Reissue", "Original"]
    assert versions["document_id"].tolist()[:2] == ids
    timeline = w.store.timeline(item)
    sent = timeline.loc[timeline["kind"] == "transcript_sent", "description"].tolist()
    assert sent[0].startswith("transcript sent: version 1 (Original), document ")
    assert sent[1].startswith(f"transcript sent: version 2 (Reissue), document {ids[1]}")


def test_a_response_to_a_cancellation_is_sent_without_force(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
) -> None:
    sb = sandbox_factory(**{**QUIET, "initial_requests": 1, "cancellation_per_hour": 1})
    w = connect_to(sb, db=tmp_path / "w.db")
    (item,) = sb.pending_request_ids()
    w.supplier.send_response(item, wb.pesc.build_response(request_xml(sb, item)))
    with pytest.raises(wb.DuplicateSend):  # a second answer to the same request
        w.supplier.send_response(item, wb.pesc.build_response(request_xml(sb, item)))
    sb.advance(1)  # the partner cancels the request
    w.pull(progress=False)
    assert w.store.versions(item)["transmission_type"].tolist()[-1] == "Cancellation"
    cancellation = w.store.document(item)
    assert cancellation is not None
    answer = wb.pesc.build_response(cancellation, status="TranscriptSent")  # OCAS' refusal
    w.supplier.send_response(item, answer)  # an answer to the cancellation: a send of its own
    assert [r["operation"] for r in sb.received] == ["send_response"] * 2
    with pytest.raises(wb.DuplicateSend):  # and that answer only once
        w.supplier.send_response(item, answer)
    versions = w.store.sent_versions(item)
    assert versions["version"].tolist() == [1, 2]
    assert versions["response_status"].tolist() == ["TranscriptRequestReceived", "TranscriptSent"]
    described = w.store.timeline(item).query("kind == 'response'")["description"].tolist()
    assert described[1].startswith("response version 2: TranscriptSent, document ")
