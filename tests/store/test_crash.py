"""kill -9 at random moments: the database stays sound, nothing committed is lost or torn,
and the pull lock is free again at once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

from workbench.store import Store

WORKER = Path(__file__).with_name("crash_worker.py")
ROUNDS = 8


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the crash worker forks its writers")
def test_kill_minus_nine_at_random_moments(db_path: Path) -> None:
    rng = random.Random()
    Store(db_path).close()
    root = Path(__file__).resolve().parents[2]
    errors = db_path.with_name("worker-stderr.txt")
    with errors.open("w") as stderr:
        try:
            run_rounds(db_path, root, stderr, rng)
        except BaseException:
            print(errors.read_text())  # the worker's tracebacks, if any
            raise


def run_rounds(db_path: Path, root: Path, stderr: IO[str], rng: random.Random) -> None:
    committed: dict[str, set[int]] = {"call": set(), "snapshot": set(), "outbox": set()}
    with subprocess.Popen(
        [sys.executable, str(WORKER), str(db_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    ) as worker:
        assert worker.stdin is not None and worker.stdout is not None
        for _ in range(ROUNDS):
            worker.stdin.write("go\n")
            worker.stdin.flush()
            first = worker.stdout.readline().split()
            assert first[0] == "pid", first
            writer = int(first[1])
            for _ in range(rng.randint(1, 25)):  # let it commit a few things ...
                kind, ident, *_ = worker.stdout.readline().split()
                committed[kind].add(int(ident))
            time.sleep(rng.random() * 0.05)  # ... then kill it wherever it is
            os.kill(writer, signal.SIGKILL)
            for line in iter(worker.stdout.readline, "reaped\n"):
                kind, ident, *_ = line.split()
                committed[kind].add(int(ident))
            check(db_path, committed)
        worker.stdin.write("quit\n")


def check(db_path: Path, committed: dict[str, set[int]]) -> None:
    with Store(db_path, busy_timeout_s=5) as store:  # opening recovers what the crash left
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        calls = store.table("calls")
        assert committed["call"] <= set(calls["id"])
        sizes = calls["url"].str.extract(r"size=(\d+)")[0].astype(int)
        assert (calls["response_body"].str.len() == sizes).all()  # no torn rows
        snaps = store.db.execute(
            "SELECT s.id, s.item_count, (SELECT count(*) FROM snapshot_items i "
            "WHERE i.snapshot_id = s.id) FROM snapshots s"
        ).fetchall()
        assert committed["snapshot"] <= {s[0] for s in snaps}
        assert all(count == items for _, count, items in snaps)  # all items or none
        outbox = store.table("outbox")
        assert committed["outbox"] <= set(outbox["id"])
        assert "pending" not in set(outbox["state"])  # a killed send is uncertain now
        assert "running" not in set(store.table("runs")["status"])
        with store.run_lock(timeout_s=0):  # the killed writer's lock died with it
            pass
