"""Many details at once: bounded threads, one frame, failures per id, fine in a running loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pandas as pd
import pytest

import workbench as wb
from workbench.api import frames as batch
from workbench.sandbox import Sandbox

UNKNOWN = "0123456789abcdef0123456789abcdef"


def test_requests_in_order_with_failures_per_id(sandbox: Sandbox, w: wb.Workbench) -> None:
    ids = sandbox.pending_request_ids()
    asked = [ids[2], UNKNOWN, ids[0], ids[2], ids[1]]  # a duplicate is fetched once
    df = w.supplier.requests(asked)
    assert list(df["request_id"]) == [ids[2], UNKNOWN, ids[0], ids[1]]
    assert df["error"].isna().tolist() == [True, False, True, True]
    assert df.loc[1, "error"].startswith("NotFound")
    assert df.loc[0, "message_type"] == "TranscriptRequest"
    assert list(df.columns[-4:]) == ["pescxml", "parse_error", "error", "call_id"]
    assert df["request_id"].dtype == "string"
    assert df.attrs["operation"] == "supplier.requests"
    assert sandbox.hits[("GET", f"/api/transcriptrequests/{ids[2]}")] == 1


def test_requests_from_a_pending_frame(sandbox: Sandbox, w: wb.Workbench) -> None:
    pending = w.supplier.pending_requests()
    df = w.supplier.requests(pending)
    assert len(df) == len(pending)
    assert df["error"].isna().all()
    assert set(df["request_id"]) == set(sandbox.pending_request_ids())
    assert w.supplier.requests(pending["request_id"]).shape == df.shape


def test_transcripts(sandbox: Sandbox, w: wb.Workbench) -> None:
    ids = sandbox.pending_transcript_ids()
    df = w.consumer.transcripts(ids)
    assert list(df["request_id"]) == ids
    assert (df["message_type"] == "CollegeTranscript").all()
    assert df.attrs["operation"] == "consumer.transcripts"


def test_no_ids_gives_the_columns(w: wb.Workbench) -> None:
    df = w.supplier.requests([])
    assert df.empty
    assert list(df.columns[:2]) == ["request_id", "request_date"]  # then the parsed fields
    assert list(df.columns[-4:]) == ["pescxml", "parse_error", "error", "call_id"]


def test_parse_failures_are_rows_not_errors(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(malformed_share=0.5, initial_requests=20)
    df = connect_to(sb).supplier.requests(sb.pending_request_ids())
    assert len(df) == 20
    assert df["error"].isna().all()
    assert df["parse_error"].notna().any()
    assert df["pescxml"].notna().all()


def test_works_inside_a_running_event_loop(sandbox: Sandbox, w: wb.Workbench) -> None:
    async def notebook_cell() -> pd.DataFrame:
        # What Jupyter does: our synchronous call runs while an event loop is running.
        asyncio.get_running_loop()
        return w.supplier.requests(sandbox.pending_request_ids())

    df = asyncio.run(notebook_cell())
    assert len(df) == len(sandbox.pending_request_ids())
    assert df["error"].isna().all()


def test_concurrency_is_bounded_by_the_setting(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(initial_requests=24)
    sb.set_faults(latency_ms=20)
    w = connect_to(sb, WORKBENCH_CONCURRENCY="3")
    seen: set[str] = set()
    lock = threading.Lock()

    def note_thread(exchange) -> None:  # recorders run on the thread that made the call
        if exchange.interface == "supplier":
            with lock:
                seen.add(threading.current_thread().name)

    w.session.recorders.append(note_thread)
    df = w.supplier.requests(sb.pending_request_ids())
    assert df["error"].isna().all()
    assert 1 <= len(seen) <= 3


def test_progress_bar_only_when_asked_or_interactive(w: wb.Workbench, sandbox, capsys) -> None:
    ids = sandbox.pending_request_ids()
    w.supplier.requests(ids)  # pytest is not interactive: quiet
    assert capsys.readouterr().err == ""
    w.supplier.requests(ids, progress=True)
    assert "supplier.requests" in capsys.readouterr().err
    w.supplier.requests(ids[:3], progress=True)  # a handful: no bar
    assert capsys.readouterr().err == ""


def test_ids_of_accepts_strings_series_and_frames() -> None:
    assert batch.ids_of("abc") == ["abc"]
    assert batch.ids_of(pd.Series(["a", "b", "a"])) == ["a", "b"]
    assert batch.ids_of(pd.DataFrame({"request_id": ["x", "y"]})) == ["x", "y"]
    with pytest.raises(ValueError, match="request_id column"):
        batch.ids_of(pd.DataFrame({"id": ["x"]}))


def test_a_failure_that_is_not_an_error_row_stops_the_batch() -> None:
    started: list[int] = []

    def fetch(value: int) -> list[dict[str, object]]:
        started.append(value)
        time.sleep(0.005)
        if value == 3:
            raise RuntimeError("a bug, not a partner answer")
        if value == 1:
            raise wb.NotFound("no such request", status=404)
        return [{"request_id": str(value)}]

    rows = batch.fetch_all([0, 1, 2], fetch, concurrency=2, progress=False)
    assert [r["request_id"] for r in rows] == ["0", None, "2"]
    assert rows[1]["error"].startswith("NotFound")
    with pytest.raises(RuntimeError, match="a bug"):
        batch.fetch_all(list(range(3, 400)), fetch, concurrency=2, progress=False)
    assert len(started) < 3 + 397  # the rest was dropped, not fetched


def test_a_ctrl_c_while_a_thread_starts_still_waits_for_its_fetch(monkeypatch) -> None:
    release, release_late = threading.Event(), threading.Event()
    finished: list[int] = []

    def fetch(value: int) -> list[dict[str, object]]:
        # held until the test lets go; the thread the pool lost to the Ctrl-C, longest
        (release_late if threading.current_thread().name.endswith("_1") else release).wait(10)
        finished.append(value)
        return [{"request_id": str(value)}]

    start = threading.Thread.start

    def interrupted_start(self: threading.Thread) -> None:
        start(self)  # the thread runs, then the Ctrl-C lands before the pool records it
        if self.name.endswith("_1"):
            threading.Timer(0.2, release.set).start()
            threading.Timer(1.0, release_late.set).start()
            raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted_start)
    with pytest.raises(KeyboardInterrupt):
        batch.fetch_all(list(range(8)), fetch, concurrency=4, progress=False)
    monkeypatch.undo()
    # every fetch that started has ended before fetch_all gave up: none records afterwards
    assert sorted(finished) == sorted(set(finished)) and len(finished) >= 2
    assert not [t for t in threading.enumerate() if t.name.startswith("wb-") and t.is_alive()]


def test_then_turns_finished_rows_in_the_callers_thread_while_the_pool_runs_ahead() -> None:
    caller, fetched, batches = threading.current_thread(), list[int](), list[int]()

    def fetch(value: int) -> list[dict[str, object]]:
        fetched.append(value)
        if value == 1:
            raise wb.NotFound("no such request", status=404)
        return [{"request_id": str(value)}]

    def then(rows: list[dict[str, object]]) -> list[dict[str, object]]:
        assert threading.current_thread() is caller
        if not batches:  # held: the pool may run ahead, by at most 4 x concurrency waiting
            time.sleep(0.2)
            assert len(fetched) <= 4 * 2 + len(rows)
        batches.append(len(rows))
        return [{**row, "stored": True} for row in rows]

    rows = batch.fetch_all(list(range(50)), fetch, concurrency=2, progress=False, then=then)
    assert sum(batches) == 50 and len(batches) > 1
    assert [row["request_id"] for row in rows] == ["0", None, *map(str, range(2, 50))]
    assert all(row["stored"] for row in rows) and rows[1]["error"].startswith("NotFound")
