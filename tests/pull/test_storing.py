"""A pull's details stored by a process of its own (``workbench.storing``): the same rows as
the pulling thread stores, each call recorded once and given once to the caller's recorder; a
storing process that dies fails what it had, and the next pull fetches it again."""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from pathlib import Path

import pytest

import workbench.storing
from tests.pull.test_concurrency import storing_processes

DETAILS = ("supplier.pull_detail", "consumer.pull_detail")


@pytest.fixture
def process(monkeypatch):
    """Every list's details stored by the storing process."""
    monkeypatch.setattr(workbench.storing, "PROCESS_FROM", 1)


def stored(w) -> dict[str, set]:
    """What a store holds of the details: documents, entity rows and child records."""
    documents = w.store.table("documents")
    requests = w.store.table("transcript_requests")
    return {
        "documents": set(zip(documents["item_id"], documents["content_sha256"], strict=True)),
        "requests": set(requests["request_id"][requests["detail_call_id"].notna()]),
        "courses": set(map(tuple, w.store.table("courses")[["transcript_id", "position"]].values)),
    }


def detail_urls(w, run_id: int) -> list[str]:
    calls = w.store.table("calls", where="run_id = ?", params=[run_id])
    return list(calls["url"][calls["operation"].isin(DETAILS)])


def test_the_storing_process_stores_what_the_pulling_thread_does(
    sandbox, connect_to, exchanges, tmp_path: Path, monkeypatch
):
    by_thread = connect_to(sandbox, db=tmp_path / "thread.db")
    assert by_thread.pull(progress=False).status == "ok"
    monkeypatch.setattr(workbench.storing, "PROCESS_FROM", 1)
    given = len(exchanges)
    by_process = connect_to(sandbox, db=tmp_path / "process.db")
    summary = by_process.pull(progress=False)
    assert summary.status == "ok"
    assert summary.lists["supplier_requests"].details_fetched == 25
    assert stored(by_process) == stored(by_thread)
    assert stored(by_process)["courses"]  # a comparison of nothing proves nothing
    urls = detail_urls(by_process, summary.run_id)
    assert len(urls) == len(set(urls)) == 40  # each detail call recorded once
    assert sorted(e.url for e in exchanges[given:] if e.operation in DETAILS) == sorted(urls)
    documents = by_process.store.table("documents")
    calls = set(by_process.store.table("calls")["id"])
    assert set(documents["call_id"]) <= calls  # a document names the call that fetched it


def test_a_storing_process_that_dies_fails_what_it_had_and_the_next_pull_fetches_it(
    process, sandbox_factory, connect_to, tmp_path: Path
):
    sb = sandbox_factory(initial_requests=60, initial_transcripts=0, latency_ms=5)
    seen: list[str] = []
    killed: list[int] = []

    def kill_it(exchange) -> None:  # a recorder of the caller's: sees every detail fetched
        if exchange.operation != "supplier.pull_detail":
            return
        seen.append(exchange.url)
        if len(seen) == 1:  # until the process has opened the store, the pull stores alone
            opened(tmp_path / "connect_to.db")
        if len(seen) == 11:  # ten details sent to the process since
            killed.extend(storing_processes(os.getpid()))
            for pid in killed:
                os.kill(pid, signal.SIGKILL)

    w = connect_to(sb)
    w.session.recorders.insert(0, kill_it)
    summary = w.pull(progress=False)
    assert killed
    assert summary.status == "partial"
    failed = [f for f in summary.failures if f["list"] == "supplier_requests"]
    assert failed and {f["error"] for f in failed} == {
        "StoreError: the pull's storing process did not store it (it ended with exit code -9)"
    }
    lost = [f for f in summary.failures if f["list"] == "(calls)"]  # their calls, not recorded
    assert len(lost) == 1 and lost[0]["error"].startswith(f"{len(failed)} call records")
    result = summary.lists["supplier_requests"]
    assert result.details_fetched + result.details_failed == 60
    assert result.details_failed == len(failed)
    have = set(w.store.table("transcript_requests", where="detail_call_id IS NOT NULL").request_id)
    assert len(have) == result.details_fetched  # none counted stored that is not
    w.session.recorders.remove(kill_it)
    again = w.pull(progress=False)
    assert again.status == "ok"
    assert again.lists["supplier_requests"].details_fetched == 60 - len(have)
    assert not storing_processes(os.getpid())


def opened(db: Path) -> None:
    """Wait until a storing process of this pull has ``db`` open."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in storing_processes(os.getpid()):
            with suppress(OSError):
                if any(str(db) in os.readlink(f) for f in Path(f"/proc/{pid}/fd").iterdir()):
                    time.sleep(0.2)  # and has said it is ready
                    return
        time.sleep(0.02)
    raise AssertionError("no storing process opened the store")


def test_the_storing_process_runs_this_workbench_whatever_the_folder_holds(
    process, sandbox, connect_to, tmp_path: Path, monkeypatch
):
    other = tmp_path / "elsewhere" / "workbench"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise SystemExit('another workbench')\n")
    monkeypatch.chdir(other.parent)  # python -m would import that one first
    w = connect_to(sandbox)
    summary = w.pull(progress=False)
    assert summary.status == "ok", summary.failures
    assert summary.lists["supplier_requests"].details_fetched == 25
