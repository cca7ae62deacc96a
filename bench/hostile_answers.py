"""Peak memory of a pull whose partner answers details with gzip bombs.

The tests' hostile sandbox (``tests/hostile/sandbox.py``) runs in this process; its
``gzip_bomb_bytes`` answers some transcript requests' details with ``--bomb-mb`` MB of spaces
before the answer, gzipped (about 1/1000 of that on the wire, never held inflated). Each pull
runs in a fresh process of its own, at ``WORKBENCH_CONCURRENCY=8``, so its peak RSS
(``ru_maxrss``) is its own. Prints:

  1. peak RSS of the pull given one bomb, and its ratio to 400 MB (goal < 1), with the error the
     bombed call failed with (it names WORKBENCH_MAX_ANSWER_BYTES) and the details stored;
  2. the same with eight bombs, fetched at once by the eight detail threads;
  3. the baseline, in the same run: the same pull without the fault, and how many times each
     bombed peak RSS is the baseline's.

    .venv/bin/python bench/hostile_answers.py [--bomb-mb 512] [--requests 200]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

GOAL_MB = 400.0


def measured_pull(env: dict[str, str], db: str, conn: Any) -> None:
    """In a fresh process: one pull; sends back its status, failures and peak RSS (MB)."""
    import workbench as wb

    with wb.connect(env=env, db=db) as w:
        summary = w.pull()
        fetched = summary.lists["supplier_requests"].details_fetched
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    conn.send((summary.status, summary.failures, fetched, peak_mb))


def run_pull(
    ctx: Any, env: dict[str, str], db: Path
) -> tuple[str, list[dict[str, str]], int, float]:
    parent, child = ctx.Pipe()
    process = ctx.Process(target=measured_pull, args=(env, str(db), child))
    process.start()
    if not parent.poll(600):
        process.kill()
        raise RuntimeError("the pull did not finish in 10 minutes")
    result = parent.recv()
    process.join(timeout=60)
    return result  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mb", type=int, default=512, help="inflated size of the bomb")
    parser.add_argument("--requests", type=int, default=200, help="transcript requests listed")
    args = parser.parse_args()

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' hostile sandbox
    from tests.hostile.sandbox import HostileSandbox
    from workbench.sandbox import SandboxSettings

    ctx = mp.get_context("spawn")
    print(f"gzip bomb: {args.bomb_mb} MB of spaces, gzipped by the sandbox")
    sandbox = HostileSandbox(SandboxSettings(initial_requests=args.requests))
    with sandbox as sb, tempfile.TemporaryDirectory() as tmp:
        targets = [re.escape(request_id) for request_id in sb.pending_request_ids()[:8]]
        env = {**sb.env, "WORKBENCH_CONCURRENCY": "8"}
        results = {}
        for name, bombed in (("baseline", 0), ("one bomb", 1), ("eight bombs", 8)):
            pattern = rf"/api/transcriptrequests/({'|'.join(targets[:bombed])})$"
            sb.set_faults(
                gzip_bomb_bytes=(args.bomb_mb << 20) if bombed else 0, path_pattern=pattern
            )
            results[name] = run_pull(ctx, env, Path(tmp) / f"{bombed}.db")

    base_status, _, base_fetched, base_peak = results["baseline"]
    ok = True
    for n, (name, bombs) in enumerate((("one bomb", 1), ("eight bombs", 8)), start=1):
        status, failures, fetched, peak = results[name]
        print(
            f"{n}. peak RSS of a pull given {name} of {args.bomb_mb} MB: {peak:.0f} MB = "
            f"{peak / GOAL_MB:.2f} x {GOAL_MB:.0f} MB (goal < 1), {peak / base_peak:.2f} x the "
            f"baseline; run {status}, {fetched} details stored"
        )
        for failure in failures[:2]:
            print(f"   failed: {failure['id']}: {failure['error'][:300]}")
        ok = ok and peak < GOAL_MB and status == "partial" and len(failures) == bombs
    print(
        f"3. baseline, the same pull without a bomb: {base_peak:.0f} MB (run {base_status}, "
        f"{base_fetched} details stored)"
    )
    if not ok:
        print("OVER THE GOAL, or the bombs did not fail alone", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
