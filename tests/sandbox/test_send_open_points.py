"""The sends' open points (DESIGN §3): the route spelling a partner serves, its environment's
DocumentProcessCode, and the documents it takes again (a re-issue, an answer to a cancellation)."""

from __future__ import annotations

import pytest
from lxml import etree

from tests.sandbox.helpers import ack_for, response_for, transcript_for, xpath_text
from tests.sandbox.test_versions import QUIET
from tests.sandbox.wire import exchange, path, pescxml
from workbench import spec
from workbench.sandbox.app import NOT_FOUND_MESSAGE


def _with_process_code(xml: str, code: str) -> str:
    """``xml`` with a TransmissionData/DocumentProcessCode ``code`` (before RequestTrackingID)."""
    root = etree.fromstring(xml.encode())
    tracking = root.xpath("//*[local-name()='RequestTrackingID']")
    element = etree.Element("DocumentProcessCode")
    element.text = code
    tracking[0].addprevious(element)
    return etree.tostring(root, encoding="unicode")


def _tracking(sb, request_id: str) -> str:
    return sb.state.requests[request_id].tracking


@pytest.mark.parametrize("spelling", ["plural", "singular"])
@pytest.mark.parametrize("operation", ["send_response", "send_transcript"])
def test_a_partner_serves_one_spelling_of_the_send_routes(sandbox_factory, spelling, operation):
    sb = sandbox_factory(send_routes=spelling)
    other = "singular" if spelling == "plural" else "plural"
    request_id = sb.pending_request_ids()[0]
    tracking = _tracking(sb, request_id)
    document = (
        response_for(tracking)
        if operation == "send_response"
        else transcript_for(tracking, courses=2, awards=1)
    )
    with exchange(sb, "supplier") as client:
        refused = client.post(
            path(spec.SEND_ROUTES[other][operation], request_id), json={"PESCXML": document}
        )
        assert sb.received == []  # the other spelling takes nothing
        taken = client.post(
            path(spec.SEND_ROUTES[spelling][operation], request_id), json={"PESCXML": document}
        )
    assert refused.status_code == 404
    assert refused.json() == {"Message": NOT_FOUND_MESSAGE}
    assert taken.status_code == 200, taken.text
    assert [r["operation"] for r in sb.received] == [operation]


@pytest.mark.parametrize("code", ["PRODUCTION", "TEST"])
def test_every_document_the_partner_makes_carries_its_process_code(sandbox_factory, code):
    sb = sandbox_factory(process_code=code)
    request_id, transcript_id = sb.pending_request_ids()[0], sb.pending_transcript_ids()[0]
    with exchange(sb, "supplier") as supplier:
        request = pescxml(supplier.get(path(spec.SUPPLIER_REQUEST_PATH, request_id)).json()[0])
        sent = transcript_for(_tracking(sb, request_id), courses=3, awards=1)  # states no code
        answer = supplier.post(
            path(spec.SUPPLIER_TRANSCRIPTS_PATH, request_id), json={"PESCXML": sent}
        )
    with exchange(sb, "consumer") as consumer:
        transcript = consumer.get(path(spec.CONSUMER_TRANSCRIPT_PATH, transcript_id)).json()[0]
    assert answer.status_code == 200, answer.text
    for xml in (request, pescxml(transcript), answer.json()["PESCXML"]):
        assert xpath_text(xml, "DocumentProcessCode") == code


@pytest.mark.parametrize(
    ("environment", "posted"), [("TEST", "PRODUCTION"), ("PRODUCTION", "TEST")]
)
@pytest.mark.parametrize("operation", ["send_response", "send_transcript", "send_acknowledgment"])
def test_a_document_of_another_process_code_is_refused(
    sandbox_factory, environment, posted, operation
):
    sb = sandbox_factory(process_code=environment)
    if operation == "send_acknowledgment":
        item = sb.pending_transcript_ids()[0]
        role, route = "consumer", spec.CONSUMER_ACKNOWLEDGMENT_PATH
        document = ack_for(sb.state.transcripts[item].tracking)
    else:
        item = sb.pending_request_ids()[0]
        role, route = "supplier", spec.SEND_ROUTES["plural"][operation]
        tracking = _tracking(sb, item)
        document = (
            response_for(tracking)
            if operation == "send_response"
            else transcript_for(tracking, courses=1, awards=0)
        )
    with exchange(sb, role) as client:
        refused = client.post(
            path(route, item), json={"PESCXML": _with_process_code(document, posted)}
        )
        taken = client.post(
            path(route, item), json={"PESCXML": _with_process_code(document, environment)}
        )
    assert refused.status_code == 400
    message = refused.json()["Message"]
    assert message.startswith("The PESCXML value is invalid")
    assert posted in message and environment in message
    assert taken.status_code == 200, taken.text
    assert len(sb.received) == 1  # only the one of the right code


def test_a_reissued_transcript_is_taken_after_the_first(sandbox_factory):
    sb = sandbox_factory()
    request_id = sb.pending_request_ids()[0]
    first = transcript_for(_tracking(sb, request_id), courses=2, awards=1)
    reissue = first.replace("CT-DOC-1", "CT-DOC-2").replace(
        "</DocumentID>", "</DocumentID><TransmissionType>Reissue</TransmissionType>", 1
    )
    route = path(spec.SUPPLIER_TRANSCRIPTS_PATH, request_id)
    with exchange(sb, "supplier") as client:
        assert client.post(route, json={"PESCXML": first}).status_code == 200
        again = client.post(route, json={"PESCXML": reissue})
    assert again.status_code == 200, again.text
    assert xpath_text(again.json()["PESCXML"], "DocumentID") == "CT-DOC-2"
    assert [r["operation"] for r in sb.received] == ["send_transcript"] * 2


@pytest.mark.parametrize("operation", ["send_response", "send_transcript"])
def test_a_cancelled_request_takes_an_answer(sandbox_factory, operation):
    sb = sandbox_factory(**{**QUIET, "initial_requests": 1, "cancellation_per_hour": 1})
    (request_id,) = sb.pending_request_ids()
    sb.advance(1)  # cancelled: listed with its Cancellation
    sb.advance(0.5)  # and gone from the list
    assert sb.state.requests[request_id].closed_by == "cancellation"
    tracking = _tracking(sb, request_id)
    document = (
        response_for(tracking)
        if operation == "send_response"
        else transcript_for(tracking, courses=1, awards=0)
    )
    with exchange(sb, "supplier") as client:
        answer = client.post(
            path(spec.SEND_ROUTES["plural"][operation], request_id), json={"PESCXML": document}
        )
    assert answer.status_code == 200, answer.text
    assert [r["operation"] for r in sb.received] == [operation]
