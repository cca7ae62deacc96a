"""Events of any shape (DESIGN §3), end to end: each shape the sandbox sends, in an array or in
an object holding one, read by the DataFrames, pulled into a store and counted by the events
report; a shape no common name finds, read through the profile's ``event_fields``; events that
are not objects at all. What the sandbox knows of its events is the truth they are held to."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
import pytest

import workbench as wb
from tests.notebook_code import notebook_code
from workbench.api.frames import events_frame
from workbench.sandbox import Sandbox
from workbench.spec import PEEK_EVENTS_PATH
from workbench.store import Store

EVENTS = notebook_code("events")  # what notebooks/events.ipynb defines

SHAPES = ("flat", "kind_at", "event_info")


def _truth(sb: Sandbox, source: str) -> dict[str, dict[str, Any]]:
    """The sandbox's own record of each event of a feed, by id."""
    events = sb.state.placement_events if source == "placement" else sb.state.domestic_events
    return {e["eventId"]: e for e in events}


def _newest_first(truth: dict[str, dict[str, Any]]) -> list[str]:
    return sorted(truth, key=lambda i: truth[i]["occurredAt"], reverse=True)


@pytest.mark.parametrize("event_list", ["array", "object"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_frames_find_each_events_id_type_and_time(sandbox_factory, connect_to, shape,
                                                      event_list) -> None:  # fmt: skip
    sb = sandbox_factory(event_shape=shape, event_list=event_list)
    w = connect_to(sb)
    frames = {"placement": w.pending_placement_events(), "domestic": w.peek_events(count=100)}
    answer = json.loads(w.store.table("calls")["response_body"].iloc[-1])
    assert isinstance(answer, dict if event_list == "object" else list)  # as the partner sent
    for source, df in frames.items():
        truth = _truth(sb, source)
        assert sorted(df["event_id"]) == sorted(truth)
        for event_id, event_type, occurred_at in zip(
            df["event_id"], df["event_type"], df["occurred_at"], strict=True
        ):
            assert event_type == truth[event_id]["eventType"]
            if shape == "event_info":  # OCAS' SIS shape has no time: a live answer says none
                assert occurred_at is pd.NaT
            else:
                assert occurred_at == pd.Timestamp(truth[event_id]["occurredAt"])
        assert str(df["occurred_at"].dt.tz) == "UTC"
        assert not {"id", "kind", "at", "event_info_action"} & set(df.columns)  # read as such
        assert any(c.startswith(("payload_", "event_info_data_")) for c in df.columns)


@pytest.mark.parametrize("written", ["epoch_ms", "dotnet"])
def test_times_written_as_numbers_or_dotnet_dates_are_read(sandbox_factory, connect_to, written):
    sb = sandbox_factory(event_shape="kind_at", event_time=written)
    df = connect_to(sb).peek_events(count=100)
    truth = _truth(sb, "domestic")
    assert list(df["occurred_at"]) == [pd.Timestamp(truth[i]["occurredAt"]) for i in df["event_id"]]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_pull_stores_each_shape_and_the_report_counts_it(sandbox_factory, tmp_path, shape):
    sb = sandbox_factory(event_shape=shape, event_list="object" if shape == "kind_at" else "array")
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        assert w.pull(progress=False).status == "ok"
        events = w.store.table("events")
        no_time = shape == "event_info"
        for source in ("placement", "domestic"):
            truth = _truth(sb, source)
            mine = events[events["source"] == source].set_index("event_key")
            assert sorted(mine.index) == sorted(truth)  # keyed by their ids
            assert mine["event_type"].to_dict() == {i: e["eventType"] for i, e in truth.items()}
            if no_time:  # placed at the time first seen, and flagged
                assert (mine["occurred_at"] == mine["first_seen_at"]).all()
                assert mine["time_is_first_seen"].all()
            else:
                assert mine["occurred_at"].to_dict() == {
                    i: pd.Timestamp(e["occurredAt"]) for i, e in truth.items()
                }
                assert not mine["time_is_first_seen"].any()
            listed = w.store.as_of()[f"{source}_events"]  # the list as the pull saw it
            assert dict(zip(listed["event_id"], listed["event_type"], strict=True)) == {
                i: e["eventType"] for i, e in truth.items()
            }
            assert bool(listed["occurred_at"].isna().all()) is no_time
            # latest: newest first, whatever the shape (no time: the feed's order, reversed)
            latest = EVENTS.latest_events(w.store, 10, source=source)
            assert latest["event_id"].tolist() == _newest_first(truth)[:10]

        summary = EVENTS.feed_summary(w.store).set_index("source")
        for source in ("placement", "domestic"):
            types = {e["eventType"] for e in _truth(sb, source).values()}
            assert summary.loc[source, "event_types"] == len(types) > 1
            assert summary.loc[source, "without_time"] == (summary.loc[source, "events"] * no_time)
        by_type = EVENTS.events_breakdown(w.store, "event_type")
        assert "(not given)" not in set(by_type["event_type"])
        assert by_type["total"].sum() == len(events)
        days = EVENTS.event_days(w.store)
        assert days["total"].sum() == len(events)  # every event on a day, its own or first seen
        html = EVENTS.events_section(w.store).data
        assert "No event has an occurrence time" not in html
        said = f"{len(events)} events had no time of their own: each is counted at the time"
        assert (said in html) is no_time
        latest_html = EVENTS.latest_events_section(w.store, 5).data
        assert ("(first seen)" in latest_html) is no_time
        assert "program name" in latest_html  # the payload's fields, wherever it is kept


def test_a_peek_that_removes_events_loses_none_of_them(sandbox_factory, tmp_path) -> None:
    """A cap learned earlier makes the pull peek twice (at the cap, then at the profile's
    count): when a peek removes what it hands out, the first peek's events are only ever
    handed out once, and must be stored."""
    sb = sandbox_factory(peek_removes=True, initial_domestic_events=30)
    every = set(_truth(sb, "domestic"))
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        w.store.set_meta("peek_count_learned", "20")
        summary = w.pull(progress=False)
        assert summary.status == "ok", str(summary)
        assert sb.state.domestic_events == []  # the partner handed out every event, once
        stored = w.store.table("events", where="source = 'domestic'")
        assert set(stored["event_key"]) == every
        assert summary.lists["domestic_events"].listed == 30
        assert w.peek_events(count=5).empty  # nothing left to hand out


def test_peek_removes_hands_each_event_out_once(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(peek_removes=True, initial_domestic_events=12)
    w = connect_to(sb)
    first, second, third = (set(w.peek_events(count=5)["event_id"]) for _ in range(3))
    assert len(first) == len(second) == 5 and len(third) == 2
    assert not first & second and not (first | second) & third


# -- shapes the sandbox does not send: a feed of the test's own ------------------------------


@pytest.fixture
def odd_feed() -> Iterator[Callable[[list[Any]], dict[str, str]]]:
    """``odd_feed(answer)``: the env of a domestic interface on 127.0.0.1 whose peek answers
    ``answer`` whatever the count (a static token: no identity server)."""
    servers: list[ThreadingHTTPServer] = []

    def serve(answer: list[Any]) -> dict[str, str]:
        data = json.dumps(answer).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                found = urlsplit(self.path).path.endswith(PEEK_EVENTS_PATH)
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) if found else 2))
                self.end_headers()
                self.wfile.write(data if found else b"{}")

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return {
            "WORKBENCH_GATEWAY_URL": f"http://127.0.0.1:{server.server_address[1]}",
            "WORKBENCH_SUBSCRIPTION_KEY": "subscription-key-0123456789",
            "WORKBENCH_DOMESTIC_TOKEN": "static-token-0123456789abcdef",
        }

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


NESTED = [
    {"evt": {"no": f"N{n}", "what": what, "when": f"2026-03-0{n}T09:00:00Z"},
     "body": {"programName": "Practical Nursing", "campus": "Main"}}
    for n, what in ((1, "OfferMade"), (2, "ApplicationSubmitted"), (3, "OfferMade"))
]  # fmt: skip
MAPPING = "id=evt.no,type=evt.what,time=evt.when"


def test_the_profiles_event_fields_find_what_no_common_name_does(odd_feed, tmp_path) -> None:
    feed = odd_feed(NESTED)
    env = {**feed, "WORKBENCH_EVENT_FIELDS": MAPPING}
    with wb.connect(env=env, db=tmp_path / "mapped.db") as w:
        df = w.peek_events(count=10)
        assert df["event_id"].tolist() == ["N1", "N2", "N3"]
        assert df["event_type"].tolist() == ["OfferMade", "ApplicationSubmitted", "OfferMade"]
        assert df["occurred_at"].dt.day.tolist() == [1, 2, 3]
        w.pull(progress=False)
        stored = w.store.table("events").set_index("event_key")
        assert sorted(stored.index) == ["N1", "N2", "N3"]
        assert stored.loc["N2", "event_type"] == "ApplicationSubmitted"
        assert str(stored.loc["N3", "occurred_at"]) == "2026-03-03 09:00:00+00:00"
        assert not stored["time_is_first_seen"].any()
        assert EVENTS.feed_summary(w.store).set_index("source").loc["domestic", "event_types"] == 2
        assert EVENTS.latest_events(w.store, 3)["event_id"].tolist() == ["N3", "N2", "N1"]
        assert set(EVENTS.events_breakdown(w.store, "campus")["campus"]) == {"Main"}  # the body's
    # Without the mapping nothing is found, and nothing is refused: keyed by content, placed
    # at the time first seen, said so.
    with wb.connect(env=feed, db=tmp_path / "unmapped.db") as w:
        assert w.pull(progress=False).status == "ok"
        stored = w.store.table("events")
        assert len(stored) == 3 and stored["event_key"].str.startswith("sha256:").all()
        assert stored["event_type"].isna().all() and stored["time_is_first_seen"].all()
        assert "3 events had no time of their own" in EVENTS.events_section(w.store).data


def test_events_that_are_not_objects_are_stored_by_their_content(odd_feed, tmp_path) -> None:
    feed = odd_feed(["a", 2, {}, {}, "a", None, [1]])
    with wb.connect(env=feed, db=tmp_path / "wb.db") as w:
        df = w.peek_events(count=10)
        assert df["raw"].tolist() == ['"a"', "2", "{}", "{}", '"a"', "null", "[1]"]
        assert df["event_id"].isna().all()
        assert w.pull(progress=False).status == "ok"
        stored = w.store.table("events")
    assert sorted(stored["raw_json"]) == sorted(['"a"', "2", "{}", "null", "[1]"])  # once each
    assert stored["time_is_first_seen"].all()


def test_events_that_are_not_objects_are_stored_from_a_snapshot_too(tmp_path: Path) -> None:
    with Store(tmp_path / "wb.db") as store:
        said = store.record_snapshot(
            None, "domestic_events", ["a", 2, {}, {}], taken_at="2026-03-02T09:00:00Z"
        )
        again = store.record_snapshot(
            None, "domestic_events", [{}, "a"], taken_at="2026-03-03T09:00:00Z"
        )
        stored = store.table("events")
    assert len(said.appeared) == 3 and again.appeared == ()
    assert len(stored) == 3
    # no time of their own: they stay at the time they were first seen
    assert stored["occurred_at"].astype(str).unique().tolist() == ["2026-03-02 09:00:00+00:00"]


def test_the_frame_of_odd_events_keeps_each_as_sent() -> None:
    df = events_frame({"events": ["a", {"id": 1}], "count": 2}, operation="x")
    assert df["event_id"].tolist()[1] == "1" and pd.isna(df["event_id"].iloc[0])
    assert df["raw"].tolist() == ['"a"', '{"id": 1}']
