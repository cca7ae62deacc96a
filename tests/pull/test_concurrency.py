"""Pulls on one database take turns: a second pull waits for the first (bounded), or exits with
"another pull is running"; never a "database is locked" traceback. Readers are never blocked.

The CLI pulls are subprocesses that import the workbench before they are told to go
(:class:`CliPull`), so the second one can be started at a chosen moment of the first.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

import workbench as wb
from workbench.pull import PullSummary
from workbench.sandbox import Sandbox
from workbench.store import Store
from workbench.storing import LAUNCH

# Slow enough that a pull lasts well over a second: 400 details at 40 ms, 8 at a time.
SLOW_PARTNER = {"initial_requests": 200, "initial_transcripts": 200, "latency_ms": 40}
LOCKED = ("database is locked", "Traceback", "OperationalError")
# The real console entry point, with its imports done before the parent says go.
WARM = """
import sys
import os, workbench.cli, workbench.client, workbench.pesc, workbench.pull, workbench.store
import workbench.storing
workbench.storing.PROCESS_FROM = int(os.environ.get("PROCESS_FROM", workbench.storing.PROCESS_FROM))
print("ready", flush=True)
sys.stdin.readline()
sys.argv = ["workbench", *sys.argv[1:]]
workbench.cli.main()
"""


class CliPull:
    """``workbench pull --db DB ARGS`` in a subprocess, imported and waiting for :meth:`go`."""

    def __init__(self, db: Path, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WARM, "pull", "--db", str(db), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
            cwd=db.parent,  # no stray workbench.toml
        )
        self.pid = self.proc.pid

    def go(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        assert self.proc.stdout.readline() == "ready\n", self.proc.communicate()
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self) -> tuple[int, str, str]:
        """Wait for the pull to end: exit code, stdout, stderr."""
        out, err = self.proc.communicate(timeout=180)
        return self.proc.returncode, out, err

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def cli_pulls() -> Iterator[Callable[..., CliPull]]:
    """Start warm CLI pulls; any still running at teardown is killed."""
    started: list[CliPull] = []

    def make(db: Path, env: dict[str, str], *args: str) -> CliPull:
        started.append(CliPull(db, env, *args))
        return started[-1]

    yield make
    for pull in started:
        pull.stop()


def run_of(db: Path, pid: int) -> tuple[int, str] | None:
    """(id, status) of the run of process ``pid``, once it has begun."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
            return conn.execute("SELECT id, status FROM runs WHERE pid = ?", (pid,)).fetchone()
    except sqlite3.OperationalError:  # no database yet, or its schema not committed yet
        return None


def wait_for_run(db: Path, pull: CliPull) -> tuple[int, str]:
    """Block until ``pull`` holds the lock and has begun its run."""
    while (run := run_of(db, pull.pid)) is None:
        assert pull.proc.poll() is None, pull.finish()
        time.sleep(0.01)
    return run


def detail_calls(store: Store, run_id: int) -> int:
    # int(): a numpy integer would be bound as a blob and match nothing
    calls = store.table("calls", where="run_id = ?", params=[int(run_id)])
    return int(calls["operation"].str.endswith(".pull_detail").sum())


@pytest.mark.slow
def test_a_second_cli_pull_waits_for_the_first(
    sandbox_factory: Callable[..., Sandbox], cli_pulls: Callable[..., CliPull], tmp_path: Path
) -> None:
    sb = sandbox_factory(**SLOW_PARTNER)
    db = tmp_path / "workbench.db"
    first, second = cli_pulls(db, sb.env, "--wait", "30"), cli_pulls(db, sb.env, "--wait", "30")
    first.go()
    first_run, _ = wait_for_run(db, first)
    second.go()
    assert run_of(db, first.pid) == (first_run, "running")  # the second comes while it runs

    for pull in (first, second):
        code, out, err = pull.finish()
        assert code == 0, out + err
        assert not [text for text in LOCKED if text in err], err

    with Store(db) as store:
        runs = store.table("runs").set_index("pid")
        a, b = runs.loc[first.pid], runs.loc[second.pid]
        assert (a["status"], b["status"]) == ("ok", "ok")
        assert a["finished_at"] <= b["started_at"]  # one after the other, never both at once
        listed = len(sb.pending_request_ids()) + len(sb.pending_transcript_ids())
        assert detail_calls(store, a["id"]) == listed
        assert detail_calls(store, b["id"]) == 0  # it found everything stored by the first
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.slow
def test_a_second_cli_pull_that_cannot_wait_says_another_pull_is_running(
    sandbox_factory: Callable[..., Sandbox], cli_pulls: Callable[..., CliPull], tmp_path: Path
) -> None:
    sb = sandbox_factory(**SLOW_PARTNER)
    db = tmp_path / "workbench.db"
    first, second = cli_pulls(db, sb.env), cli_pulls(db, sb.env, "--wait", "0.5")
    first.go()
    first_run, _ = wait_for_run(db, first)
    second.go()

    code, out, err = second.finish()
    assert code == 1, out + err
    assert "Another pull is running" in err and f"(pid {first.pid} since" in err, err
    assert "try again" in err
    assert not [text for text in LOCKED if text in err], err
    assert run_of(db, second.pid) is None  # it never began a run
    assert run_of(db, first.pid) == (first_run, "running")  # and the first goes on

    code, out, err = first.finish()
    assert code == 0, out + err
    assert not [text for text in LOCKED if text in err], err


def test_two_threads_pulling_one_database_take_turns(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path
) -> None:
    sb = sandbox_factory(initial_requests=40, initial_transcripts=40, latency_ms=5)
    db = tmp_path / "workbench.db"
    summaries: list[PullSummary] = []
    errors: list[BaseException] = []

    def pull() -> None:
        try:
            with wb.connect(env=sb.env, db=db) as w:
                summaries.append(w.pull(progress=False, lock_timeout_s=60))
        except BaseException as exc:  # collected, so the test shows it
            errors.append(exc)

    threads = [threading.Thread(target=pull) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert [s.status for s in summaries] == ["ok", "ok"]
    fetched = sorted(
        s.lists["supplier_requests"].details_fetched
        + s.lists["consumer_transcripts"].details_fetched
        for s in summaries
    )
    assert fetched == [0, 80]  # the one that waited found everything stored
    with Store(db) as store:
        assert len(store.table("transcript_requests")) == 40
        assert len(store.table("transcripts_received")) == 40


@pytest.mark.slow
def test_a_reader_is_not_blocked_by_a_pull(
    sandbox_factory: Callable[..., Sandbox], cli_pulls: Callable[..., CliPull], tmp_path: Path
) -> None:
    sb = sandbox_factory(**SLOW_PARTNER)
    db = tmp_path / "workbench.db"
    pull = cli_pulls(db, sb.env)
    pull.go()
    run_id, _ = wait_for_run(db, pull)

    seen: list[int] = []  # details stored, as read while the pull was running
    while pull.proc.poll() is None:
        with Store(db) as reader:
            rows = len(reader.table("transcript_requests", where="detail_fetched_at IS NOT NULL"))
            status = reader.table("runs", where="id = ?", params=[run_id])["status"].iloc[0]
            journal = reader.db.execute("PRAGMA journal_mode").fetchone()[0]
        if status == "running":
            seen.append(rows)
        time.sleep(0.05)
    code, out, err = pull.finish()
    assert code == 0, out + err
    assert journal == "wal"  # readers read the last commit, never wait for the writer
    # Reads returned between the pull's writes, not after them: they watched it progress.
    assert len(set(seen)) >= 2, seen
    assert seen == sorted(seen)


@pytest.mark.slow
@pytest.mark.parametrize("process_from", ["1000000000", "1"], ids=["thread", "process"])
def test_ctrl_c_says_what_was_stored_and_the_next_pull_continues(
    sandbox_factory: Callable[..., Sandbox],
    cli_pulls: Callable[..., CliPull],
    tmp_path: Path,
    process_from: str,
) -> None:
    sb = sandbox_factory(**SLOW_PARTNER)
    db = tmp_path / "workbench.db"
    first = cli_pulls(db, {**sb.env, "PROCESS_FROM": process_from})
    first.go()
    run_id, _ = wait_for_run(db, first)
    with Store(db, read_only=True) as store:  # some details are in before Ctrl-C
        while detail_calls(store, run_id) < 10:
            time.sleep(0.05)
    first.proc.send_signal(signal.SIGINT)
    code, out, err = first.finish()
    assert code == 130
    assert f"Interrupted: pull run {run_id} stopped" in err and "The next pull continues" in err
    assert "Traceback" not in err
    with Store(db, read_only=True) as store:
        fetched = detail_calls(store, run_id)
        urls = store.table("calls", where="run_id = ?", params=[int(run_id)])["url"]
        assert fetched and urls.is_unique  # what was fetched is recorded, once
    assert not storing_processes(first.pid)  # the pull waited for its storing process
    second = cli_pulls(db, sb.env)
    second.go()
    code, out, err = second.finish()
    assert code == 0, out + err
    with Store(db) as store:
        (next_run,) = store.table("runs", where="pid = ?", params=[second.pid])["id"]
        listed = len(sb.pending_request_ids()) + len(sb.pending_transcript_ids())
        assert (
            fetched + detail_calls(store, next_run) <= listed + 8
        )  # at most those in flight again
        assert store.table("runs", where="id = ?", params=[run_id])["status"].iloc[0] == "failed"


def storing_processes(pull: int) -> list[int]:
    """The storing processes of the pull whose process id is ``pull`` still running."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended, or not a process
            continue
        if LAUNCH.encode() in argv and str(pull).encode() in argv:
            found.append(int(proc.name))
    return found
