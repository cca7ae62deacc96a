"""One place turns a partner answer into items: safe JSON, list and item shapes, usable ids."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from tests.hostile.partner import HostilePartner, body
from workbench import spec
from workbench.errors import InvalidValue, NotFound, PartnerError, UnreadableAnswer
from workbench.http.answers import (
    MAX_DEPTH,
    answer_items,
    detail_items,
    list_items,
    listed_requests,
    loads,
    request_id_of,
    request_path,
)
from workbench.store import Store


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"[NaN]", "NaN"),
        (b"[Infinity]", "Infinity"),
        (b'{"a": -Infinity}', "-Infinity"),
        (b"[1e400]", "too large"),
        (b'["\\ud800"]', "lone surrogate"),
        (b'{"\\udfff": 1}', "lone surrogate"),
        (b'["\xed\xa0\x80"]', "not UTF-8"),
        (b"\xff\xfe", "not UTF-8"),
        (b"{'a': 1}", "not JSON"),
        (b"", "not JSON"),
        (b"1" * 5000, "not JSON"),
        (_nested(MAX_DEPTH + 1), "nested deeper"),
        (_nested(200_000), "nested deeper"),
    ],
)
def test_loads_refuses_what_would_break_later(content: bytes, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        loads(content)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'["\\ud83d\\ude00"]', ["\U0001f600"]),  # a surrogate pair is one character
        ('["é"]'.encode(), ["é"]),
        (b'\xef\xbb\xbf{"a": 1.5}', {"a": 1.5}),  # a byte order mark
        (b"null", None),
        (_nested(MAX_DEPTH), loads(_nested(MAX_DEPTH))),
    ],
)
def test_loads_accepts_ordinary_json(content: bytes, expected) -> None:
    assert loads(content) == expected


@pytest.mark.parametrize(
    ("payload", "items"),
    [
        ([], []),
        ([{"RequestID": "A1"}], [{"RequestID": "A1"}]),
        ({"requests": [{"RequestID": "A1"}], "count": 1}, [{"RequestID": "A1"}]),
        ({"requests": []}, []),
    ],
)
def test_a_list_is_an_array_or_an_object_holding_one(payload, items) -> None:
    assert list_items(payload, operation="x") == items


@pytest.mark.parametrize(
    "payload", [None, {}, 0, 1.5, True, "[]", {"a": [], "b": []}, {"RequestID": "A1"}]
)
def test_anything_else_is_not_a_list(payload) -> None:
    with pytest.raises(UnreadableAnswer, match="where a list was expected") as info:
        list_items(payload, operation="supplier.pull_list")
    assert info.value.status == 200 and info.value.body is not None


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"RequestID": "A1"}, "A1"),
        ({"RequestId": "6f1c-2a"}, "6f1c-2a"),
        ({"requestid": "C2015 07"}, "C2015 07"),
        ({"RequestID": "A1", "requestID": "A1", "request_id": "A1"}, "A1"),  # aliases agreeing
    ],
)
def test_request_id_of_a_usable_item(item, expected) -> None:
    assert request_id_of(item) == expected


@pytest.mark.parametrize(
    "item",
    [
        {"RequestID": None},
        {"RequestID": 12},
        {"RequestID": True},
        {"RequestID": ["A1"]},
        {"RequestID": {"id": "A1"}},
        {"RequestID": ""},
        {"RequestID": "a/b"},
        {"RequestID": "\ud800"},
        {"RequestDate": "2026-03-02"},
        {"requestid": "A1", "RequestID": "B2"},  # which one counts cannot be told
        "A1",
        None,
    ],
)
def test_request_id_of_an_unusable_item(item) -> None:
    with pytest.raises(InvalidValue):
        request_id_of(item)


def test_listed_requests_keep_the_usable_and_say_why_for_the_others() -> None:
    listed = listed_requests([{"RequestID": "A1"}, {"RequestID": None}, 7], operation="op")
    assert listed.ids == ["A1"]
    assert [shown for shown, _ in listed.refused] == ["item 2", "item 3"]
    assert all(why.startswith("op: ") for _, why in listed.refused)


def test_answer_items_are_objects() -> None:
    assert answer_items({"RequestID": "A1"}, operation="x") == [{"RequestID": "A1"}]
    for payload in (None, "x", [1], [{"a": 1}, None]):
        with pytest.raises(UnreadableAnswer):
            answer_items(payload, operation="x")


def test_a_detail_must_be_of_the_request_asked_for() -> None:
    assert detail_items([{"RequestID": "A1"}], "A1", operation="x", subject="s")
    assert detail_items([{"PESCXML": "<x/>"}], "A1", operation="x", subject="s")  # no id: fine
    with pytest.raises(UnreadableAnswer, match=r"asked for 'A1'.*'B2'"):
        detail_items([{"RequestID": "B2"}], "A1", operation="x", subject="s")
    with pytest.raises(NotFound):
        detail_items([], "A1", operation="x", subject="s")
    with pytest.raises(UnreadableAnswer, match="differing only in case"):
        detail_items([{"RequestID": "A1", "requestid": "B2"}], "A1", operation="x", subject="s")


def test_the_store_keys_an_item_by_its_one_request_id_or_by_its_content(tmp_path: Path) -> None:
    store = Store(tmp_path / "keys.sqlite")
    items = [{"RequestID": "A1"}, {"requestid": "A2", "RequestID": "../\x1b]0;x"}]
    diff = store.record_snapshot(None, "supplier_requests", items)
    assert diff.appeared[0] == "A1"
    assert diff.appeared[1].startswith("sha256:")  # never the key the pull did not check
    store.close()


def test_a_pull_refuses_an_item_with_two_request_ids(hostile) -> None:
    partner, w = hostile
    evil = "../\x1b]0;pwned\x07"
    item = {"requestid": "A1", "RequestID": evil, "RequestDate": "2026-01-01"}
    partner.answer("GET", spec.SUPPLIER_PENDING_PATH, body([item]))
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    assert any("differing only in case" in f["error"] for f in summary.failures)
    ids = set(w.store.table("transcript_requests")["request_id"])
    assert evil not in ids and "A1" not in ids


# -- through the HTTP stack -------------------------------------------------------------------


@pytest.fixture
def hostile(tmp_path: Path):
    with HostilePartner() as partner:
        w = wb.connect(env=partner.env, db=tmp_path / "shapes.sqlite")
        try:
            yield partner, w
        finally:
            w.close()


@pytest.mark.parametrize(
    ("content", "said"),
    [(b"<html>oops</html>", "not JSON"), (b"null", "null"), (b"[NaN]", "NaN")],
)
def test_an_unreadable_2xx_answer_is_a_partner_error_with_status_and_body(
    hostile, content, said
) -> None:
    partner, w = hostile
    partner.answer("GET", spec.SUPPLIER_PENDING_PATH, content, status=201)
    with pytest.raises(UnreadableAnswer, match=said) as info:
        w.supplier.pending_requests()
    assert isinstance(info.value, PartnerError)
    assert info.value.status == 201
    assert info.value.body and content.decode()[:5] in info.value.body


def test_the_frames_api_refuses_what_is_not_a_list(hostile) -> None:
    partner, w = hostile
    partner.answer("GET", spec.SUPPLIER_PENDING_PATH, b"{}")
    partner.answer("GET", spec.PEEK_EVENTS_PATH, b"7")
    partner.answer("GET", spec.PENDING_PLACEMENT_EVENTS_PATH, b'{"eventId": "e1"}')
    with pytest.raises(UnreadableAnswer):
        w.supplier.pending_requests()
    with pytest.raises(UnreadableAnswer):
        w.peek_events()
    with pytest.raises(UnreadableAnswer):
        w.pending_placement_events()
    partner.quiet()
    assert w.supplier.pending_requests().empty  # the spec's "No requests found" stays empty


def test_the_frames_api_refuses_a_detail_of_another_request(hostile) -> None:
    partner, w = hostile
    path = request_path(spec.SUPPLIER_REQUEST_PATH, "A1")
    partner.answer("GET", path, body([{"RequestID": "B2", "PESCXML": ""}]))
    with pytest.raises(UnreadableAnswer, match=r"'A1'.*'B2'"):
        w.supplier.request("A1")
    assert "UnreadableAnswer" in w.supplier.requests(["A1"])["error"].iloc[0]
