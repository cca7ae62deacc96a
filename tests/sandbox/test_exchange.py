"""Spec §4.4 and §7: every transcript-exchange operation, both roles, every status and message."""

from __future__ import annotations

import re

import httpx
import pytest
from lxml import etree

from tests.sandbox.helpers import ack_for, response_for, transcript_for, xpath_text
from tests.sandbox.wire import exchange, path, pescxml, token
from workbench import spec


def _first_request(sb) -> str:
    return sb.pending_request_ids()[0]


def _first_transcript(sb) -> str:
    return sb.pending_transcript_ids()[0]


def _local(xml: str) -> str:
    return etree.QName(etree.fromstring(xml.encode())).localname


# -- supplier ----------------------------------------------------------------------------------


def test_supplier_list_is_request_summaries(sandbox):
    with exchange(sandbox, "supplier") as client:
        response = client.get(spec.SUPPLIER_PENDING_PATH)
    assert response.status_code == 200
    items = response.json()
    assert len(items) == sandbox.settings.initial_requests
    assert all(set(i) == {"RequestID", "RequestDate"} for i in items)
    assert all(i["RequestDate"].endswith("Z") and len(i["RequestDate"]) == 24 for i in items)


@pytest.mark.parametrize("slash", ["", "/"])
def test_request_detail_is_an_array_of_one(sandbox, slash):
    request_id = _first_request(sandbox)
    with exchange(sandbox, "supplier") as client:
        response = client.get(path(spec.SUPPLIER_REQUEST_PATH, request_id) + slash)
    assert response.status_code == 200
    (item,) = response.json()
    assert set(item) == {"RequestID", "RequestDate", "PESCXML"}
    assert item["RequestID"] == request_id
    xml = pescxml(item)
    assert _local(xml) == "TranscriptRequest"
    assert xpath_text(xml, "RequestTrackingID") == request_id


def test_send_response_echoes_it_and_closes_the_request(sandbox):
    request_id = _first_request(sandbox)
    document = response_for(request_id)
    with exchange(sandbox, "supplier") as client:
        response = client.post(
            path(spec.SUPPLIER_RESPONSES_PATH, request_id), json={"PESCXML": document}
        )
        assert response.status_code == 200
        assert response.json() == {"RequestID": request_id, "PESCXML": document}
        listed = [i["RequestID"] for i in client.get(spec.SUPPLIER_PENDING_PATH).json()]
        # the detail stays readable after the request left the list
        assert client.get(path(spec.SUPPLIER_REQUEST_PATH, request_id)).status_code == 200
    assert request_id not in listed
    (record,) = sandbox.received
    assert record["operation"] == "send_response"
    assert record["request_id"] == request_id


def test_send_transcript_is_answered_with_a_counted_acknowledgment(sandbox):
    request_id = _first_request(sandbox)
    transcript = transcript_for(request_id, courses=7, awards=2)
    with exchange(sandbox, "supplier") as client:
        response = client.post(
            path(spec.SUPPLIER_TRANSCRIPTS_PATH, request_id), json={"PESCXML": transcript}
        )
    assert response.status_code == 200
    body = response.json()
    assert body["RequestID"] == request_id
    ack = body["PESCXML"]
    assert _local(ack) == "Acknowledgment"
    assert xpath_text(ack, "CourseTotal") == "7"
    assert xpath_text(ack, "AcademicAwardTotal") == "2"
    assert xpath_text(ack, "RequestTrackingID") == request_id
    assert xpath_text(ack, "DocumentID") == "CT-DOC-1"
    assert request_id not in sandbox.pending_request_ids()


def test_the_ack_miscount_fault_counts_one_course_short_for_the_same_requests(sandbox_factory):
    sb = sandbox_factory(ack_miscount_rate=1.0)
    request_id = _first_request(sb)
    transcript = transcript_for(request_id, courses=7, awards=2)
    with exchange(sb, "supplier") as client:
        response = client.post(
            path(spec.SUPPLIER_TRANSCRIPTS_PATH, request_id), json={"PESCXML": transcript}
        )
    assert response.status_code == 200
    ack = response.json()["PESCXML"]
    assert xpath_text(ack, "CourseTotal") == "6"
    assert xpath_text(ack, "AcademicAwardTotal") == "2"
    assert xpath_text(ack, "RequestTrackingID") == request_id


def test_escaped_payloads_are_accepted(sandbox):
    import html

    request_id = _first_request(sandbox)
    document = html.escape(response_for(request_id), quote=False)
    with exchange(sandbox, "supplier") as client:
        response = client.post(
            path(spec.SUPPLIER_RESPONSES_PATH, request_id), json={"PESCXML": document}
        )
    assert response.status_code == 200


# -- consumer ----------------------------------------------------------------------------------


def test_consumer_list_and_detail(sandbox):
    with exchange(sandbox, "consumer") as client:
        items = client.get(spec.CONSUMER_PENDING_PATH).json()
        assert len(items) == sandbox.settings.initial_transcripts
        assert all(set(i) == {"RequestID", "RequestDate"} for i in items)
        transcript_id = items[0]["RequestID"]
        for slash in ("", "/"):
            response = client.get(path(spec.CONSUMER_TRANSCRIPT_PATH, transcript_id) + slash)
            assert response.status_code == 200
            (item,) = response.json()
            assert set(item) == {"RequestID", "PESCXML"}
            # GUID-shaped (spec §2.4), without dashes: RequestTrackingID caps it at 35 characters
            assert re.fullmatch(r"[0-9a-f]{32}", item["RequestID"])
            assert _local(pescxml(item)) == "CollegeTranscript"


def test_acknowledgment_is_echoed_and_takes_the_transcript_off_the_list(sandbox):
    transcript_id = _first_transcript(sandbox)
    ack = ack_for(transcript_id)
    with exchange(sandbox, "consumer") as client:
        response = client.post(
            path(spec.CONSUMER_ACKNOWLEDGMENT_PATH, transcript_id), json={"PESCXML": ack}
        )
    assert response.status_code == 200
    assert response.json() == {"RequestID": transcript_id, "PESCXML": ack}
    assert transcript_id not in sandbox.pending_transcript_ids()
    assert sandbox.received[-1]["operation"] == "send_acknowledgment"


# -- §7 ----------------------------------------------------------------------------------------


def test_empty_lists_are_400_with_the_spec_messages(sandbox_factory):
    sb = sandbox_factory(initial_requests=0, initial_transcripts=0)
    with exchange(sb, "supplier") as client:
        response = client.get(spec.SUPPLIER_PENDING_PATH)
    assert response.status_code == 400
    assert response.json() == {"Message": "No requests found"}
    with exchange(sb, "consumer") as client:
        response = client.get(spec.CONSUMER_PENDING_PATH)
    assert response.status_code == 400
    assert response.json() == {"Message": "No transcripts found."}


UNKNOWN = "0DDBA11-0000-4000-8000-000000000000"


@pytest.mark.parametrize(
    ("role", "method", "template", "message"),
    [
        ("supplier", "GET", spec.SUPPLIER_REQUEST_PATH, "Cannot find transcript request ID."),
        ("supplier", "POST", spec.SUPPLIER_RESPONSES_PATH, "Cannot find transcript request ID."),
        ("supplier", "POST", spec.SUPPLIER_TRANSCRIPTS_PATH, "Cannot find transcript request ID."),
        ("consumer", "GET", spec.CONSUMER_TRANSCRIPT_PATH, "Cannot find transcript by ID."),
        ("consumer", "POST", spec.CONSUMER_ACKNOWLEDGMENT_PATH, "Cannot find transcript by ID."),
    ],
)
def test_unknown_ids_are_400_with_the_spec_messages(sandbox, role, method, template, message):
    with exchange(sandbox, role) as client:
        kwargs = {"json": {"PESCXML": "<x/>"}} if method == "POST" else {}
        response = client.request(method, path(template, UNKNOWN), **kwargs)
    assert response.status_code == 400
    assert response.json() == {"Message": message}


@pytest.mark.parametrize("bad_id", ["has space", "semi;colon", "x" * 65, "quote'", "é"])
@pytest.mark.parametrize(
    ("role", "template"),
    [("supplier", spec.SUPPLIER_REQUEST_PATH), ("consumer", spec.CONSUMER_TRANSCRIPT_PATH)],
)
def test_invalid_values_are_400_saying_the_value_is_invalid(sandbox, role, template, bad_id):
    with exchange(sandbox, role) as client:
        response = client.get(path(template, bad_id))
    assert response.status_code == 400
    assert "is not valid" in response.json()["Message"]


EXCHANGE_CALLS = [
    ("GET", spec.SUPPLIER_PENDING_PATH),
    ("GET", spec.CONSUMER_PENDING_PATH),
    ("GET", path(spec.SUPPLIER_REQUEST_PATH, UNKNOWN)),
    ("POST", path(spec.CONSUMER_ACKNOWLEDGMENT_PATH, UNKNOWN)),
]


@pytest.mark.parametrize(("method", "url"), EXCHANGE_CALLS)
@pytest.mark.parametrize("authorization", [None, "bearer nonsense", "Bearer"])
def test_exchange_without_a_valid_token_is_a_401(sandbox, method, url, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    response = httpx.request(method, sandbox.exchange_url + url, headers=headers, json={})
    assert response.status_code == 401
    assert response.json()["Message"]


def test_expired_exchange_token_is_a_401(sandbox):
    sandbox.set_faults(token_ttl=-5)
    with exchange(sandbox, "supplier") as client:
        response = client.get(spec.SUPPLIER_PENDING_PATH)
    assert response.status_code == 401


def test_roles_are_kept_apart(sandbox):
    with exchange(sandbox, "consumer") as client:
        assert client.get(spec.SUPPLIER_PENDING_PATH).status_code == 403
    with exchange(sandbox, "supplier") as client:
        assert client.get(spec.CONSUMER_PENDING_PATH).status_code == 403
    with exchange(sandbox, "international") as client:
        assert client.get(spec.SUPPLIER_PENDING_PATH).status_code == 403


def test_no_subscription_key_is_needed_on_the_exchange(sandbox):
    headers = {"Authorization": f"Bearer {token(sandbox, 'supplier')}"}
    response = httpx.get(sandbox.exchange_url + spec.SUPPLIER_PENDING_PATH, headers=headers)
    assert response.status_code == 200


# -- documents for sends -----------------------------------------------------------------------
