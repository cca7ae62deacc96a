"""Every refusal of the sandbox, word for word: its status and its ``{"Message": ...}`` body."""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox.helpers import response_for, transcript_for
from tests.sandbox.wire import exchange, gateway, path
from workbench import spec

JSON = {"Content-Type": "application/json"}


def _refusal(response: httpx.Response) -> tuple[int, dict[str, str]]:
    return response.status_code, response.json()


def test_exchange_refusals_are_word_for_word(sandbox_factory):
    sb = sandbox_factory()
    first, second = sb.pending_request_ids()[:2]
    with exchange(sb, "supplier") as supplier, exchange(sb, "consumer") as consumer:
        post = supplier.post
        assert _refusal(post(path(spec.SUPPLIER_RESPONSES_PATH, first), content=b"x")) == (
            415,
            {"Message": "The request body must be sent as application/json."},
        )
        other = {"PESCXML": response_for(second)}
        assert _refusal(post(path(spec.SUPPLIER_RESPONSES_PATH, first), json=other)) == (
            400,
            {
                "Message": "The PESCXML value is invalid: its RequestTrackingID does not match"
                " the tracking ID of the request in the path."
            },
        )
        transcript = {"PESCXML": transcript_for(first, courses=1, awards=0)}
        assert _refusal(post(path(spec.SUPPLIER_RESPONSES_PATH, first), json=transcript)) == (
            400,
            {
                "Message": "The PESCXML value is invalid: expected a TranscriptResponse"
                " document, got CollegeTranscript."
            },
        )
        assert _refusal(post(path(spec.SUPPLIER_RESPONSES_PATH, "a.b"), json=other)) == (
            400,
            {"Message": "The value 'a.b' is not valid for RequestID."},
        )
        assert _refusal(consumer.get(path(spec.CONSUMER_TRANSCRIPT_PATH, "nope"))) == (
            400,
            {"Message": spec.UNKNOWN_TRANSCRIPT_ID},
        )
        assert _refusal(consumer.get(spec.SUPPLIER_PENDING_PATH)) == (
            403,
            {"Message": "This client is not authorised for the supplier role."},
        )
        assert _refusal(supplier.delete(spec.SUPPLIER_PENDING_PATH)) == (
            405,
            {"Message": "The requested resource does not support http method 'DELETE'."},
        )
        assert _refusal(supplier.get("/api/nothing")) == (
            404,
            {"Message": "No HTTP resource was found that matches the request URI."},
        )
    assert sb.received == []


def test_gateway_refusals_are_word_for_word(sandbox):
    with gateway(sandbox, "domestic") as client:
        assert _refusal(client.get(spec.PEEK_EVENTS_PATH, params={"Count": "x"})) == (
            400,
            {"Message": "The value 'x' is not valid for Count: use an integer 1..100."},
        )
        assert _refusal(client.get(spec.DIAGNOSTICS_PATH)) == (
            403,
            {"Message": f"This token does not grant the '{spec.INTL_SCOPE}' scope this API needs."},
        )
        assert _refusal(
            client.get(spec.DIAGNOSTICS_PATH, headers={spec.SUBSCRIPTION_KEY_HEADER: ""})
        ) == (
            401,
            {
                "Message": "Access denied due to missing subscription key. Make sure to include"
                " subscription key when making requests to an API."
            },
        )


@pytest.mark.parametrize(
    ("faults", "status", "text"),
    [
        ({"rate_limit_rate": 1.0}, 429, "Rate limit is exceeded. Try again later."),
        ({"error_rate": 1.0}, None, None),
    ],
)
def test_fault_answers_are_word_for_word(sandbox, faults, status, text):
    sandbox.set_faults(**faults, retry_after_s=2)
    with gateway(sandbox) as client:
        response = client.get(spec.DIAGNOSTICS_PATH)
    if status == 429:
        assert _refusal(response) == (429, {"Message": text})
        assert response.headers["Retry-After"] == "2"
    else:
        expected = {500: "An error has occurred.", 503: "The service is unavailable."}
        assert response.json() == {"Message": expected[response.status_code]}
