"""Hostile RequestIDs: refused before any HTTP call, or sent as exactly one path segment."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.http.answers import check_request_id, request_path
from workbench.sandbox import Sandbox

from .conftest import exchange_hits
from .documents import acknowledgment_xml, response_xml

HOSTILE = {
    "parent": "../x",
    "dotdot": "..",
    "dot": ".",
    "slash": "a/b",
    "backslash": "a\\b",
    "empty": "",
    "10kB": "a" * 10_000,
    "nul": "a\x00b",
    "newline": "a\r\nHost: evil",
    "del": "\x7f",
    "line separator": "a\u2028b",
    "surrogate": "a\ud800",
    "padded": " a ",
    "not a string": 42,
    "none": None,
}
# Fine for us (one path segment once encoded); the partner answers that they are invalid.
ODD_BUT_SENDABLE = ["é中文", "%2e%2e", "a?b=c", "a#b", "a;b", "~user"]


def _operations(w: wb.Workbench):
    return {
        "supplier.request": lambda i: w.supplier.request(i),
        "supplier.send_response": lambda i: w.supplier.send_response(i, response_xml("x")),
        "supplier.send_transcript": lambda i: w.supplier.send_transcript(i, "<x/>"),
        "consumer.transcript": lambda i: w.consumer.transcript(i),
        "consumer.send_acknowledgment": lambda i: w.consumer.send_acknowledgment(
            i, acknowledgment_xml("x")
        ),
        "consumer.send_acknowledgment(None)": lambda i: w.consumer.send_acknowledgment(i),
    }


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_ids_never_reach_the_partner(sandbox: Sandbox, w: wb.Workbench, name: str):
    value = HOSTILE[name]
    for operation, call in _operations(w).items():
        with pytest.raises(wb.InvalidValue, match="RequestID") as info:
            call(value)
        message = str(info.value)
        assert len(message) < 300, operation  # a 10 kB id is not echoed back whole
        assert "\n" not in message and "\x00" not in message, operation
    assert exchange_hits(sandbox) == {}


@pytest.mark.parametrize("value", ODD_BUT_SENDABLE)
def test_odd_ids_stay_one_path_segment(sandbox: Sandbox, w: wb.Workbench, value: str) -> None:
    with pytest.raises(wb.InvalidValue, match="not valid for RequestID"):
        w.supplier.request(value)
    with pytest.raises(wb.InvalidValue, match="not valid for RequestID"):
        w.consumer.transcript(value)
    # The server decoded each path once and saw exactly the id: nothing else was addressed.
    assert exchange_hits(sandbox) == {
        ("GET", f"/api/transcriptrequests/{value}"): 1,
        ("GET", f"/api/transcripts/{value}"): 1,
    }


def test_batches_report_hostile_ids_per_row(sandbox: Sandbox, w: wb.Workbench) -> None:
    good = sandbox.pending_request_ids()[0]
    df = w.supplier.requests(["../x", good, "", None])
    assert list(df["request_id"].astype(object).fillna("<NA>")) == ["../x", good, "", "<NA>"]
    assert df["error"].notna().tolist() == [True, False, True, True]
    assert df["error"].iloc[0].startswith("InvalidValue")
    assert set(exchange_hits(sandbox)) == {("GET", f"/api/transcriptrequests/{good}")}


def test_ids_are_percent_encoded() -> None:
    assert request_path("/api/transcripts/{id}", "a b?c") == "/api/transcripts/a%20b%3Fc"
    assert request_path("/api/transcripts/{id}", "é") == "/api/transcripts/%C3%A9"
    assert check_request_id("C20150729002337") == "C20150729002337"
    assert check_request_id("x" * 128) == "x" * 128
    with pytest.raises(wb.InvalidValue, match="at most 128"):
        check_request_id("x" * 129)
