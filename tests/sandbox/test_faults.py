"""Faults on demand: latency, 5xx, 429 with Retry-After, dropped connections, bad documents."""

from __future__ import annotations

import time

import httpx
import pytest
from lxml import etree

from tests.sandbox.helpers import response_for
from tests.sandbox.wire import exchange, path, token
from workbench import spec


def test_latency_is_added(sandbox):
    with exchange(sandbox, "supplier") as client:
        sandbox.set_faults(latency_ms=150)
        started = time.perf_counter()
        client.get(spec.SUPPLIER_PENDING_PATH)
        # A lower bound, never flaky: uvloop's timers may fire up to half a millisecond early.
        assert time.perf_counter() - started >= 0.149


def test_errors_are_500_or_503_with_a_message(sandbox):
    with exchange(sandbox, "supplier") as client:
        sandbox.set_faults(error_rate=1.0)
        statuses = {client.get(spec.SUPPLIER_PENDING_PATH).status_code for _ in range(30)}
        response = client.get(spec.SUPPLIER_PENDING_PATH)
    assert statuses == {500, 503}
    assert response.json()["Message"]


def test_partial_error_rate_lets_some_through(sandbox):
    with exchange(sandbox, "supplier") as client:
        sandbox.set_faults(error_rate=0.5)
        statuses = [client.get(spec.SUPPLIER_PENDING_PATH).status_code for _ in range(60)]
    assert 200 in statuses and {500, 503} & set(statuses)


def test_rate_limit_is_429_with_retry_after(sandbox):
    with exchange(sandbox, "supplier") as client:
        sandbox.set_faults(rate_limit_rate=1.0, retry_after_s=2.5)
        response = client.get(spec.SUPPLIER_PENDING_PATH)
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "3"  # RFC 9110: whole seconds
    assert response.json()["Message"]


def test_dropped_connection_gets_no_response(sandbox):
    with exchange(sandbox, "supplier") as client:
        sandbox.set_faults(drop_rate=1.0)
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(spec.SUPPLIER_PENDING_PATH)


def test_drop_after_runs_the_post_then_drops(sandbox):
    request_id = sandbox.pending_request_ids()[0]
    with exchange(sandbox, "supplier") as client:
        sandbox.set_faults(drop_after_rate=1.0)
        with pytest.raises(httpx.RemoteProtocolError):
            client.post(
                path(spec.SUPPLIER_RESPONSES_PATH, request_id),
                json={"PESCXML": response_for(request_id)},
            )
    assert [r["request_id"] for r in sandbox.received] == [request_id]
    assert request_id not in sandbox.pending_request_ids()


def test_identity_server_gets_latency_but_no_errors(sandbox):
    sandbox.set_faults(error_rate=1.0, drop_rate=0.0)
    assert token(sandbox, "supplier")


def test_pescxml_key_can_be_renamed(sandbox_factory):
    sb = sandbox_factory(pescxml_key="PESCXml")
    with exchange(sb, "supplier") as client:
        (item,) = client.get(path(spec.SUPPLIER_REQUEST_PATH, sb.pending_request_ids()[0])).json()
    assert "PESCXml" in item and "PESCXML" not in item


def test_escaped_share_escapes_some_documents(sandbox_factory):
    sb = sandbox_factory(escaped_share=0.5, initial_requests=40)
    with exchange(sb, "supplier") as client:
        starts = [
            client.get(path(spec.SUPPLIER_REQUEST_PATH, i)).json()[0]["PESCXML"][:4]
            for i in sb.pending_request_ids()
        ]
    escaped = sum(s == "&lt;" for s in starts)
    assert 0 < escaped < 40
    assert all(s in ("&lt;", "<?xm", "<TrR", "<Trn") or s.startswith("<") for s in starts)


def test_malformed_share_makes_documents_that_do_not_parse(sandbox_factory):
    sb = sandbox_factory(malformed_share=1.0, escaped_share=0.0, initial_transcripts=5)
    ids = sb.pending_transcript_ids()
    assert len(ids) == 5  # every one checked below
    with exchange(sb, "consumer") as client:
        for transcript_id in ids:
            xml = client.get(path(spec.CONSUMER_TRANSCRIPT_PATH, transcript_id)).json()[0]
            with pytest.raises(etree.XMLSyntaxError):
                etree.fromstring(xml["PESCXML"].encode())
