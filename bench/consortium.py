"""The consortium report over many colleges against one college's report, in the same run.

Builds ``--colleges`` stores (default 24) of ``--requests`` transcript requests each (default
10,000, and a tenth as many transcripts received) from the sandbox, each college its own seed,
by a pull as a college's first morning would make it; built once into ``--cache DIR`` and reused
when present (a store half built is not kept: it is pulled into a temporary file, then moved).
Then runs, back to back, each as its own process like a scheduler would:

- ``workbench report --no-pull --db <first college>`` (the reconcile notebook);
- ``workbench report --notebook consortium --no-pull -p stores=<every college>``;

and prints their times, their ratio, and the peak RSS of each (the largest process of the
command's tree: the CLI or the notebook's kernel, from ``wait4``; goal < 1 GB).

    .venv/bin/python bench/consortium.py --cache data/bench-consortium [--colleges 24]
        [--requests 10000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

GOAL_MB = 1024


def build_college(target: Path, seed: int, requests: int) -> float:
    """Pull a sandbox of ``requests`` requests into ``target``; the seconds it took."""
    import workbench as wb
    from workbench.sandbox import SandboxSettings

    began = time.perf_counter()
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    settings = SandboxSettings(seed=seed, start=start, initial_requests=requests,
                               initial_transcripts=requests // 10, backlog_days=30)  # fmt: skip
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        db = Path(folder) / target.name
        with wb.connect("sandbox", db=db, sandbox=settings) as w:
            summary = w.pull(progress=False)
        if summary.status != "ok":
            raise RuntimeError(f"the pull into {target.name} was {summary.status}")
        os.replace(db, target)  # closed: its WAL is checkpointed into it
    return time.perf_counter() - began


def build(cache: Path, colleges: int, requests: int, jobs: int) -> list[Path]:
    """The colleges' stores in ``cache``, built when missing."""
    cache.mkdir(parents=True, exist_ok=True)
    stores = [cache / f"college-{n:02d}-{requests}.db" for n in range(1, colleges + 1)]
    missing = [(s, n) for n, s in enumerate(stores, start=1) if not s.is_file()]
    if not missing:
        print(f"{colleges} stores of {requests} requests reused from {cache}")
        return stores
    print(f"building {len(missing)} stores of {requests} requests in {cache} ({jobs} at a time)")
    began = time.perf_counter()
    with ProcessPoolExecutor(jobs) as pool:
        futures = [pool.submit(build_college, s, n, requests) for s, n in missing]
        for (store, _), future in zip(missing, futures, strict=True):
            print(f"  {store.name}: {future.result():.0f} s", flush=True)
    print(f"built in {time.perf_counter() - began:.0f} s")
    return stores


def measured(command: list[str]) -> tuple[float, float]:
    """Seconds a command took (it must succeed), and the peak RSS (MB) of its tree's largest
    process: ``wait4`` gives the child's, its waited-for children (the kernel) included."""
    began = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - began
        if child.returncode:
            err.seek(0)
            sys.exit(f"{' '.join(command[:7])}... exited {child.returncode}:\n"
                     f"{err.read().decode(errors='replace')[-3000:]}")  # fmt: skip
    return elapsed, usage.ru_maxrss / 1024  # Linux: kB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="folder of the built stores")
    parser.add_argument("--colleges", type=int, default=24)
    parser.add_argument("--requests", type=int, default=10_000, help="per college")
    parser.add_argument("--jobs", type=int, default=2, help="stores built at a time")
    args = parser.parse_args()
    stores = build(args.cache, args.colleges, args.requests, args.jobs)
    cli = [sys.executable, "-m", "workbench.cli", "report", "--no-pull"]
    with tempfile.TemporaryDirectory() as out:
        one, one_mb = measured([*cli, "--db", str(stores[0]), "--output-dir", out])
        many, many_mb = measured([*cli, "--notebook", "consortium", "--db", str(stores[0]),
                                  "--output-dir", out, "-p",
                                  f"stores={','.join(map(str, stores))}"])  # fmt: skip
        tables = sorted(Path(out).glob("consortium-*.csv"))
        rows = len(tables[-1].read_text().splitlines()) - 1 if tables else 0
    print(f"one college's report      {one:7.1f} s   peak RSS {one_mb:6.0f} MB")
    print(f"consortium of {len(stores):2d} colleges {many:7.1f} s   peak RSS {many_mb:6.0f} MB "
          f"({rows} rows in its table)")  # fmt: skip
    print(
        f"ratio                     {many / one:7.1f}x  ({many / one / len(stores):.2f}x per "
        f"college); peak RSS goal < {GOAL_MB} MB: {'met' if many_mb < GOAL_MB else 'NOT met'}"
    )
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
