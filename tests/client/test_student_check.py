"""``Supplier.send_transcript`` refuses another student's transcript before it is recorded or
sent (``check=False`` sends it), by the rule reconciliation compares students with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from tests.students import of_student, request_xml, with_person
from workbench.http.session import Exchange
from workbench.sandbox import Sandbox, generator


def _transcript(sb: Sandbox, request_id: str, **change: str) -> str:
    """A transcript of the request's student, with ``change`` made to it."""
    xml = generator.college_transcript_xml(
        5,
        1,
        request_id=sb.state.requests[request_id].tracking,
        created=sb.state.now,
        namespaces=sb.settings.namespaces,
    )
    return with_person(of_student(xml, request_xml(sb, request_id)), **change)


@pytest.mark.parametrize("id_scheme", ["tracking", "guid"])
@pytest.mark.parametrize("stored", [False, True])
def test_another_students_transcript_is_refused_and_sent_unchecked(
    sandbox_factory, connect_to: Callable[..., wb.Workbench], tmp_path: Path, id_scheme: str,
    stored: bool,
) -> None:  # fmt: skip
    sb = sandbox_factory(id_scheme=id_scheme)
    w = connect_to(sb, db=tmp_path / "w.db")
    if stored:  # the request's stored copy is read; else its detail is fetched
        w.pull(progress=False)
    item = sb.pending_request_ids()[0]
    wrong = _transcript(sb, item, LastName="Someone-Else", BirthDate="1970-01-01")
    with pytest.raises(wb.DocumentMismatch) as refused:
        w.supplier.send_transcript(item, wrong)
    message = str(refused.value)
    assert message.startswith(
        f"send_transcript: the transcript's student differs from the student of the transcript "
        f"request {item!r} on "
        "last name and birth date: it may be another student's transcript. Nothing was sent."
    )
    assert "Someone-Else" not in message and "1970" not in message
    assert "check=False" in message
    assert w.store.table("outbox").empty
    assert sb.received == []

    df = w.supplier.send_transcript(item, wrong, check=False)
    assert w.store.table("outbox")["state"].tolist() == ["sent"]
    assert df.attrs["outbox_id"] is not None and len(sb.received) == 1


def test_the_requests_student_in_another_case_and_spacing_is_sent(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    w = connect_to(sandbox, db=tmp_path / "w.db")
    item = sandbox.pending_request_ids()[0]
    last = wb.pesc.flatten(_transcript(sandbox, item))["student_last_name"]
    w.supplier.send_transcript(item, _transcript(sandbox, item, LastName=f" {last.upper()}  "))
    assert w.store.table("outbox")["state"].tolist() == ["sent"]


@pytest.mark.parametrize(
    ("fault", "kind"),
    [({"error_rate": 1.0}, wb.PartnerError), ({"drop_rate": 1.0}, wb.TransportError)],
)
def test_a_request_that_cannot_be_fetched_refuses_the_send_never_skips_the_check(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    fault: dict[str, float],
    kind: type[wb.WorkbenchError],
) -> None:
    sb = sandbox_factory()
    w = connect_to(sb, db=tmp_path / "w.db")
    item = sb.pending_request_ids()[0]
    wrong = _transcript(sb, item, LastName="Someone-Else")
    sb.set_faults(**fault, path_pattern=r"transcriptrequests/[0-9a-f-]{20,}$")  # its detail
    with pytest.raises(kind) as refused:
        w.supplier.send_transcript(item, wrong)
    message = str(refused.value)
    assert f"the transcript request {item!r} could not be read to check" in message
    assert "Nothing was sent" in message and "check=False" in message
    assert getattr(refused.value, "may_have_reached", False) is False
    assert w.store.table("outbox").empty and sb.received == []


def test_a_request_whose_document_cannot_be_read_refuses_until_checked_by_hand(
    sandbox_factory: Callable[..., Sandbox], connect_to: Callable[..., wb.Workbench], tmp_path: Path
) -> None:
    sb = sandbox_factory(malformed_share=1.0)
    w = connect_to(sb, db=tmp_path / "w.db")
    item = sb.pending_request_ids()[0]
    xml = generator.college_transcript_xml(
        5, 1, request_id=sb.state.requests[item].tracking, created=sb.state.now,
        namespaces=sb.settings.namespaces,
    )  # fmt: skip
    with pytest.raises(wb.InvalidValue) as refused:
        w.supplier.send_transcript(item, xml)
    assert "cannot be checked" in str(refused.value) and "check=False" in str(refused.value)
    assert w.store.table("outbox").empty and sb.received == []
    w.supplier.send_transcript(item, xml, check=False)
    assert len(sb.received) == 1


def test_a_stored_request_is_checked_without_a_call(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    exchanges: list[Exchange],
) -> None:
    sb = sandbox_factory()
    w = connect_to(sb, db=tmp_path / "w.db")
    w.pull(progress=False)
    item = sb.pending_request_ids()[0]
    right = _transcript(sb, item)
    exchanges.clear()
    w.supplier.send_transcript(item, right)
    assert [(e.method, e.operation) for e in exchanges] == [("POST", "supplier.send_transcript")]
