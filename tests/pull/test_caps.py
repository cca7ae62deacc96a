"""Caps the partner does not announce: a refused domestic peek ``Count`` is halved until
accepted (bisected up to the refused one when the answer is full), and the count accepted is
remembered in the store; a feed answered at exactly the count asked for may be cut off, and the
run says so."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import workbench as wb
from tests.notebook_code import notebook_code
from workbench.spec import PEEK_EVENTS_PATH


def _asked_counts(w: wb.Workbench, run_id: int) -> list[tuple[str, int]]:
    """(Count asked, status) of every domestic peek call of a run, in order."""
    calls = w.store.table("calls", where="run_id = ? AND operation = 'peek_events'",
                          params=[run_id])  # fmt: skip
    return [
        (parse_qs(urlsplit(url).query)["Count"][0], int(status))
        for url, status in zip(calls["url"], calls["status"], strict=True)
    ]


def test_a_lower_cap_is_learned_and_asked_directly_next_time(sandbox_factory, tmp_path: Path):
    sb = sandbox_factory(max_peek_count=20, initial_domestic_events=10)
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        first = w.pull(progress=False)
        assert first.status == "ok", str(first)  # 10 events under a cap of 20: nothing cut off
        assert w.store.meta("peek_count_learned") == "12"  # 100, 50 and 25 refused
        asked = _asked_counts(w, first.run_id)
        assert asked == [("100", 400), ("50", 400), ("25", 400), ("12", 200)]
        second = w.pull(progress=False)
        assert second.status == "ok", str(second)
        assert _asked_counts(w, second.run_id) == [("12", 200)]
        assert second.lists["domestic_events"].listed == 10


def test_a_feed_under_the_cap_but_over_its_half_is_read_whole(sandbox_factory, tmp_path: Path):
    """Halving from a refused 25 lands on 12; 15 events fill it, so the cap is searched between
    the two rather than the feed being called cut off on every pull."""
    sb = sandbox_factory(max_peek_count=20, initial_domestic_events=15)
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        for _ in range(2):
            summary = w.pull(progress=False)
            assert summary.status == "ok", str(summary)
            assert summary.lists["domestic_events"].listed == 15
        learned = w.store.meta("peek_count_learned")  # the first count that held the feed
        assert learned is not None and 15 < int(learned) <= 20
        assert _asked_counts(w, summary.run_id) == [(learned, 200)]


def test_a_feed_answered_at_the_learned_cap_is_partial_and_says_so(sandbox_factory, tmp_path):
    sb = sandbox_factory(max_peek_count=20, initial_domestic_events=30)
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        assert summary.status == "partial"
        assert w.store.meta("peek_count_learned") == "20"  # 12 full: bisected up to 25
        assert summary.lists["domestic_events"].listed == 20
        assert summary.lists["domestic_events"].cut_off_at == 20
        (failure,) = summary.failures
        assert failure["list"] == "domestic_events"
        assert "past the first 20 may be unseen" in failure["error"]
        assert "may be unseen" in str(summary)
        section = notebook_code("events").events_section(w.store).data
        assert "may be unseen" in section and "20" in section


def test_a_higher_cap_is_used_when_the_profile_asks_for_it(sandbox_factory, tmp_path: Path):
    sb = sandbox_factory(max_peek_count=500, initial_domestic_events=250)
    with wb.connect(env={**sb.env, "WORKBENCH_PEEK_COUNT": "500"}, db=tmp_path / "a.db") as w:
        summary = w.pull(progress=False)
        assert summary.status == "ok", str(summary)
        assert summary.lists["domestic_events"].listed == 250
        assert _asked_counts(w, summary.run_id) == [("500", 200)]
    # The profile's default, 100, is below this partner's cap: the feed is cut off, and the
    # warning says which setting to raise.
    with wb.connect(env=sb.env, db=tmp_path / "b.db") as w:
        summary = w.pull(progress=False)
        assert summary.status == "partial"
        assert summary.lists["domestic_events"].listed == 100
        assert "WORKBENCH_PEEK_COUNT" in summary.failures[0]["error"]
        assert w.store.meta("peek_count_learned") is None


class _CappedFeed(BaseHTTPRequestHandler):
    """A domestic feed of 50 events that refuses a Count above 37 without naming a range."""

    cap, events = 37, 50

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        count = int(parse_qs(url.query).get("Count", ["10"])[0])
        if url.path.endswith(PEEK_EVENTS_PATH) and count <= self.cap:
            body, status = [{"id": f"e{i}", "type": "x"} for i in range(min(count, 50))], 200
        else:
            body, status = {"Message": "The request is invalid."}, 400
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def capped_feed() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _CappedFeed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_count_is_halved_until_accepted(capped_feed: str, tmp_path: Path):
    env = {
        "WORKBENCH_GATEWAY_URL": capped_feed,
        "WORKBENCH_SUBSCRIPTION_KEY": "subscription-key-0123456789",
        "WORKBENCH_DOMESTIC_TOKEN": "static-token-0123456789abcdef",
    }
    with wb.connect(env=env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        assert w.store.meta("peek_count_learned") == "37"  # 25 full, then bisected to 37
        assert summary.lists["domestic_events"].listed == 37
        assert summary.status == "partial"  # 50 events at a cap of 37: cut off
        assert set(summary.lists) == {"domestic_events"}  # the only interface configured


class _Feed:
    """A domestic feed on 127.0.0.1 whose cap, events and refusal body a test sets: Counts
    above ``cap`` (or every Count, with ``cap = 0``) get 400 and ``refusal``; ``ignore_count``
    answers every event whatever was asked; Counts in ``broken`` get 503."""

    def __init__(self) -> None:
        self.cap, self.events, self.ignore_count = 37, 50, False
        self.broken: set[int] = set()
        self.refusal: object = {"Message": "The request is invalid."}
        feed = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                count = int(parse_qs(url.query).get("Count", ["10"])[0])
                body: object
                if not url.path.endswith(PEEK_EVENTS_PATH):
                    body, status = [], 200
                elif count in feed.broken:
                    body, status = {"Message": "Service unavailable"}, 503
                elif count > feed.cap:
                    body, status = feed.refusal, 400
                else:
                    shown = feed.events if feed.ignore_count else min(count, feed.events)
                    body, status = [{"id": f"e{i}", "type": "x"} for i in range(shown)], 200
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.env = {
            "WORKBENCH_GATEWAY_URL": f"http://127.0.0.1:{self.server.server_address[1]}",
            "WORKBENCH_SUBSCRIPTION_KEY": "subscription-key-0123456789",
            "WORKBENCH_DOMESTIC_TOKEN": "static-token-0123456789abcdef",
            "WORKBENCH_MAX_ATTEMPTS": "1",
        }


@pytest.fixture
def feed() -> Iterator[_Feed]:
    made = _Feed()
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.server.shutdown()
        made.server.server_close()


_PROBLEM = {
    "type": "https://tools.ietf.org/html/rfc7231#section-6.5.1",
    "title": "One or more validation errors occurred.",
    "status": 400,
    "errors": {"Count": ["The field Count must be between 1 and 30."]},
}


@pytest.mark.parametrize(
    "refusal",
    [
        {"Message": "Count must be between 1 and 30"},
        {"Message": "Count must be an integer 1..30"},
        {"Message": "Count: max 30"},
        {"Message": "Count must be at most 30."},
        {"Message": "Count must be less than or equal to 30."},
        {"Message": "Bad Request"},
        _PROBLEM,
    ],
)
def test_any_400_to_the_peek_is_a_refusal_of_the_count(
    feed: _Feed, refusal: object, tmp_path: Path
) -> None:
    feed.cap, feed.events, feed.refusal = 30, 10, refusal
    with wb.connect(env=feed.env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        assert summary.status == "ok", str(summary)
        assert summary.lists["domestic_events"].listed == 10
        assert w.store.meta("peek_count_learned") == "25"
        assert len(_asked_counts(w, summary.run_id)) == 3  # 100, 50, 25


def test_a_400_to_every_count_says_the_partners_own_words(feed: _Feed, tmp_path: Path) -> None:
    feed.cap, feed.refusal = 0, {"Message": "Access denied due to missing subscription key."}
    with wb.connect(env=feed.env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        error = summary.lists["domestic_events"].error or ""
        assert "missing subscription key" in error
        assert "cap" not in error.lower()
        assert len(_asked_counts(w, summary.run_id)) <= 8  # the search is bounded
        assert w.store.meta("peek_count_learned") is None


def test_a_learned_cap_is_tried_again_when_the_feed_fills_it(feed: _Feed, tmp_path: Path):
    feed.cap, feed.events = 37, 200
    with wb.connect(env=feed.env, db=tmp_path / "wb.db") as w:
        assert w.pull(progress=False).lists["domestic_events"].listed == 37
        assert w.store.meta("peek_count_learned") == "37"  # 25 held a full answer: bisected
        # The cap has not moved: one extra call, refused; the same events again at the cap say
        # the peek keeps what it hands out.
        still = w.pull(progress=False)
        assert _asked_counts(w, still.run_id) == [("37", 200), ("100", 400), ("37", 200)]
        assert w.store.meta("peek_count_learned") == "37"
        feed.cap = 100  # the partner now hands out more: the profile's count is used again
        grown = w.pull(progress=False)
        assert _asked_counts(w, grown.run_id) == [("37", 200), ("100", 200), ("100", 200)]
        assert grown.lists["domestic_events"].listed == 100
        assert w.store.meta("peek_count_learned") is None
    with wb.connect(env={**feed.env, "WORKBENCH_PEEK_COUNT": "150"}, db=tmp_path / "b.db") as w:
        w.pull(progress=False)  # 150 refused, 75 full: bisected to the cap, 100
        assert w.store.meta("peek_count_learned") == "100"
        feed.cap = 120
        again = w.pull(progress=False)
        assert _asked_counts(w, again.run_id) == [("100", 200), ("150", 400), ("100", 200)]
        assert w.store.meta("peek_count_learned") == "100"  # 150 refused: still the best known


def test_a_failure_while_searching_the_cap_keeps_what_was_read(feed: _Feed, tmp_path: Path):
    feed.cap, feed.events, feed.broken = 37, 50, {37}  # 100, 50 refused; 25 full; 37 fails
    with wb.connect(env=feed.env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        assert summary.lists["domestic_events"].listed == 25  # the answer that held is stored
        assert summary.lists["domestic_events"].error is None
        assert summary.status == "partial"  # 25 answered at 25: the rest may be unseen
        assert w.store.meta("peek_count_learned") == "25"


def test_more_events_than_asked_is_not_a_cut_off(feed: _Feed, tmp_path: Path) -> None:
    feed.cap, feed.events, feed.ignore_count = 1000, 150, True
    with wb.connect(env={**feed.env, "WORKBENCH_PEEK_COUNT": "10"}, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        assert summary.status == "ok", str(summary)
        assert summary.lists["domestic_events"].listed == 150
        assert summary.lists["domestic_events"].cut_off_at == 0


def test_a_feed_whose_peek_removes_events_is_read_whole_past_its_cap(sandbox_factory, tmp_path):
    sb = sandbox_factory(max_peek_count=20, initial_domestic_events=45, peek_removes=True)
    truth = {e["eventId"] for e in sb.state.domestic_events}
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
        assert summary.status == "ok", str(summary)  # nothing is hidden: the rest was peeked
        events = w.store.table("events", where="source = 'domestic'")
        assert set(events["event_key"]) == truth
        assert sb.state.domestic_events == []
        taken = [c for c, status in _asked_counts(w, summary.run_id) if status == 200]
        assert taken == ["12", "18", "19"]  # each took events away: 12 + 18 + the last 15
