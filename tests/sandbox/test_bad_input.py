"""Bad input to the sandbox always gets a clean 4xx with a Message: never a 500 or a traceback."""

from __future__ import annotations

import pytest

from tests.sandbox.helpers import response_for, transcript_for
from tests.sandbox.wire import exchange, path
from workbench import spec


def _post(sb, template, **kwargs):
    request_id = sb.pending_request_ids()[0]
    with exchange(sb, "supplier") as client:
        return client.post(path(template, request_id), **kwargs), request_id


BODIES = {
    "not json": {"content": b"{not json", "headers": {"Content-Type": "application/json"}},
    "json array": {"json": [1, 2]},
    "json string": {"json": "PESCXML"},
    "missing PESCXML": {"json": {"Xml": "<a/>"}},
    "null PESCXML": {"json": {"PESCXML": None}},
    "numeric PESCXML": {"json": {"PESCXML": 42}},
    "empty PESCXML": {"json": {"PESCXML": "   "}},
    "not xml": {"json": {"PESCXML": "hello"}},
    "truncated xml": {"json": {"PESCXML": "<TranscriptResponse><Response>"}},
    "wrong root": {"json": {"PESCXML": "<CollegeTranscript/>"}},
    "doctype": {
        "json": {
            "PESCXML": '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
            "<TranscriptResponse>&e;</TranscriptResponse>"
        }
    },
    "invalid utf-8": {
        "content": b'{"PESCXML": "\xff\xfe"}',
        "headers": {"Content-Type": "application/json"},
    },
}


@pytest.mark.parametrize("case", BODIES)
def test_bad_bodies_are_400_with_a_message(sandbox, case):
    response, request_id = _post(sandbox, spec.SUPPLIER_RESPONSES_PATH, **BODIES[case])
    assert response.status_code == 400, response.text
    assert response.json()["Message"]
    assert sandbox.received == []
    assert request_id in sandbox.pending_request_ids()


def test_wrong_content_type_is_415(sandbox):
    response, _ = _post(
        sandbox,
        spec.SUPPLIER_RESPONSES_PATH,
        content=b"PESCXML=<a/>",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert "application/json" in response.json()["Message"]


def test_tracking_id_must_match_the_path(sandbox):
    other = sandbox.pending_request_ids()[1]
    response, _ = _post(
        sandbox, spec.SUPPLIER_RESPONSES_PATH, json={"PESCXML": response_for(other)}
    )
    assert response.status_code == 400
    assert "does not match" in response.json()["Message"]


def test_a_transcript_is_not_a_response(sandbox):
    request_id = sandbox.pending_request_ids()[0]
    with exchange(sandbox, "supplier") as client:
        response = client.post(
            path(spec.SUPPLIER_RESPONSES_PATH, request_id),
            json={"PESCXML": transcript_for(request_id, courses=1, awards=0)},
        )
    assert response.status_code == 400
    assert "expected a TranscriptResponse" in response.json()["Message"]


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("GET", "/exchange/api/nothing"),
        ("GET", "/gateway/api/v2/diagnostics/authorization"),
        ("GET", "/elsewhere"),
        ("GET", "/"),
        ("DELETE", "/exchange" + spec.SUPPLIER_PENDING_PATH),
        ("PUT", "/gateway" + spec.DIAGNOSTICS_PATH),
        ("GET", "/identity" + spec.TOKEN_PATH),
    ],
)
def test_unknown_paths_and_methods_get_a_message(sandbox, method, url):
    import httpx

    response = httpx.request(method, sandbox.root_url + url)
    assert response.status_code in (404, 405)
    assert response.json()["Message"]
    assert "Traceback" not in response.text
