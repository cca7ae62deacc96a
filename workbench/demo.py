"""``workbench demo``: the main job end to end, against the embedded sandbox.

Sandbox -> a token per interface -> every list and a few details -> pull into ``data/demo.db``
-> a morning's sends through the outbox (:mod:`workbench.scenario`) -> the partner's clock moves
eight hours -> pull again -> the reconciliation report (HTML), whose path it prints -> the next
commands, on ``data/demo.db`` (:func:`next_steps`).

The partner's clock starts eight hours ago, so that it ends at about now: the report (as of now)
shows no item dated in the future.

>>> result = run_demo(print)  # doctest: +SKIP
>>> result.report.html_path  # doctest: +SKIP
PosixPath('data/reports/reconcile-20261121T080102Z.html')
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from workbench.client import Workbench, connect
from workbench.doctor import render, run_checks
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.report.runner import NotebookRun
    from workbench.sandbox import Sandbox

DEMO_DB = "data/demo.db"
REPORTS_DIR = "data/reports"
HOURS_LATER = 8
SQLITE_SUFFIXES = ("-wal", "-shm", "-journal")
# A partner that miscounts some acknowledgments, so the report has mismatches to show.
ACK_MISCOUNT_RATE = 0.25
# Columns worth seeing in a terminal; the DataFrames hold many more.
_REQUEST_COLUMNS = [
    "request_id",
    "request_date",
    "student_first_name",
    "student_last_name",
    "transcript_purpose",
    "parse_error",
]
_TRANSCRIPT_COLUMNS = [
    "request_id",
    "student_first_name",
    "student_last_name",
    "school_name",
    "course_count",
    "award_count",
    "parse_error",
]


@dataclass
class DemoResult:
    """What a demo did: whether every step passed, its database, its report, its sandbox.

    ``sandbox`` is stopped by then; its settings and ``issued_tokens`` stay readable (the
    secret-scan test looks for them in everything the demo wrote).
    """

    ok: bool
    db: Path
    report: NotebookRun | None  # None with report=False, or when the notebook failed
    sandbox: Sandbox | None
    elapsed_s: float
    next_steps: list[str] = field(default_factory=list)  # the commands printed last


def run_demo(
    echo: Callable[[str], None],
    *,
    seed: int = 1,
    details: int = 3,
    db: str | Path = DEMO_DB,
    reports_dir: str | Path = REPORTS_DIR,
    report: bool = True,
    timeout_s: float = 600,
) -> DemoResult:
    """Run the main job against a fresh embedded sandbox; ``db`` is started afresh.

    ``ok`` is False when a check failed, the second pull was not ok, or the report's notebook
    failed (then the failure and the partial outputs' paths are echoed, not raised).
    """
    from workbench.sandbox import SandboxSettings
    from workbench.sandbox.runner import with_overrides
    from workbench.sandbox.settings import default_start
    from workbench.scenario import act_out

    started = time.perf_counter()
    db = Path(db)
    refuse_real_partner(db)
    remove_database(db)
    settings = with_overrides(
        SandboxSettings(seed=seed, start=default_start() - timedelta(hours=HOURS_LATER)),
        ack_miscount_rate=ACK_MISCOUNT_RATE,
    )
    with connect("sandbox", db=db, sandbox=settings) as w:
        assert w.sandbox is not None
        sandbox = w.sandbox
        echo(f"{w!r}\n")
        checks = run_checks(w)
        echo("Tokens and one read per interface:")
        echo(render(checks) + "\n")
        for title, df in _lists(w):
            _show(echo, f"{title}: {len(df)} row(s)", df)
        _details(echo, w, details)
        first = w.pull(progress=False)
        echo(f"== Pull into {db}\n{first}\n")
        acted = act_out(w, seed=seed)
        echo("== Sent through the outbox (recorded before sending, marked after)")
        for what, ids in acted.items():
            echo(f"  {what:26s} {len(ids)}")
        echo("")
        sandbox.advance(hours=HOURS_LATER)
        second = w.pull(progress=False)
        echo(f"== {HOURS_LATER} hours later at the partner, pull again (incremental)\n{second}\n")
    ok = bool((checks["status"] != "FAILED").all()) and second.status == "ok"
    echo(f"The snapshot store is {db.resolve()}")
    echo(f"  try: {_command('sqlite-utils')} tables {shlex.quote(str(db))} --counts")
    done = None
    if report:
        done = _report(echo, db, reports_dir, timeout_s)
        ok = ok and done is not None
    steps = next_steps(db, critical_id(db))
    echo("\nNext, on the demo's database (as printed, from this folder; --no-pull: reading it")
    echo("does not pull another sandbox into it):")
    for step in steps:
        echo(f"  $ {step}")
    elapsed = time.perf_counter() - started
    echo(f"\nDemo {'done' if ok else 'FAILED'} in {elapsed:.0f} s.")
    return DemoResult(ok, db, done, sandbox, elapsed, steps)


def critical_id(db: Path) -> str | None:
    """The id of the most severe exception in the store at ``db`` (None when there is none, or
    the store cannot be read: a failed demo says why before)."""
    from workbench import reconcile
    from workbench.errors import WorkbenchError
    from workbench.report import open_store

    try:
        with open_store(db) as store:
            found = reconcile.reconcile(reconcile.load(store)).exceptions
    except WorkbenchError:
        return None
    return str(found["id"].iloc[0]) if len(found) else None  # most severe first


LAB_PORT = 8888  # JupyterLab's own default
# What `make lab` starts JupyterLab with: no news, no update checks, no PyPI lookups.
LAB_OPTIONS = (
    "--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate "
    "--LabApp.extension_manager=readonly"
)


def next_steps(db: Path, request_id: str | None) -> list[str]:
    """Shell commands that go on from the demo on ``db`` without pulling: troubleshoot
    ``request_id`` (when there is one), open the explorer in JupyterLab, write the report
    again. Paths are as given (relative to this folder) or absolute; ``workbench`` is named as
    the shell finds it."""
    from workbench.report.runner import notebook_path

    where, workbench = shlex.quote(str(db)), _command("workbench")
    steps = []
    if request_id is not None:
        steps.append(f"{workbench} troubleshoot {shlex.quote(request_id)} --db {where} --no-pull")
    try:
        explore = shlex.quote(str(notebook_path("explore").resolve()))
    except ConfigError:
        explore = None  # a notebooks folder without the explorer (WORKBENCH_NOTEBOOKS)
    if explore is not None:
        root = " --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
        db_env = shlex.quote(str(db.resolve()))
        # The port shown, so that it is plain where to change it (JupyterLab tries the next
        # ones when it is taken).
        lab = f"{_command('jupyter')} lab {explore} --port {LAB_PORT} {LAB_OPTIONS}{root}"
        steps.append(f"WORKBENCH_DB={db_env} {lab}")
    steps.append(f"{workbench} report --db {where} --no-pull")
    return steps


def _command(name: str) -> str:
    """How to run the script ``name`` of this environment from this folder: its bare name when
    the shell finds that one, else its path (relative to this folder when it is inside it)."""
    script = Path(sys.executable).parent / name
    found = shutil.which(name)
    if found is not None and Path(found).resolve() == script.resolve():
        return name
    try:
        return shlex.quote(str(script.relative_to(Path.cwd())))
    except ValueError:
        return shlex.quote(str(script))


def refuse_real_partner(db: Path) -> None:
    """``ConfigError`` when ``db`` holds a partner's data other than the embedded sandbox's:
    the demo starts its database afresh, and never at the cost of a real store."""
    from workbench.config import SANDBOX, Profile
    from workbench.errors import StoreError
    from workbench.store.identity import check_partner, stored_partner

    try:
        recorded = stored_partner(db)
    except StoreError:
        return  # not a store we can read: what the demo replaced before, it replaces now
    sandbox = Profile(SANDBOX, "embedded sandbox", is_sandbox=True).identity()
    check_partner(db, recorded, sandbox, fix=f"Move {db} away: the demo starts it afresh.")


def remove_database(db: Path) -> None:
    """Delete the SQLite database ``db`` and its journals (``-wal``, ``-shm``, ``-journal``),
    and nothing else: not ``demo.db.keepme``, nor the run lock ``demo.db.lock`` another process
    may hold, nor a folder. ``ConfigError`` when ``db`` itself is a folder."""
    if db.is_dir():
        raise ConfigError(f"{db} is a folder, not a database: move it away or pass another db.")
    for path in (db, *(db.with_name(db.name + s) for s in SQLITE_SUFFIXES)):
        if path.is_file():
            path.unlink()


def _report(
    echo: Callable[[str], None], db: Path, reports_dir: str | Path, timeout_s: float
) -> NotebookRun | None:
    """The reconcile report on ``db``; None (the failure and partial outputs told) when a cell
    failed."""
    from workbench.report.runner import run_report

    echo("\n== The reconciliation report (notebooks/reconcile.ipynb, run by papermill)")
    run = run_report(
        "reconcile",
        {"db": str(db.resolve()), "pull": False},
        warn=echo,
        output_dir=reports_dir,
        timeout_s=timeout_s,
    )
    if run is not None:
        echo(f"Notebook: {run.ipynb_path.resolve()}")
        echo(f"HTML report: {run.html_path.resolve()}")
    return run


def _details(echo: Callable[[str], None], w: Workbench, count: int) -> None:
    requests = w.supplier.pending_requests()
    picked = w.supplier.requests(requests["request_id"].head(count), progress=False)
    _show(echo, f"Details of {len(picked)} transcript request(s)", picked, _REQUEST_COLUMNS)
    transcripts = w.consumer.pending_transcripts()
    picked = w.consumer.transcripts(transcripts["request_id"].head(count), progress=False)
    _show(echo, f"Details of {len(picked)} transcript(s)", picked, _TRANSCRIPT_COLUMNS)


def _lists(w: Workbench) -> list[tuple[str, pd.DataFrame]]:
    return [
        ("Diagnostics (international)", w.diagnostics()),
        ("Pending placement events (international)", w.pending_placement_events()),
        ("Peek events, count=10 (domestic)", w.peek_events(count=10)),
        ("Transcript requests without a response (supplier)", w.supplier.pending_requests()),
        ("Transcripts without a response (consumer)", w.consumer.pending_transcripts()),
    ]


def _show(
    echo: Callable[[str], None], title: str, df: pd.DataFrame, columns: list[str] | None = None
) -> None:
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    else:
        df = df.drop(columns=["raw"], errors="ignore")
    with pd.option_context(
        "display.width", 120, "display.max_columns", 8, "display.max_colwidth", 36
    ):
        echo(f"== {title}\n{df.head(10).to_string(index=False) if len(df) else '(none)'}\n")
