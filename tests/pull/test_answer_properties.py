"""Arbitrary partner answers against the list, detail, event and send paths (issue #10).

Whatever the partner answers: no traceback; a run that met an answer it had to refuse is never
``ok``; what reaches the store is JSON SQLite can read; and a send is never let through twice.
"""

from __future__ import annotations

import json
import math
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench as wb
from tests.hostile.partner import EMPTY_REQUESTS, EMPTY_TRANSCRIPTS, HostilePartner
from workbench import spec

from ..client.documents import response_xml

pytestmark = pytest.mark.slow

Answer = tuple[int, bytes, bool]  # status, body, whether the workbench must refuse it

# Values that are JSON and safe: finite numbers, text without lone surrogates.
_SAFE_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_POISON = st.sampled_from([math.nan, math.inf, -math.inf, "\ud800", "a\udfffb"])


class _Deep(bytes):
    """Arrays nested 100,000 deep, with a short repr for Hypothesis' reports."""

    def __repr__(self) -> str:
        return "<[ * 100000 + ] * 100000>"


_HOSTILE_BYTES = st.sampled_from(
    [
        _Deep(b"[" * 100_000 + b"]" * 100_000),
        b"<html>gateway timeout</html>",
        b"",
        b"\xff\xfe\x00",
        b'[{"RequestID": "A1"',
        b"[1e999]",
    ]
)
_SAFE_IDS = st.text(alphabet="ABCDEFGHJK0123456789-", min_size=1, max_size=12).filter(
    lambda s: ".." not in s
)
_BAD_IDS = st.sampled_from([None, 7, True, [], {}, "", "a/b", "..", " A1", "\ud800", "A\n1"])


def _safe_json(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    return st.recursive(
        _SAFE_SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=max_leaves,
    )


def _poisoned(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A value with a NaN, an infinity or a lone surrogate somewhere in it."""
    return st.tuples(value, _POISON).map(lambda vp: {"data": vp[0], "poison": vp[1]})


def _encoded(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True, allow_nan=True).encode()


def _not_a_list() -> st.SearchStrategy[Any]:
    """Any JSON that is not an array nor an object holding exactly one array."""
    return _safe_json().filter(
        lambda v: (
            not isinstance(v, list)
            and not (isinstance(v, dict) and sum(isinstance(x, list) for x in v.values()) == 1)
        )
    )


def _item(request_id: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"RequestID": request_id, "RequestDate": st.just("2026-03-02T09:00:00Z")},
        optional={"Extra": _safe_json(4)},
    )


@st.composite
def request_lists(draw: st.DrawFn, empty: bytes) -> Answer:
    good = st.lists(_item(_SAFE_IDS), max_size=4)
    kind = draw(st.sampled_from(["good", "empty", "shape", "bad-item", "poison", "bytes"]))
    if kind == "good":
        return 200, _encoded(draw(good)), False
    if kind == "empty":
        return 400, empty, False
    if kind == "shape":
        return 200, _encoded(draw(_not_a_list())), True
    if kind == "bad-item":
        bad = draw(_item(_BAD_IDS) | _safe_json().filter(lambda v: not isinstance(v, dict)))
        items = draw(good)
        items.insert(draw(st.integers(0, len(items))), bad)
        return 200, _encoded(items), True
    if kind == "poison":
        return 200, _encoded([*draw(good), draw(_poisoned(_item(_SAFE_IDS)))]), True
    return 200, draw(_HOSTILE_BYTES), True


@st.composite
def feeds(draw: st.DrawFn) -> Answer:
    events = st.lists(_safe_json(6), max_size=4)
    kind = draw(st.sampled_from(["good", "wrapped", "shape", "poison", "bytes"]))
    if kind == "good":
        return 200, _encoded(draw(events)), False
    if kind == "wrapped":
        return 200, _encoded({"events": draw(events), "count": 1}), False
    if kind == "shape":
        return 200, _encoded(draw(_not_a_list())), True
    if kind == "poison":
        return 200, _encoded([*draw(events), draw(_poisoned(_safe_json(4)))]), True
    return 200, draw(_HOSTILE_BYTES), True


@st.composite
def details(draw: st.DrawFn) -> Answer:
    kind = draw(st.sampled_from(["good", "other-id", "shape", "poison", "bytes"]))
    if kind == "good":  # no RequestID: nothing to compare, and fine
        return 200, _encoded([{"PESCXML": "", "Note": draw(_safe_json(4))}]), False
    if kind == "other-id":
        return 200, _encoded([{"RequestID": "ZZ-NOT-ASKED", "PESCXML": ""}]), True
    if kind == "shape":
        shape = _safe_json().filter(
            lambda v: (
                not isinstance(v, dict)
                and not (isinstance(v, list) and v and all(isinstance(i, dict) for i in v))
            )
        )
        return 200, _encoded(draw(shape)), True
    if kind == "poison":
        return 200, _encoded([draw(_poisoned(st.just({"PESCXML": ""})))]), True
    return 200, draw(_HOSTILE_BYTES), True


send_answers = st.tuples(
    st.sampled_from([200, 201, 202, 500, 502, 503]),
    _safe_json().map(_encoded) | _poisoned(_safe_json(4)).map(_encoded) | _HOSTILE_BYTES,
)


@pytest.fixture(scope="module")
def partner():
    with HostilePartner() as p:
        yield p


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    supplier=request_lists(EMPTY_REQUESTS),
    consumer=request_lists(EMPTY_TRANSCRIPTS),
    placement=feeds(),
    domestic=feeds(),
    detail=details(),
    send=send_answers,
)
def test_no_answer_crashes_a_pull_passes_for_ok_or_lets_a_send_through_twice(
    partner: HostilePartner, supplier, consumer, placement, domestic, detail, send
) -> None:
    routes = {
        ("GET", spec.SUPPLIER_PENDING_PATH): supplier,
        ("GET", spec.CONSUMER_PENDING_PATH): consumer,
        ("GET", spec.PENDING_PLACEMENT_EVENTS_PATH): placement,
        ("GET", spec.PEEK_EVENTS_PATH): domestic,
        ("GET", "/api/transcriptrequests/"): detail,
        ("GET", "/api/transcripts/"): detail,
    }
    partner.answers.clear()
    for (method, path), (status, content, _) in routes.items():
        partner.answer(method, path, content, status)
    status, content = send
    partner.answer("POST", "/api/transcriptrequests/", content, status)
    partner.requests.clear()

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "p.sqlite"
        with wb.connect(env=partner.env, db=db) as w:
            summary = w.pull(progress=False)  # raises nothing, whatever was answered
            refused = any(
                routes[_route(routes, m, p)][2] for m, p in partner.requests if m == "GET"
            )
            assert summary.status in ("ok", "partial", "failed")
            if refused:
                assert summary.status != "ok", summary
            _assert_readable(db)

            xml = response_xml("A1")
            refusal: wb.WorkbenchError | None = None
            try:  # whatever it was: a typed error
                w.supplier.send_response("A1", xml)
            except wb.WorkbenchError as exc:
                refusal = exc
            entries = w.store.table("outbox", where="request_id = ?", params=["A1"])
            if len(entries):  # it went out, or may have: never a second time
                with pytest.raises(wb.DuplicateSend):
                    w.supplier.send_response("A1", xml)
            else:  # refused before it could go (the request unreadable): refused again
                assert refusal is not None
                with pytest.raises(type(refusal)):
                    w.supplier.send_response("A1", xml)
            posts = [p for m, p in partner.requests if m == "POST"]
            assert len(posts) <= 1


def _route(routes: dict[tuple[str, str], Answer], method: str, path: str) -> tuple[str, str]:
    """The route that answered ``method path``: the exact one, else the longest prefix."""
    if (method, path) in routes:
        return method, path
    prefixes = [p for m, p in routes if m == method and p.endswith("/") and path.startswith(p)]
    return method, max(prefixes, key=len)


def _assert_readable(db: Path) -> None:
    """Every JSON column the store wrote reads with SQLite's json_extract (no NaN, valid UTF-8)."""
    with sqlite3.connect(db) as conn:
        for table, column in _JSON_COLUMNS:
            sql = f"SELECT json_extract({column}, '$') FROM {table}"  # noqa: S608  our constants
            conn.execute(sql).fetchall()


_JSON_COLUMNS = [
    ("snapshot_items", "item_json"),
    ("runs", "summary"),
    ("documents", "detail_json"),
    ("documents", "pesc_json"),
    ("documents", "validation"),
    ("events", "raw_json"),
]
