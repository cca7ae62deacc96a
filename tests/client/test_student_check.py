"""``Supplier.send_transcript`` refuses another student's transcript before it is recorded or
sent (``check=False`` sends it), by the rule reconciliation compares students with."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from tests.students import of_student, request_xml, with_person
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
    with pytest.raises(wb.InvalidValue) as refused:
        w.supplier.send_transcript(item, wrong)
    message = str(refused.value)
    assert message.startswith(
        f"send_transcript: the transcript's student differs from request {item!r}'s on "
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
