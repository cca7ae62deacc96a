"""A pull against a hostile partner: odd JSON fails one list or one item, never the whole pull.

The partner here is the tiny server of :mod:`tests.hostile.partner`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from tests.hostile.partner import HostilePartner, body
from workbench import spec
from workbench.http.answers import request_path

DEEP = b"[" * 200_000 + b"]" * 200_000


def _request(request_id: str, date: str = "2026-03-02T09:00:00Z") -> dict[str, str]:
    return {"RequestID": request_id, "RequestDate": date}


def _detail(request_id: str) -> bytes:
    return body([{**_request(request_id), "PESCXML": ""}])


@pytest.fixture
def partner():
    with HostilePartner() as p:
        yield p


@pytest.fixture
def connect(partner: HostilePartner, tmp_path: Path):
    opened = []

    def make() -> wb.Workbench:
        w = wb.connect(env=partner.env, db=tmp_path / "hostile.sqlite")
        opened.append(w)
        return w

    yield make
    for w in opened:
        w.close()


def _list(partner: HostilePartner, *items: dict, path: str = spec.SUPPLIER_PENDING_PATH) -> None:
    partner.answer("GET", path, body(list(items)))


def _requests(w: wb.Workbench) -> dict[str, dict]:
    table = w.store.table("transcript_requests")
    return {r["request_id"]: r for r in table.to_dict("records")}


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(DEEP, id="nested-200000-deep"),
        pytest.param(b'[{"RequestID": "A\\ud800", "RequestDate": null}]', id="lone-surrogate-id"),
        pytest.param(b'[{"RequestID": "A1", "Score": NaN}]', id="nan"),
        pytest.param(b'[{"RequestID": "A1", "Score": 1e400}]', id="overflows-to-infinity"),
        pytest.param(b'[{"RequestID": "A1", "Score": -Infinity}]', id="infinity"),
        pytest.param(b"\xff\xfe not json", id="not-json"),
    ],
)
def test_hostile_json_fails_one_list_and_everything_else_is_stored(partner, connect, content):
    partner.answer("GET", spec.SUPPLIER_PENDING_PATH, content)
    _list(partner, _request("T1"), path=spec.CONSUMER_PENDING_PATH)
    partner.answer("GET", request_path(spec.CONSUMER_TRANSCRIPT_PATH, "T1"), _detail("T1"))
    partner.answer("GET", spec.PEEK_EVENTS_PATH, body([{"eventId": "e1"}]))
    w = connect()

    summary = w.pull(progress=False)

    assert summary.status == "partial"
    assert "UnreadableAnswer" in (summary.lists["supplier_requests"].error or "")
    assert summary.lists["consumer_transcripts"].details_fetched == 1
    assert summary.lists["domestic_events"].listed == 1
    assert w.store.table("snapshots", where="list_name = 'supplier_requests'").empty


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b'[{"eventId": "e1", "note": "\\udc00"}]', id="lone-surrogate"),
        pytest.param(b'[{"eventId": "e1", "score": NaN}]', id="nan"),
        pytest.param(b'{"events": ' + DEEP + b"}", id="deep"),
    ],
)
def test_a_hostile_event_fails_its_feed_only(partner, connect, content):
    partner.answer("GET", spec.PENDING_PLACEMENT_EVENTS_PATH, content)
    partner.answer("GET", spec.PEEK_EVENTS_PATH, body([{"eventId": "d1"}]))
    w = connect()

    summary = w.pull(progress=False)

    assert summary.status == "partial"
    assert "UnreadableAnswer" in (summary.lists["placement_events"].error or "")
    assert summary.lists["domestic_events"].listed == 1
    assert w.store.table("snapshots", where="list_name = 'placement_events'").empty


@pytest.mark.parametrize(
    "content",
    [b"null", b"{}", b"0", b"true", b'"[]"', b'{"a": [], "b": []}', b'{"Message": "ok"}'],
)
def test_a_list_that_is_not_an_array_fails_and_nothing_departs(partner, connect, content):
    _list(partner, _request("A1"))
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), _detail("A1"))
    w = connect()
    assert w.pull(progress=False).status == "ok"
    entry = w.store.outbox.begin("send_response", "A1", {"PESCXML": "<x/>"})
    w.store.outbox.mark(entry, "uncertain", error="the answer was lost")

    partner.answer("GET", spec.SUPPLIER_PENDING_PATH, content)
    summary = w.pull(progress=False)

    assert summary.status == "partial"
    assert summary.lists["supplier_requests"].error
    assert summary.lists["supplier_requests"].closed_elsewhere == 0
    assert _requests(w)["A1"]["on_list"] == 1
    assert w.store.db["outbox"].get(entry)["state"] == "uncertain"
    assert len(w.store.table("snapshots", where="list_name = 'supplier_requests'")) == 1


def test_the_spec_empty_answer_is_still_an_empty_list(partner, connect):
    _list(partner, _request("A1"))
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), _detail("A1"))
    w = connect()
    w.pull(progress=False)
    partner.quiet()

    summary = w.pull(progress=False)

    assert summary.status == "ok"
    assert summary.lists["supplier_requests"].closed_elsewhere == 1


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"RequestID": None}, id="null"),
        pytest.param({"RequestID": ["A1"]}, id="list"),
        pytest.param({"RequestID": {"id": "A1"}}, id="object"),
        pytest.param({"RequestID": True}, id="bool"),
        pytest.param({"RequestID": ""}, id="empty"),
        pytest.param({"RequestID": "../A1"}, id="path"),
        pytest.param({"RequestDate": "2026-03-02T09:00:00Z"}, id="missing"),
        pytest.param("A1", id="not-an-object"),
    ],
)
def test_a_listed_item_without_a_usable_request_id_fails_alone(partner, connect, bad):
    _list(partner, _request("A1"))
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), _detail("A1"))
    w = connect()
    w.pull(progress=False)
    _list(partner, bad, _request("A1"), _request("B2"))
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "B2"), _detail("B2"))
    partner.requests.clear()

    summary = w.pull(progress=False)

    assert summary.status == "partial"
    assert [f["list"] for f in summary.failures] == ["supplier_requests"]
    assert "RequestID" in summary.failures[0]["error"]
    gets = [path for _, path in partner.requests]
    assert request_path(spec.SUPPLIER_REQUEST_PATH, "B2") in gets
    assert not [p for p in gets if p.endswith(("/None", "/['A1']", "/True", "/{'id': 'A1'}"))]
    assert set(_requests(w)) == {"A1", "B2"}
    assert not pd.isna(_requests(w)["B2"]["detail_fetched_at"])
    # The list held an item we could not read, so who left it is unknown: nothing departs.
    assert summary.lists["supplier_requests"].closed_elsewhere == 0
    assert _requests(w)["A1"]["on_list"] == 1


def test_a_request_id_spelled_request_id_is_read(partner, connect):
    _list(partner, {"RequestId": "A1", "RequestDate": "2026-03-02T09:00:00Z"})
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), _detail("A1"))
    w = connect()

    summary = w.pull(progress=False)

    assert summary.status == "ok"
    assert not pd.isna(_requests(w)["A1"]["detail_fetched_at"])


def test_a_detail_of_another_request_fails_and_is_fetched_again(partner, connect):
    _list(partner, _request("A1"))
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), _detail("B2"))
    w = connect()

    summary = w.pull(progress=False)

    assert summary.status == "partial"
    assert [f["id"] for f in summary.failures] == ["A1"]
    assert "'A1'" in summary.failures[0]["error"] and "'B2'" in summary.failures[0]["error"]
    assert set(_requests(w)) == {"A1"}
    assert pd.isna(_requests(w)["A1"]["detail_fetched_at"])

    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), _detail("A1"))
    assert w.pull(progress=False).status == "ok"
    assert not pd.isna(_requests(w)["A1"]["detail_fetched_at"])


def test_a_detail_holding_one_array_is_still_one_detail(partner, connect):
    _list(partner, _request("A1"))
    detail = {**_request("A1"), "PESCXML": "", "Attachments": []}  # an object, not an array
    partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, "A1"), body(detail))
    w = connect()

    assert w.pull(progress=False).status == "ok"
    assert not pd.isna(_requests(w)["A1"]["detail_fetched_at"])


@pytest.mark.parametrize("content", [DEEP, b'{"Message": "\\ud800"}', b'{"Message": NaN}'])
def test_a_hostile_error_body_is_a_partner_error(partner, connect, content):
    partner.answer("GET", spec.SUPPLIER_PENDING_PATH, content, status=500)
    w = connect()

    summary = w.pull(progress=False)

    assert summary.status == "partial"
    assert "PartnerError" in (summary.lists["supplier_requests"].error or "")
