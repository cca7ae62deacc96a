"""``workbench sandbox``: the partner simulation, served until Ctrl-C; ``workbench demo``: the
main job end to end on the embedded sandbox."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.output import OutputDir, clean_errors, say
from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.report.runner import NotebookRun
    from workbench.sandbox import Sandbox

DEMO_DB = "data/demo.db"
HOURS_LATER = 8
DETAILS = 3  # of each kind, parsed
REQUEST_COLUMNS = ["request_id", "request_date", "student_first_name", "student_last_name"]
TRANSCRIPT_COLUMNS = ["request_id", "student_first_name", "student_last_name", "school_name"]
ACK_MISCOUNT_RATE = 0.25  # some acknowledgments miscount, so the report has mismatches to show
LAB_PORT = 8888  # JupyterLab's own default
# What `make lab` starts JupyterLab with: no news, no update checks, no PyPI lookups.
LAB_OPTIONS = (
    "--LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate "
    "--LabApp.extension_manager=readonly"
)


@dataclass
class DemoResult:
    """What a demo did; ``sandbox`` is stopped by then, its settings and tokens readable."""

    ok: bool
    db: Path
    report: NotebookRun | None  # None with report=False, or when the notebook failed
    sandbox: Sandbox | None


def run_demo(
    echo: Callable[[str], None],
    *,
    db: str | Path = DEMO_DB,
    reports_dir: str | Path = "data/reports",
    report: bool = True,
) -> DemoResult:
    """Run the main job against a fresh embedded sandbox, ``db`` started afresh."""
    import pandas as pd

    from workbench.cli.doctor import render, run_checks
    from workbench.client import connect
    from workbench.sandbox import SandboxSettings
    from workbench.sandbox.runner import with_overrides
    from workbench.sandbox.settings import default_start
    from workbench.scenario import act_out

    started, db = time.perf_counter(), Path(db)
    refuse_real_partner(db)
    remove_database(db)
    start = default_start() - timedelta(hours=HOURS_LATER)  # the report shows no future
    settings = with_overrides(SandboxSettings(start=start), ack_miscount_rate=ACK_MISCOUNT_RATE)
    with connect("sandbox", db=db, sandbox=settings) as w:
        assert w.sandbox is not None
        sandbox = w.sandbox
        echo(f"{w!r}\n")
        checks = run_checks(w)
        echo(f"Tokens and one read per interface:\n{render(checks)}\n")
        lists = {
            "Diagnostics (international)": w.diagnostics,
            "Pending placement events (international)": w.pending_placement_events,
            "Peek events, count=10 (domestic)": lambda: w.peek_events(count=10),
            "Transcript requests without a response (supplier)": w.supplier.pending_requests,
            "Transcripts without a response (consumer)": w.consumer.pending_transcripts,
        }
        frames: dict[str, pd.DataFrame] = {}
        for title, read in lists.items():
            df = read()
            frames[f"{title}: {len(df)} row(s)"] = df
        requests, transcripts = list(frames.values())[3:]
        picked = w.supplier.requests(requests["request_id"].head(DETAILS), progress=False)
        frames[f"Details of {len(picked)} transcript request(s)"] = picked.filter(REQUEST_COLUMNS)
        picked = w.consumer.transcripts(transcripts["request_id"].head(DETAILS), progress=False)
        frames[f"Details of {len(picked)} transcript(s)"] = picked.filter(TRANSCRIPT_COLUMNS)
        shown = ("display.width", 120, "display.max_columns", 8, "display.max_colwidth", 36)
        for title, df in frames.items():
            df = df.drop(columns=["raw"], errors="ignore")
            with pd.option_context(*shown):
                table = df.head(10).to_string(index=False) if len(df) else "(none)"
            echo(f"== {title}\n{table}\n")
        echo(f"== Pull into {db}\n{w.pull(progress=False)}\n")
        echo("== Sent through the outbox (recorded before sending, marked after)")
        for what, ids in act_out(w).items():
            echo(f"  {what:26s} {len(ids)}")
        sandbox.advance(hours=HOURS_LATER)
        second = w.pull(progress=False)
        echo(f"\n== {HOURS_LATER} hours later at the partner, pull again (incremental)\n{second}\n")
    ok = bool((checks["status"] != "FAILED").all()) and second.status == "ok"
    echo(f"The snapshot store is {db.resolve()}")
    done = None
    if report:
        from workbench.report.runner import run_report

        echo("\n== The reconciliation report (notebooks/reconcile.ipynb, run by papermill)")
        options = {"db": str(db.resolve()), "pull": False}
        done = run_report("reconcile", options, warn=echo, output_dir=reports_dir)
        if done is not None:
            echo(f"Notebook: {done.ipynb_path.resolve()}")
            echo(f"HTML report: {done.html_path.resolve()}")
        ok = ok and done is not None
    steps = next_steps(db, critical_id(db))
    echo("\nNext, on the demo's database (as printed, from this folder; --no-pull: reading it")
    echo("does not pull another sandbox into it):")
    echo("\n".join(f"  $ {step}" for step in steps))
    echo(f"\nDemo {'done' if ok else 'FAILED'} in {time.perf_counter() - started:.0f} s.")
    return DemoResult(ok, db, done, sandbox)


def critical_id(db: Path) -> str | None:
    """The id of the most severe exception in the store at ``db`` (None: none, or unread)."""
    from workbench import reconcile
    from workbench.errors import WorkbenchError
    from workbench.report import open_store

    try:
        with open_store(db) as store:
            found = reconcile.reconcile(reconcile.load(store)).exceptions
    except WorkbenchError:
        return None
    return str(found["id"].iloc[0]) if len(found) else None  # most severe first


def next_steps(db: Path, request_id: str | None) -> list[str]:
    """Shell commands that go on from the demo on ``db`` without pulling."""
    from workbench.report.runner import notebook_path

    where, workbench = shlex.quote(str(db)), _command("workbench")
    steps = []
    if request_id is not None:
        steps.append(f"{workbench} troubleshoot {shlex.quote(request_id)} --db {where} --no-pull")
    try:
        explore = shlex.quote(str(notebook_path("explore").resolve()))
        root = " --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
        lab = f"{_command('jupyter')} lab {explore} --port {LAB_PORT} {LAB_OPTIONS}{root}"
        steps.append(f"WORKBENCH_DB={shlex.quote(str(db.resolve()))} {lab}")
    except ConfigError:  # a notebooks folder without the explorer (WORKBENCH_NOTEBOOKS)
        pass
    steps.append(f"{workbench} report --db {where} --no-pull")
    return steps


def _command(name: str) -> str:
    """This environment's script ``name``: its bare name when the shell finds that one, else
    its path."""
    script = Path(sys.executable).parent / name
    found = shutil.which(name)
    if found is not None and Path(found).resolve() == script.resolve():
        return name
    try:
        return shlex.quote(str(script.relative_to(Path.cwd())))
    except ValueError:
        return shlex.quote(str(script))


def refuse_real_partner(db: Path) -> None:
    """``ConfigError`` when ``db`` holds a partner's data other than the embedded sandbox's."""
    from workbench.config import SANDBOX, load_profile
    from workbench.errors import StoreError
    from workbench.store.identity import check_partner, stored_partner

    try:
        recorded = stored_partner(db)
    except StoreError:
        return  # not a store we can read: what the demo replaced before, it replaces now
    sandbox = load_profile(SANDBOX, env={}).identity()
    check_partner(db, recorded, sandbox, fix=f"Move {db} away: the demo starts it afresh.")


def remove_database(db: Path) -> None:
    """Delete the database ``db`` and its journals, and nothing else (not the run lock)."""
    if db.is_dir():
        raise ConfigError(f"{db} is a folder, not a database: move it away or pass another db.")
    for path in (db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))):
        if path.is_file():
            path.unlink()


def demo(output_dir: OutputDir = None) -> None:
    """The main job on the embedded sandbox, from tokens to the HTML reconciliation report.

    Tokens, every list, a pull into data/demo.db, a morning's sends through the outbox, eight
    hours at the partner, a second pull, and the report.

    Prints where the database and the HTML report are, then the next commands on
    data/demo.db (troubleshoot its most severe exception, the explorer, the report again), to
    run as printed. Exit 0 when every step passed, 1 when one failed (a failed report notebook
    prints its partial outputs' paths), 2 on a usage error.
    """
    from workbench.folders import check_folder

    output_dir = output_dir or "data/reports"  # beside the demo's data/demo.db
    with clean_errors():
        check_folder(output_dir, parameter="output_dir")
        result = run_demo(say, reports_dir=output_dir)
    if not result.ok:
        raise typer.Exit(1)


def _parse_start(text: str) -> datetime:
    """``now`` (the default clock of every sandbox) or an ISO time."""
    from workbench.sandbox.settings import default_start

    if text == "now":
        return default_start()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise typer.BadParameter("use 'now' or an ISO 8601 time such as 2026-03-02T09:00Z") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def sandbox(
    port: Annotated[
        int, typer.Option(metavar="PORT", help="Port to listen on (0: any free port).")
    ] = 8765,
    seed: Annotated[int, typer.Option(metavar="SEED", help="Same seed, same data.")] = 1,
    start: Annotated[
        str,
        typer.Option(
            metavar="now|TIME", help="Partner clock start: 'now' (to the minute) or an ISO time."
        ),
    ] = "now",
    latency_ms: Annotated[float, typer.Option(metavar="MS", help="Added latency per call.")] = 0.0,
    error_rate: Annotated[
        float, typer.Option(metavar="SHARE", help="Share of calls answered 500/503.")
    ] = 0.0,
    state: Annotated[
        str | None,
        typer.Option(metavar="PATH", help="Keep the partner's state in this file across restarts."),
    ] = None,
    unknown_partner: Annotated[
        int | None,
        typer.Option(
            "--unknown-partner",
            metavar="SEED",
            help="A partner you have never met: one answer to every point the spec leaves open "
            "(login, routes, event shapes, ids, process code...), drawn from SEED and printed.",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUE",
            help="One answer to an open point, repeatable: id_scheme=guid, send_routes=singular, "
            "exchange_login=etms, event_shape=kind_at, process_code=TEST, peek_removes=yes...",
        ),
    ] = None,
    hours_per_minute: Annotated[
        float,
        typer.Option(
            min=0.0, metavar="HOURS", help="Move the partner's clock this many hours per minute."
        ),
    ] = 0.0,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME=VALUE",
            help="Any Faults setting as NAME=VALUE, repeatable: rate_limit_rate=0.1, "
            "drop_rate=0.05, token_ttl=60, path_pattern=no_response.",
        ),
    ] = None,
) -> None:
    """Serve the partner simulation until Ctrl-C, printing its URLs and demo credentials.

    Its answers to what the spec leaves open are the defaults (docs/design.md §3), those of
    --set, or a combination drawn by --unknown-partner SEED (then --set overrides it).
    """
    from workbench.sandbox import Sandbox, SandboxSettings
    from workbench.sandbox.runner import with_overrides
    from workbench.sandbox.settings import fault_changes, setting_changes
    from workbench.sandbox.settings import unknown_partner as unknown_partner_of

    base = SandboxSettings() if unknown_partner is None else unknown_partner_of(unknown_partner)
    try:  # an unknown --set or --fault name, or a value out of range, each named
        settings = with_overrides(
            base,
            seed=seed if unknown_partner is None else unknown_partner,
            start=_parse_start(start),
            latency_ms=latency_ms,
            error_rate=error_rate,
            state_path=state,
            **setting_changes(set_ or []),
        )
        settings.faults.update(**fault_changes(fault or []))
        sb = Sandbox(settings, port=port)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}. Try "
                                 "--port 0.", param_hint="--port") from exc  # fmt: skip
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    # Set explicitly: a shell starts a background job with SIGINT ignored.
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        _serve(sb, hours_per_minute=hours_per_minute)
    except KeyboardInterrupt:  # while it was starting or stopping
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(sb: Sandbox, *, hours_per_minute: float) -> None:
    """Serve ``sb``, print what a client needs, and move its clock, until a signal stops it."""
    from workbench.sandbox.settings import answers

    with sb:
        try:
            points = ", ".join(f"{k}={getattr(sb.settings, k)}" for k in answers())
            exports = "".join(f"  export {name}='{value}'\n" for name, value in sb.env.items())
            moving = f"The partner's clock moves {hours_per_minute} h per minute.\n"
            typer.echo(
                f"Sandbox (seed {sb.settings.seed}) serving on {sb.root_url}\n"
                f"  open points       {points}\n"
                f"  identity server   {sb.auth_url}\n"
                f"  gateway           {sb.gateway_url}\n"
                f"  transcript exch.  {sb.exchange_url}\n"
                "Point a client here (demo credentials, valid only for this sandbox):\n"
                f"{exports}{moving if hours_per_minute else ''}"
                "Ctrl-C to stop."
            )
            tick = 5.0
            while True:
                time.sleep(tick)
                if hours_per_minute:
                    sb.advance(hours_per_minute * tick / 60)
        except KeyboardInterrupt:
            typer.echo("Stopping the sandbox.")
