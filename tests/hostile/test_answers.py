"""The hostile sandbox's answers, observed with raw HTTP: no workbench client code."""

from __future__ import annotations

import json
import math
import socket
import threading
import zlib

import pytest

from tests.hostile.sandbox import Hostile
from tests.sandbox.helpers import response_for
from tests.sandbox.wire import exchange, gateway, path, request_token, token_form
from workbench import spec

LIST = spec.SUPPLIER_PENDING_PATH


def _serving(sb) -> bool:
    return any(t.name == f"workbench-sandbox-{sb.port}" for t in threading.enumerate())


@pytest.mark.parametrize(
    "change",
    [
        {"success_body": "json"},
        {"list_shape": "list"},
        {"hostile_json": "huge"},
        {"trickle_rate": 1.5},
        {"header_flood_rate": -0.1},
        {"trickle_interval_s": 0},
        {"pad_bytes": -1},
        {"gzip_bomb_bytes": -1},
    ],
)
def test_unknown_kinds_and_bad_values_are_refused(sandbox, change):
    name = next(iter(change))
    with pytest.raises(ValueError, match=name):
        sandbox.set_faults(**change)
    with pytest.raises(ValueError, match=name):
        Hostile(**change)
    assert sandbox.hostile == Hostile()  # a refused change changes nothing


def test_trickle_sends_headers_then_the_body_byte_by_byte(sandbox_factory):
    sb = sandbox_factory(initial_requests=1)
    with exchange(sb, "supplier") as client:
        expected = client.get(LIST).content
        sb.set_faults(trickle_rate=1.0, trickle_interval_s=0.005)
        with client.stream("GET", LIST) as response:
            assert response.headers["content-length"] == str(len(expected))
            chunks = list(response.iter_raw())
    assert b"".join(chunks) == expected
    assert len(chunks) > 1


def test_trickle_forever_sends_whitespace_until_the_client_hangs_up(sandbox_factory):
    sb = sandbox_factory(initial_requests=1, trickle_rate=1.0, trickle_interval_s=0.005)
    sb.set_faults(trickle_forever=True)
    with exchange(sb, "supplier") as client, client.stream("GET", LIST) as response:
        assert response.status_code == 200
        assert "content-length" not in response.headers
        received = b""
        for chunk in response.iter_raw():
            received += chunk
            if len(received) >= 20:
                break
    assert received.strip() == b""
    sb.stop()  # waits for the server's tasks: the trickle ended when the client left
    assert not _serving(sb)


def test_header_flood_never_ends_the_headers_and_stops_when_the_client_hangs_up(sandbox_factory):
    sb = sandbox_factory(header_flood_rate=1.0, trickle_interval_s=0.005, path_pattern="/api/")
    with exchange(sb, "supplier") as client:
        bearer = client.headers["Authorization"]
    lines: list[bytes] = []
    with socket.create_connection((sb.host, sb.port), timeout=10) as raw:
        head = f"GET /exchange{LIST} HTTP/1.1\r\nHost: sb\r\nAuthorization: {bearer}\r\n\r\n"
        raw.sendall(head.encode())
        reader = raw.makefile("rb")
        while len(lines) < 10:
            lines.append(reader.readline())
        reader.close()
    assert lines[0] == b"HTTP/1.1 200 OK\r\n"
    assert all(line.startswith(b"X-Pad-") for line in lines[1:])
    sb.stop()
    assert not _serving(sb)
    assert sb.hits[("GET", LIST)] == 1


@pytest.mark.parametrize(
    ("kind", "status", "body", "content_type"),
    [
        ("empty", 200, b"", "application/json"),
        ("no_content", 204, b"", None),
        ("text", 202, b"Accepted", "text/plain"),
        ("html", 200, b"<!DOCTYPE html>", "text/html"),
    ],
)
def test_success_body_replaces_a_send_answer_after_the_send_took_effect(
    sandbox_factory, kind, status, body, content_type
):
    sb = sandbox_factory(success_body=kind)
    request_id = sb.pending_request_ids()[0]
    with exchange(sb, "supplier") as client:
        response = client.post(
            path(spec.SUPPLIER_RESPONSES_PATH, request_id),
            json={"PESCXML": response_for(request_id)},
        )
        unchanged_list = client.get(LIST)
    assert response.status_code == status
    assert response.content.startswith(body) and (body or response.content == b"")
    if content_type:
        assert response.headers["content-type"].startswith(content_type)
    assert [r["request_id"] for r in sb.received] == [request_id]
    assert request_id not in sb.pending_request_ids()
    assert isinstance(unchanged_list.json(), list)  # GETs keep their answers


@pytest.mark.parametrize(
    ("shape", "expected"),
    [("null", None), ("object", {}), ("scalar", 42), ("string", "ok")],
)
def test_list_shape_replaces_the_lists_and_event_feeds(sandbox_factory, shape, expected):
    sb = sandbox_factory(list_shape=shape)
    request_id = sb.pending_request_ids()[0]
    with exchange(sb, "supplier") as client:
        assert client.get(LIST).json() == expected
        assert client.get(path(spec.SUPPLIER_REQUEST_PATH, request_id)).json()[0]["RequestID"]
    with gateway(sb, "domestic") as client:
        assert client.get(spec.PEEK_EVENTS_PATH, params={"Count": 3}).json() == expected


def test_list_shape_two_arrays_wraps_the_list_twice(sandbox_factory):
    sb = sandbox_factory()
    with exchange(sb, "supplier") as client:
        rows = client.get(LIST).json()
        sb.set_faults(list_shape="two_arrays")
        assert client.get(LIST).json() == {"value": rows, "items": rows}


def test_pad_bytes_pads_json_answers_with_whitespace(sandbox_factory):
    sb = sandbox_factory()
    with exchange(sb, "supplier") as client:
        rows = client.get(LIST).json()
        sb.set_faults(pad_bytes=300_000, path_pattern="no_response")
        padded = client.get(LIST)
    assert len(padded.content) == 300_000
    assert padded.headers["content-length"] == "300000"
    assert padded.json() == rows


def test_gzip_bomb_is_small_on_the_wire_and_inflates_past_its_size(sandbox_factory):
    size = 20_000_000
    sb = sandbox_factory()
    with exchange(sb, "supplier") as client:
        rows = client.get(LIST).json()
        sb.set_faults(gzip_bomb_bytes=size)
        for _ in range(2):  # the second answer reuses the cached bomb
            with client.stream("GET", LIST) as response:
                assert response.headers["content-encoding"] == "gzip"
                wire = b"".join(response.iter_raw())
            assert len(wire) < size // 100
            inflated = zlib.decompress(wire, 16 + zlib.MAX_WBITS)  # checks CRC and length
            assert len(inflated) > size
            assert json.loads(inflated) == rows


def test_hostile_json_deep(sandbox_factory):
    sb = sandbox_factory(hostile_json="deep")
    with exchange(sb, "supplier") as client:
        body = client.get(LIST).content
    assert body == b"[" * 200_000 + b"]" * 200_000


def test_hostile_json_surrogate_id_and_nan(sandbox_factory):
    sb = sandbox_factory()
    request_id = sb.pending_request_ids()[0]
    with exchange(sb, "supplier") as client:
        sb.set_faults(hostile_json="surrogate_id")
        listed = client.get(LIST).text
        detail = client.get(path(spec.SUPPLIER_REQUEST_PATH, request_id)).text
        sb.set_faults(hostile_json="nan")
        nan = client.get(LIST).text
    assert listed.startswith('[{"RequestID": "\\ud800"')
    assert detail.startswith('[{"RequestID": "\\ud800"')
    assert listed.count("\\ud800") == 1  # only the first item
    assert '"RequestDate": NaN' in nan and '"Score": Infinity' in nan
    assert json.loads(nan)[0]["Score"] == math.inf


def test_hostile_json_surrogate_event(sandbox_factory):
    sb = sandbox_factory(hostile_json="surrogate_event")
    with gateway(sb, "domestic") as client:
        events = client.get(spec.PEEK_EVENTS_PATH).text
    assert events.count('"note": "caf\\udce9"') == 1
    with pytest.raises(UnicodeEncodeError):
        json.loads(events)[0]["payload"]["note"].encode("utf-8")


def test_echo_errors_echo_the_token_form_as_received(sandbox_factory):
    sb = sandbox_factory()
    form = {**token_form(sb, "supplier"), "client_secret": "wr0ng s3cret/+&%"}
    quiet = request_token(sb, form).json()
    sb.set_faults(echo_errors=True, error_rate=1.0)  # errors stay off the identity server
    answer = request_token(sb, form)
    assert answer.status_code in (400, 401)
    described = answer.json()["error_description"]
    assert described.startswith(quiet["error_description"])
    assert "client_secret=wr0ng+s3cret%2F%2B%26%25" in described  # percent-encoded, as sent
    assert "s3cret" not in quiet["error_description"]


def test_echo_errors_echo_the_query_of_gateway_and_exchange_4xx(sandbox_factory):
    sb = sandbox_factory(echo_errors=True)
    with gateway(sb, "domestic") as client:
        refused = client.get(spec.PEEK_EVENTS_PATH, params={"Count": "x", "secret": "a b"})
    assert refused.status_code == 400
    assert "Count=x&secret=a+b" in refused.json()["Message"]
    with exchange(sb, "supplier") as client:
        body = {"PESCXML": "<not-a-response/>", "Note": "kept"}
        refused = client.post(path(spec.SUPPLIER_RESPONSES_PATH, sb.pending_request_ids()[0]),
                              json=body)  # fmt: skip
    assert refused.status_code == 400
    assert "kept" in refused.json()["Message"]


def test_faults_are_scoped_by_path_pattern(sandbox_factory):
    sb = sandbox_factory(list_shape="null", path_pattern="/transcripts/no_response")
    with exchange(sb, "supplier") as supplier:
        assert isinstance(supplier.get(LIST).json(), list)
    with exchange(sb, "consumer") as consumer:
        assert consumer.get(spec.CONSUMER_PENDING_PATH).json() is None
