"""`kill -9` of a `workbench pull` at 10 random moments: after each, the database passes
``PRAGMA integrity_check``, the killed run reads ``failed``, and the next complete pull fetches
exactly the details still missing, so that nothing is lost and nothing is doubled.

The pulls are the real CLI in subprocesses, against one long-lived sandbox. They are forked from
a process that imported the workbench once (:class:`PullServer`), so the kills land in the pull
rather than in two seconds of imports; and a kill's moment is a random share of the calls the
pull is about to make, so the moments spread over the whole pull on a fast machine or a slow one.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import closing, suppress
from pathlib import Path

import pytest

from tests.watched import WatchedSandbox
from workbench.sandbox import Sandbox, serve
from workbench.store import Store

pytestmark = pytest.mark.slow

ROUNDS = 10
SEED = 20260302
# The calls every pull makes besides details: a token per role and two lists plus two feeds.
FIXED_CALLS = 8
DETAIL_TABLES = {  # entity table -> (id column, the sandbox's list of pending ids)
    "transcript_requests": ("request_id", WatchedSandbox.pending_request_ids),
    "transcripts_received": ("transcript_id", WatchedSandbox.pending_transcript_ids),
}
CHILD_COUNTS = (  # child table, parent table, id column, the parent's count of them
    ("recipients", "transcript_requests", "request_id", "recipient_count"),
    ("courses", "transcripts_received", "transcript_id", "course_count"),
    ("awards", "transcripts_received", "transcript_id", "award_count"),
)
# Imports the workbench once, then forks the real console entry point for each pull it is told
# to run ("pull OUT ERR ARGS..."), reports "pid N", reaps the child and reports "exit CODE".
SERVER = """
import os, sys, traceback
import workbench.cli, workbench.client, workbench.pesc, workbench.pull, workbench.store
import workbench.storing
workbench.storing.PROCESS_FROM = int(os.environ["PROCESS_FROM"])

def child(out, err, args):
    os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
    os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    sys.argv = ["workbench", *args]
    code = 1
    try:
        workbench.cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

for line in sys.stdin:
    out, err, *args = line.split()
    pid = os.fork()
    if pid == 0:
        child(out, err, args)
    print("pid", pid, flush=True)
    print("exit", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


class PullServer:
    """Runs ``workbench pull`` in forked subprocesses, one at a time, without paying for the
    imports each time: a pull starts at once, so a kill's moment falls in the pull itself."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            # one BLAS thread: the server forks after importing numpy
            env={**os.environ, **env, "OPENBLAS_NUM_THREADS": "1"},
            cwd=folder,  # no stray workbench.toml
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.count = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("closed\n")

    def start(self, *args: str) -> int:
        """Start ``workbench pull ARGS``; its process id."""
        assert self.proc.stdin is not None
        self.count += 1
        self.out, self.err = (self.folder / f"pull-{self.count}.{k}" for k in ("out", "err"))
        self.proc.stdin.write(f"{self.out} {self.err} pull {' '.join(args)}\n")
        self.proc.stdin.flush()
        word, pid = self.lines.get(timeout=60).split()
        assert word == "pid", (word, pid)
        return int(pid)

    def running(self) -> bool:
        return self.lines.empty()

    def wait(self) -> tuple[int, str, str]:
        """Wait for the pull to end: its exit code (-9 when killed), stdout and stderr."""
        word, code = self.lines.get(timeout=300).split()
        assert word == "exit", (word, code)
        return int(code), self.out.read_text(), self.err.read_text()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a pull hangs: the test has failed already
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.mark.parametrize("process_from", [10**9, 1], ids=["thread", "process"])
def test_kill_minus_nine_at_ten_random_moments(tmp_path: Path, process_from: int) -> None:
    """Each round: maybe move the partner's clock, kill a pull at a random moment, check the
    database, then a complete pull must fetch exactly what is missing. Last, a pull with no
    change fetches no detail. The details are stored by the pulling thread, or by the pull's
    storing process (killed with it)."""
    rng = random.Random(SEED)
    db = tmp_path / "workbench.db"
    args = ("--db", str(db))
    # Spread the moments: one in each tenth of a pull, in random order.
    shares = [(i + rng.random()) / ROUNDS for i in range(ROUNDS)]
    rng.shuffle(shares)
    outcomes: Counter[str] = Counter()
    with serve(
        seed=7,
        initial_requests=300,
        initial_transcripts=300,
        latency_ms=5,
        requests_per_hour=40,
        transcripts_per_hour=40,
        closed_elsewhere_per_hour=6,
        # No new documents for listed ids: "missing" below is then exactly what a pull fetches
        # (re-fetched versions: tests/pull/test_versions.py).
        reissue_per_hour=0,
        resubmission_per_hour=0,
        cancellation_per_hour=0,
    ) as sb:
        server = PullServer(tmp_path, {**sb.env, "PROCESS_FROM": str(process_from)})
        try:
            for round_no, share in enumerate(shares):
                if round_no and rng.random() < 0.6:  # the partner moves between kills
                    sb.advance(rng.choice([0.5, 1, 2, 3]))
                expected = FIXED_CALLS + len(missing_details(db, sb))
                pid = server.start(*args)
                kill_when(server, db, pid, int(share * expected), rng)
                outcomes[check_after_kill(server, db, pid)] += 1

                missing = missing_details(db, sb)
                run_id = finish_ok(server, db, server.start(*args))
                check_complete(db, sb, run_id, fetched=missing)

            run_id = finish_ok(server, db, server.start(*args))
            check_complete(db, sb, run_id, fetched=set())
            operations = run_operations(db, run_id)
            assert not [o for o in operations if o.endswith(".pull_detail")], operations
            assert len([o for o in operations if o != "token"]) == 4, operations
        finally:
            server.close()
    # Most kills must interrupt a running pull, or the test proves little; a kill can also
    # land before the run began (while the store opens) or after it finished (the last tenth).
    assert outcomes["interrupted"] >= ROUNDS // 2, outcomes


def kill_when(server: PullServer, db: Path, pid: int, calls: int, rng: random.Random) -> None:
    """SIGKILL pull ``pid`` once its run has recorded ``calls`` calls (or it ended)."""
    while server.running() and calls_made(db, pid) < calls:
        time.sleep(0.002)
    time.sleep(rng.random() * 0.02)  # anywhere between two commits, or inside one
    if server.running():  # not reported ended, so the pid is still the pull's
        with suppress(ProcessLookupError):  # it ended a moment ago
            os.kill(pid, signal.SIGKILL)


def check_after_kill(server: PullServer, db: Path, pid: int) -> str:
    """The database is sound and the killed run failed; what the kill interrupted."""
    code, _, err = server.wait()
    assert code in (0, -signal.SIGKILL), err
    assert "Traceback" not in err, err
    with Store(db, busy_timeout_s=5) as store:  # opening settles what the crash left
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = store.db.execute("SELECT pid, status, summary FROM runs").fetchall()
        assert "running" not in {status for _, status, _ in runs}
        mine = [(status, summary) for run_pid, status, summary in runs if run_pid == pid]
        with store.run_lock(timeout_s=0):  # the lock died with its holder
            pass
    if code == 0:
        assert [status for status, _ in mine] == ["ok"]
        return "finished"
    if not mine:
        return "before the run"
    status, summary = mine[0]
    if status == "ok":  # killed after the run was recorded as finished
        return "finished"
    assert status == "failed" and "interrupted" in summary, mine
    return "interrupted"


def finish_ok(server: PullServer, db: Path, pid: int) -> int:
    """Wait for a complete pull: exit 0 and its run ``ok``; its run id."""
    code, out, err = server.wait()
    assert code == 0, out + err
    assert "Traceback" not in err, err
    with closing(sqlite3.connect(db)) as conn:
        row = conn.execute("SELECT id, status FROM runs WHERE pid = ?", (pid,)).fetchone()
    assert row is not None and row[1] == "ok", row
    return int(row[0])


def calls_made(db: Path, pid: int) -> int:
    """Calls recorded so far by the run of process ``pid`` (0 before its run began)."""
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as conn:
            row = conn.execute(
                "SELECT count(*) FROM calls WHERE run_id = "
                "(SELECT max(id) FROM runs WHERE pid = ?)",
                (pid,),
            ).fetchone()
    except sqlite3.OperationalError:  # no database yet, or its schema not committed yet
        return 0
    return int(row[0])


def missing_details(db: Path, sb: Sandbox) -> set[str]:
    """The ids the sandbox lists whose detail the database lacks."""
    stored: dict[str, set[str]] = {table: set() for table in DETAIL_TABLES}
    if db.exists():
        with closing(sqlite3.connect(db)) as conn:
            for table, (column, _) in DETAIL_TABLES.items():
                stored[table] = {
                    row[0]
                    for row in conn.execute(
                        f"SELECT {column} FROM {table} WHERE detail_fetched_at IS NOT NULL"  # noqa: S608
                    )
                }
    return {
        i
        for table, (_, listed) in DETAIL_TABLES.items()
        for i in listed(sb)
        if i not in stored[table]
    }


def run_operations(db: Path, run_id: int) -> list[str]:
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT operation FROM calls WHERE run_id = ?", (run_id,))
        return [row[0] for row in rows]


def check_complete(db: Path, sb: Sandbox, run_id: int, *, fetched: set[str]) -> None:
    """After the complete pull ``run_id``: every listed id stored once with its document, the
    list flags right, nothing doubled, and exactly the ``fetched`` ids' details were fetched."""
    with Store(db, busy_timeout_s=5) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn = store.db
        for table, (column, listed) in DETAIL_TABLES.items():
            ids = set(listed(sb))
            rows = conn.execute(
                f"SELECT e.{column}, e.on_list, e.parse_error, e.detail_failed_at, "  # noqa: S608
                f"EXISTS (SELECT 1 FROM documents d WHERE d.entity = '{table}' "
                f"AND d.item_id = e.{column} AND d.version = e.current_version) "
                f"FROM {table} e LEFT JOIN calls c ON c.id = e.detail_call_id "
                f"WHERE e.{column} IN (SELECT value FROM json_each(?))",
                (json_list(ids),),
            ).fetchall()
            assert sorted(r[0] for r in rows) == sorted(ids), table  # each exactly once
            assert [r for r in rows if r[1:] != (1, None, None, 1)] == [], table
            on_list = {r[0] for r in conn.execute(f"SELECT {column} FROM {table} WHERE on_list")}  # noqa: S608
            assert on_list == ids, table  # and nothing that left is still flagged listed

        for table, columns in (
            ("transcript_requests", "request_id"),
            ("transcripts_received", "transcript_id"),
            ("recipients", "request_id, position"),
            ("courses", "transcript_id, position"),
            ("awards", "transcript_id, position"),
            ("document_records", "entity, parent_id, record_type, position"),
            ("events", "source, event_key"),
            ("snapshot_items", "snapshot_id, position"),
        ):
            doubled = conn.execute(
                f"SELECT {columns}, count(*) FROM {table} GROUP BY {columns} HAVING count(*) > 1"  # noqa: S608
            ).fetchall()
            assert doubled == [], table
        for child, parent, column, count in CHILD_COUNTS:  # no document's records twice
            wrong = conn.execute(
                f"SELECT p.{column} FROM {parent} p WHERE p.{count} IS NOT NULL AND "  # noqa: S608
                f"p.{count} != (SELECT count(*) FROM {child} c WHERE c.{column} = p.{column})"
            ).fetchall()
            assert wrong == [], child
        torn = conn.execute(
            "SELECT s.id FROM snapshots s WHERE s.item_count != "
            "(SELECT count(*) FROM snapshot_items i WHERE i.snapshot_id = s.id)"
        ).fetchall()
        assert torn == []
        lists = conn.execute(
            "SELECT list_name, count(*) FROM snapshots WHERE run_id = ? GROUP BY list_name",
            (run_id,),
        ).fetchall()
        assert sorted(n for _, n in lists) == [1, 1, 1, 1], lists

        details = conn.execute(
            "SELECT operation, request_id FROM calls WHERE run_id = ? "
            "AND operation LIKE '%.pull_detail' ORDER BY request_id",
            (run_id,),
        ).fetchall()
        assert sorted(i for _, i in details) == sorted(fetched)  # the missing ones, each once


def json_list(values: set[str]) -> str:
    return json.dumps(sorted(values))
