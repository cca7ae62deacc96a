"""``workbench report --no-pull`` against its floor: a papermill run of an empty notebook.

Builds a store as the demo does (a sandbox pull, a morning's sends, eight hours at the partner,
a second pull) in a temporary folder, then runs, alternately and ``--repeat`` times, each as
its own process like a scheduler would:

- ``workbench report --no-pull --db STORE`` (checks, the reconcile notebook, the HTML);
- ``papermill empty.ipynb out.ipynb``: Python, papermill, a kernel, one empty cell. That is
  the floor of a design that runs reports as notebooks.

Prints the best time of each and their ratio (goal <= 2.5), then where the report's time goes:
the CLI's imports, papermill's, each notebook cell (papermill's own timings), the HTML export
and a kernel's start, each measured apart.

    .venv/bin/python bench/report.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

import workbench as wb
from workbench.sandbox import SandboxSettings
from workbench.scenario import act_out

BIN = Path(sys.executable).parent
GOAL = 2.5


def build_store(folder: Path) -> Path:
    """The demo's story in a fresh store: pull, sends, eight hours, pull again."""
    db = folder / "workbench.db"
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    with wb.connect("sandbox", db=db, sandbox=SandboxSettings(start=start)) as w:
        w.pull(progress=False)
        act_out(w)
        assert w.sandbox is not None
        w.sandbox.advance(hours=8)
        w.pull(progress=False)
    return db


def timed(command: list[str], cwd: Path) -> tuple[float, str]:
    """Seconds one command took (it must succeed), and its stdout."""
    began = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def empty_notebook(folder: Path) -> Path:
    nb = new_notebook(cells=[new_code_cell("")])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "empty.ipynb"
    nbformat.write(nb, path)
    return path


def cell_times(ipynb: Path) -> list[tuple[float, str]]:
    """(seconds, first line) of each code cell of an executed notebook, slowest first."""
    nb = nbformat.read(ipynb, as_version=4)
    found = [
        (float(c.metadata.get("papermill", {}).get("duration") or 0), c.source.splitlines()[0])
        for c in nb.cells
        if c.cell_type == "code" and c.source.strip()
    ]
    return sorted(found, reverse=True)


def kernel_start() -> float:
    """Seconds to start a Python kernel, see it ready, and shut it down."""
    from jupyter_client.manager import start_new_kernel

    began = time.perf_counter()
    manager, client = start_new_kernel(kernel_name="python3", stderr=subprocess.DEVNULL)
    client.stop_channels()
    manager.shutdown_kernel(now=True)
    return time.perf_counter() - began


def trend_costs(db: Path) -> tuple[int, float, float]:
    """The trends section's parts, in this process (best of 3): how many points, one point's
    ``load`` + ``reconcile`` (the latest run's), and the chart drawn as PNG."""
    from workbench.reconcile import load, reconcile
    from workbench.report import figure_html, open_store, pull_runs, trends, trends_chart

    store = open_store(db)
    at = pull_runs(store)["finished_at"].iloc[-1]
    found = trends(store, days=14)
    point, chart = [], []
    for _ in range(3):
        began = time.perf_counter()
        reconcile(load(store, as_of=at))
        point.append(time.perf_counter() - began)
        began = time.perf_counter()
        figure_html(trends_chart(found))
        chart.append(time.perf_counter() - began)
    return len(found.points), min(point), min(chart)


def lifecycle_costs(db: Path) -> float:
    """The lifecycle section's three charts (funnel, ageing, daily volumes) drawn as PNG, in
    this process (best of 3)."""
    from workbench.reconcile import load, reconcile
    from workbench.report import (
        ageing_chart,
        daily_volumes_chart,
        figure_html,
        funnel_chart,
        open_store,
    )

    tables = load(open_store(db))
    rec = reconcile(tables)
    best = []
    for _ in range(3):
        began = time.perf_counter()
        for fig in (
            funnel_chart(rec),
            ageing_chart(rec),
            daily_volumes_chart(tables, until=rec.now),
        ):
            figure_html(fig)
        best.append(time.perf_counter() - began)
    return min(best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        folder = Path(tmp)
        print("building the store (sandbox, pull, sends, eight hours, pull)...", flush=True)
        db = build_store(folder)
        empty = empty_notebook(folder)
        report = [str(BIN / "workbench"), "report", "--no-pull", "--db", str(db),
                  "--output-dir", str(folder / "reports")]  # fmt: skip
        floor = [str(BIN / "papermill"), "--no-progress-bar", str(empty), str(folder / "out.ipynb")]
        timed(floor, folder)  # warm the file cache for both
        reports, floors, stdout = [], [], ""
        for _ in range(args.repeat):
            seconds, stdout = timed(report, folder)
            reports.append(seconds)
            floors.append(timed(floor, folder)[0])
        best, base = min(reports), min(floors)
        ratio = best / base
        print(f"workbench report --no-pull: {best:6.2f} s (best of {args.repeat})")
        print(f"papermill, empty notebook:  {base:6.2f} s (best of {args.repeat})")
        verdict = "ok" if ratio <= GOAL else "over"
        print(f"ratio: {ratio:.2f}x (goal <= {GOAL}x: {verdict})")

        ipynb = Path(stdout.strip().splitlines()[-2])
        python = str(BIN / "python")
        bare = min(timed([python, "-c", "pass"], folder)[0] for _ in range(3))
        cli = min(timed([python, "-c", "import workbench.cli"], folder)[0] for _ in range(3))
        both = "import workbench.cli, papermill"
        runner = min(timed([python, "-c", both], folder)[0] for _ in range(3)) - cli
        job = f"{both}, workbench.report.job"
        jobs = min(timed([python, "-c", job], folder)[0] for _ in range(3)) - cli - runner
        cells = cell_times(ipynb)
        read = ("import nbformat; from pathlib import Path; from workbench.report.runner import "
                f"export_html; nb = nbformat.read({str(ipynb)!r}, as_version=4)")  # fmt: skip
        export = f"{read}; export_html(nb, Path('again.html'), title='bench')"
        html = min(timed([python, "-c", export], folder)[0] for _ in range(3)) - min(
            timed([python, "-c", read], folder)[0] for _ in range(3)
        )  # in a process of its own, as a report's first and only export
        in_cells = sum(s for s, _ in cells)
        kernel = min(kernel_start() for _ in range(3))
        libs = "import pandas, matplotlib.figure"
        needed = min(timed([python, "-c", libs], folder)[0] for _ in range(3)) - bare
        ours = "from workbench import reconcile, report"
        imports = min(timed([python, "-c", ours], folder)[0] for _ in range(3)) - bare
        points, point, chart = trend_costs(db)
        lifecycle = lifecycle_costs(db)
        print("\nwhere the report's time goes (its last run):")
        print(f"  {bare:6.2f} s  python start")
        print(f"  {cli - bare:6.2f} s  the CLI's imports (workbench.cli)")
        print(f"  {runner:6.2f} s  papermill's imports (jsonschema's among them)")
        print(f"  {jobs:6.2f} s  the report job's imports (workbench.report.job: no pandas)")
        print(f"  {in_cells:6.2f} s  notebook cells, of which:")
        for seconds, line in cells[:6]:
            print(f"      {seconds:6.2f} s  {line[:70]}")
        print("      of which, measured apart (best of 3):")
        print(f"      {imports:6.2f} s  the kernel's imports (workbench.reconcile, .report),")
        print(f"      {needed:6.2f} s    of which pandas and matplotlib alone")
        shared = max(points - 1, 0)  # the previous run's point is the one changes reconciled
        trend = f"trends: {shared} of {points} points x {point:.2f} s (load + reconcile)"
        print(f"      {shared * point:6.2f} s  {trend}")
        print(f"      {chart:6.2f} s  trends: the chart as PNG")
        print(f"      {lifecycle:6.2f} s  lifecycle: funnel, ageing and daily volumes as PNG")
        print(f"  {html:6.2f} s  HTML export (the first, imports included)")
        print(f"  {kernel:6.2f} s  a kernel's start and shutdown (jupyter_client)")
        parts = cli + runner + jobs + in_cells + html + kernel
        print(
            f"  {parts:6.2f} s  in all, against {best:.2f} s (each part measured apart, best of 3)"
        )


if __name__ == "__main__":
    main()
