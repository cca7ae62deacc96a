"""TEST and PRODUCTION never cross (DESIGN §3): a document sent carries the DocumentProcessCode
of what it answers; a supplied one of another code is refused before anything is recorded or
sent, ``check=False`` included; a profile's ``environment`` binds every document sent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from tests.students import of_student, request_xml
from workbench.sandbox import Sandbox, generator

OTHER = {"TEST": "PRODUCTION", "PRODUCTION": "TEST"}


def _transcript(sb: Sandbox, item: str, code: str) -> str:
    xml = generator.college_transcript_xml(
        5, 1, request_id=sb.state.requests[item].tracking, created=sb.state.now, process_code=code
    )
    return of_student(xml, request_xml(sb, item))


def _supplied(sb: Sandbox, kind: str, code: str) -> tuple[str, str]:
    """(id, a document of ``kind`` for it saying DocumentProcessCode ``code``)."""
    if kind == "send_acknowledgment":
        item = sb.pending_transcript_ids()[0]
        transcript = sb.state.document("transcript", sb.state.transcripts[item])
        ack = wb.pesc.build_acknowledgment(transcript)
        return item, ack.replace(f">{sb.settings.process_code}<", f">{code}<")
    item = sb.pending_request_ids()[0]
    if kind == "send_transcript":
        return item, _transcript(sb, item, code)
    response = wb.pesc.build_response(request_xml(sb, item))
    return item, response.replace(f">{sb.settings.process_code}<", f">{code}<")


def _send(w: wb.Workbench, kind: str, item: str, xml: str, **options: bool) -> None:
    role = w.consumer if kind == "send_acknowledgment" else w.supplier
    getattr(role, kind)(item, xml, **options)


@pytest.mark.parametrize("partner", ["TEST", "PRODUCTION"])
@pytest.mark.parametrize("kind", ["send_response", "send_transcript", "send_acknowledgment"])
@pytest.mark.parametrize("check", [True, False])
def test_a_supplied_document_of_another_code_is_refused_and_nothing_is_posted(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    partner: str,
    kind: str,
    check: bool,
) -> None:
    sb = sandbox_factory(process_code=partner)
    w = connect_to(sb, db=tmp_path / "w.db")
    item, wrong = _supplied(sb, kind, OTHER[partner])
    with pytest.raises(wb.DocumentMismatch) as refused:
        _send(w, kind, item, wrong, check=check)
    message = str(refused.value)
    assert f"DocumentProcessCode is {OTHER[partner]}" in message and f"says {partner}" in message
    assert "Nothing was sent" in message
    assert w.store.table("outbox").empty
    assert sb.received == [] and not [p for m, p in sb.hits if m == "POST" and "/api/" in p]
    _, right = _supplied(sb, kind, partner)
    _send(w, kind, item, right, check=check)
    assert len(sb.received) == 1


@pytest.mark.parametrize("partner", ["TEST", "PRODUCTION"])
def test_built_documents_carry_the_code_of_what_they_answer(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    partner: str,
) -> None:
    sb = sandbox_factory(process_code=partner)
    w = connect_to(sb, db=tmp_path / "w.db")
    item = sb.pending_request_ids()[0]
    w.supplier.send_response(item, wb.pesc.build_response(request_xml(sb, item)))
    w.consumer.send_acknowledgment(sb.pending_transcript_ids()[0])
    sent = [wb.pesc.flatten(d["payload"])["process_code"] for d in sb.state.documents]
    assert sent == [partner, partner]


@pytest.mark.parametrize("partner", ["TEST", "PRODUCTION"])
def test_a_profiles_environment_binds_every_document_sent(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    partner: str,
) -> None:
    sb = sandbox_factory(process_code=partner)
    declared = OTHER[partner].lower()  # a profile pointed at the other environment
    w = connect_to(sb, db=tmp_path / "w.db", WORKBENCH_ENVIRONMENT=declared)
    with pytest.raises(wb.DocumentMismatch) as refused:  # built, of the partner's code
        w.consumer.send_acknowledgment(sb.pending_transcript_ids()[0])
    assert f"says DocumentProcessCode {partner}" in str(refused.value)
    assert f"environment is {declared}" in str(refused.value)
    assert sb.received == [] and w.store.table("outbox").empty

    right = connect_to(sb, db=tmp_path / "right.db", WORKBENCH_ENVIRONMENT=partner.lower())
    item = sb.pending_request_ids()[0]
    right.supplier.send_transcript(item, _transcript(sb, item, partner))
    assert len(sb.received) == 1


def test_a_document_stating_no_code_never_answers_a_test_one(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
) -> None:
    sb = sandbox_factory(process_code="TEST")
    item = sb.pending_request_ids()[0]
    silent = _transcript(sb, item, "TEST").replace(
        "<DocumentProcessCode>TEST</DocumentProcessCode>", ""
    )
    assert wb.pesc.flatten(silent)["process_code"] is None
    free = connect_to(sb, db=tmp_path / "free.db")  # no environment declared: OCAS' UAT
    with pytest.raises(wb.DocumentMismatch, match=r"is not stated, but .* says TEST"):
        free.supplier.send_transcript(item, silent, check=False)
    w = connect_to(sb, db=tmp_path / "w.db", WORKBENCH_ENVIRONMENT="test")
    with pytest.raises(wb.DocumentMismatch, match="DocumentProcessCode"):
        w.supplier.send_transcript(item, silent, check=False)
    assert sb.received == []
