"""Sends under either id scheme: a document is checked against what it answers, not the API id.

``id_scheme="tracking"``: the API RequestID is the document's RequestTrackingID (OCAS'
examples); ``"guid"``: a GUID distinct from it (the spec's transcript detail).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import workbench as wb
from tests.students import of_student, request_xml
from workbench import pesc
from workbench.sandbox import Sandbox

from .conftest import exchange_hits
from .documents import response_xml, retarget

SCHEMES = ["tracking", "guid"]


@pytest.fixture(params=SCHEMES)
def sb(request: pytest.FixtureRequest, sandbox_factory: Callable[..., Sandbox]) -> Sandbox:
    return sandbox_factory(id_scheme=request.param)


def _tracking_id(frame_of_one: object) -> str:
    return str(frame_of_one.iloc[0]["request_tracking_id"])  # type: ignore[attr-defined]


def test_the_api_id_is_the_tracking_id_only_under_the_tracking_scheme(
    sb: Sandbox, connect_to
) -> None:
    w = connect_to(sb)
    request_id = sb.pending_request_ids()[0]
    tracking = _tracking_id(w.supplier.request(request_id))
    assert (tracking == request_id) == (sb.settings.id_scheme == "tracking")


def test_send_response_built_from_the_request(sb: Sandbox, connect_to) -> None:
    w = connect_to(sb)
    request_id = sb.pending_request_ids()[0]
    request = w.supplier.request(request_id)
    response = pesc.build_response(request["pescxml"].iloc[0], status="TranscriptRequestReceived")
    row = w.supplier.send_response(request_id, response).iloc[0]
    assert row["request_tracking_id"] == _tracking_id(request)
    assert [(r["operation"], r["request_id"]) for r in sb.received] == [
        ("send_response", request_id)
    ]
    assert w.store.db["outbox"].get(1)["state"] == "sent"


def test_send_transcript_for_the_requests_tracking_id(sb: Sandbox, connect_to) -> None:
    w = connect_to(sb)
    request_id = sb.pending_request_ids()[0]
    tracking = _tracking_id(w.supplier.request(request_id))
    served = w.consumer.transcript(sb.pending_transcript_ids()[0])["pescxml"].iloc[0]
    transcript = of_student(retarget(served, tracking), request_xml(sb, request_id))
    ack = w.supplier.send_transcript(request_id, transcript).iloc[0]
    assert ack["message_type"] == "Acknowledgment"
    assert ack["request_tracking_id"] == tracking


def test_send_acknowledgment_built_from_the_transcript(sb: Sandbox, connect_to) -> None:
    w = connect_to(sb)
    transcript_id = sb.pending_transcript_ids()[0]
    transcript = w.consumer.transcript(transcript_id).iloc[0]
    row = w.consumer.send_acknowledgment(transcript_id).iloc[0]
    assert row["request_tracking_id"] == transcript["request_tracking_id"]
    assert row["document_id"] == transcript["document_id"]  # the version it acknowledges
    assert [r["operation"] for r in sb.received] == ["send_acknowledgment"]


@pytest.mark.parametrize("role", ["supplier", "consumer"])
def test_a_document_for_another_request_is_refused(sb: Sandbox, connect_to, role: str) -> None:
    w = connect_to(sb)
    if role == "supplier":
        mine, other = sb.pending_request_ids()[:2]
        xml = w.supplier.request(other)["pescxml"].iloc[0]
        with pytest.raises(wb.InvalidValue, match="belongs to another request"):
            w.supplier.send_response(mine, pesc.build_response(xml, status="Hold"))
    else:
        mine, other = sb.pending_transcript_ids()[:2]
        xml = w.consumer.transcript(other)["pescxml"].iloc[0]
        with pytest.raises(wb.InvalidValue, match="belongs to another request"):
            w.consumer.send_acknowledgment(mine, pesc.build_acknowledgment(xml))
    assert sb.received == []
    assert not [k for k in exchange_hits(sb) if k[0] == "POST"]


def test_a_pulled_store_answers_the_check_without_fetching_again(sb: Sandbox, connect_to) -> None:
    w = connect_to(sb)
    w.pull(progress=False)
    request_id = sb.pending_request_ids()[0]
    response = pesc.build_response(w.store.document(request_id), status="Hold")
    sb.hits.clear()
    w.supplier.send_response(request_id, response)
    transcript_id = sb.pending_transcript_ids()[0]
    w.consumer.send_acknowledgment(transcript_id)  # built from the stored current version
    assert sorted(k[0] for k in exchange_hits(sb)) == ["POST", "POST"]
    assert [r["operation"] for r in sb.received] == ["send_response", "send_acknowledgment"]


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "fetched"])
def test_a_send_to_a_request_whose_document_cannot_be_read_is_refused(
    sandbox_factory: Callable[..., Sandbox], connect_to, scheme: str, stored: bool
) -> None:
    """Its own tracking id unknown, the document is compared with the API id where that could
    be a tracking id, else refused as unchecked; ``check=False`` sends it after a check by hand."""
    sb = sandbox_factory(id_scheme=scheme, malformed_share=1.0)  # no document parses
    w = connect_to(sb)
    if stored:
        w.pull(progress=False)
    request_id = sb.pending_request_ids()[0]
    reason = (
        "is not the transcript request's API id" if scheme == "tracking" else "could not be read"
    )
    with pytest.raises(wb.InvalidValue, match=reason) as refused:
        w.supplier.send_response(request_id, response_xml("C20260302999999"))
    assert "check=False" in str(refused.value)
    assert not [k for k in exchange_hits(sb) if k[0] == "POST"]

    with sb.state.lock:
        tracking = sb.state.requests[request_id].tracking
    w.supplier.send_response(request_id, response_xml(tracking), check=False)
    assert [(r["operation"], r["request_id"]) for r in sb.received] == [
        ("send_response", request_id)
    ]


@pytest.fixture(params=SCHEMES)
def scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)
