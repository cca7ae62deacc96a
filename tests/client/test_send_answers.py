"""Any 2xx to a send means the partner took it: ``sent``, its answer kept, never sent twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench as wb
from tests.hostile.partner import HostilePartner
from tests.sandbox.helpers import FIXED_START
from workbench import spec
from workbench.sandbox import generator

from .documents import response_xml

RESPONSES = spec.SUPPLIER_RESPONSES_PATH.format(id="R-1")


@pytest.fixture
def partner() -> Iterator[HostilePartner]:
    """A partner serving request R-1, whose sends each test answers as it likes."""
    request = generator.transcript_request_xml(1, 0, request_id="R-1", created=FIXED_START)
    detail = [{"RequestID": "R-1", "RequestDate": "2026-03-02T09:00:00.000Z", "PESCXML": request}]
    with HostilePartner() as p:
        p.answer("GET", spec.SUPPLIER_REQUEST_PATH.format(id="R-1"), json.dumps(detail).encode())
        yield p


@pytest.mark.parametrize(
    ("status", "content"),
    [
        (200, b""),
        (204, b""),
        (202, b"Accepted for processing"),
        (200, b"<html><body>Thank you</body></html>"),
        (200, b"null"),
        (200, b'["queued"]'),
    ],
    ids=["empty-200", "204", "text-202", "html-200", "null", "list-of-text"],
)
def test_a_2xx_answer_that_is_not_the_echo_is_sent_and_kept(
    partner: HostilePartner, tmp_path: Path, status: int, content: bytes
) -> None:
    partner.answer("POST", RESPONSES, content, status=status)
    with wb.connect(env=partner.env, db=tmp_path / "db.sqlite") as w:
        df = w.supplier.send_response("R-1", response_xml("R-1"))
        note = df.attrs["reply_note"]
        assert df.empty and f"answered {status}, so it took the send" in note
        assert "do not send it again" in note
        entry = w.store.db["outbox"].get(df.attrs["outbox_id"])
        assert (entry["state"], entry["status"]) == ("sent", status)
        assert entry["response_body"] == content.decode()  # kept as it came
        with pytest.raises(wb.DuplicateSend):
            w.supplier.send_response("R-1", response_xml("R-1"))
    assert partner.requests.count(("POST", RESPONSES)) == 1


def test_a_json_answer_of_another_shape_is_parsed_as_far_as_it_goes(
    partner: HostilePartner, tmp_path: Path
) -> None:
    partner.answer("POST", RESPONSES, b'{"RequestID": "R-1", "Note": "queued"}', status=201)
    with wb.connect(env=partner.env, db=tmp_path / "db.sqlite") as w:
        df = w.supplier.send_response("R-1", response_xml("R-1"))
        assert (df.loc[0, "request_id"], df.loc[0, "note"]) == ("R-1", "queued")
        assert w.store.db["outbox"].get(df.attrs["outbox_id"])["state"] == "sent"


@pytest.mark.parametrize(
    ("status", "content", "state"),
    [(409, b'{"message": "no"}', "failed"), (200, b"<html>Thank you</html>", "sent")],
    ids=["refused", "unreadable-2xx"],
)
def test_the_outbox_names_the_call_that_answered_a_send(
    partner: HostilePartner, tmp_path: Path, status: int, content: bytes, state: str
) -> None:
    partner.answer("POST", RESPONSES, content, status=status)
    with wb.connect(env=partner.env, db=tmp_path / "db.sqlite") as w:
        if status >= 400:  # refused: the error names the call too
            with pytest.raises(wb.PartnerError) as refused:
                w.supplier.send_response("R-1", response_xml("R-1"))
            assert refused.value.call_id is not None
        else:  # taken, with an answer that says nothing: sent, never an error
            w.supplier.send_response("R-1", response_xml("R-1"))
        [entry] = w.store.table("outbox").to_dict("records")
        calls = w.store.table("calls")
        [post] = calls.loc[calls["url"].str.endswith(RESPONSES), "id"]
    assert (entry["state"], entry["call_id"]) == (state, post)
