"""``workbench report`` and ``workbench troubleshoot``: pull, run a notebook, write its HTML.

Registered on :data:`workbench.cli.app` when that module loads. Exit codes as in
:mod:`workbench.cli`: 2 usage (before anything is pulled), 1 a failed notebook or a partial or
failed pull, 3 exceptions at or above ``--severity`` with ``--fail-on-exceptions``, else 0.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli import PULL_FAILED, app, clean_errors, say

if TYPE_CHECKING:
    from workbench.report.runner import NotebookRun

_PROFILE_HELP = "Profile to pull and read (default: WORKBENCH_PROFILE, ...)."
_DB_HELP = "SQLite database (default: the profile's, WORKBENCH_DB, data/workbench.db)."
_CONFIG_HELP = "Profiles file (default: WORKBENCH_CONFIG, workbench.toml)."
_NO_PULL_HELP = "Report on what the database holds; do not contact the partner."
_OUTPUT_HELP = "Folder for the executed notebook and its HTML."
_TIMEOUT_HELP = "Seconds any one cell may run before the run fails."
_PARTIAL_HELP = "Exit 0 (or 3) even when the pull was partial: the report uses what is stored."
# How far ahead of this machine's clock --as-of may be (another machine's clock, a slow typist).
AS_OF_TOLERANCE = timedelta(minutes=5)


@app.command()
def report(
    notebook: Annotated[str, typer.Option(help="Notebook of notebooks/ to run.")] = "reconcile",
    profile: Annotated[str | None, typer.Option(help=_PROFILE_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=_DB_HELP)] = None,
    config: Annotated[str | None, typer.Option(help=_CONFIG_HELP)] = None,
    no_pull: Annotated[bool, typer.Option("--no-pull", help=_NO_PULL_HELP)] = False,
    allow_partial: Annotated[bool, typer.Option(help=_PARTIAL_HELP)] = False,
    as_of: Annotated[
        str | None,
        typer.Option(help="Reconcile the store as it was then (ISO 8601 time, not in the future)."),
    ] = None,
    sla_days: Annotated[
        float | None, typer.Option(help="Days after which an open item breaches the SLA (>= 0).")
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option("--param", "-p", help="Another notebook parameter, key=value (repeatable)."),
    ] = None,
    output_dir: Annotated[str, typer.Option(help=_OUTPUT_HELP)] = "data/reports",
    timeout: Annotated[int, typer.Option(min=1, help=_TIMEOUT_HELP)] = 600,
    fail_on_exceptions: Annotated[
        bool,
        typer.Option(
            "--fail-on-exceptions", help="Exit 3 when the report holds exceptions at --severity+."
        ),
    ] = False,
    severity: Annotated[
        str, typer.Option(help="Lowest severity --fail-on-exceptions counts: low ... critical.")
    ] = "high",
) -> None:
    """Pull, run a notebook with papermill, write its executed copy and HTML; print both paths.

    The HTML hides the code, embeds its charts and fetches nothing from the network.

    Exit codes, the first that applies: 2 on a usage or configuration error (nothing pulled
    or run); 1 when the notebook failed (naming the cell; the partial outputs are kept), or
    the pull was partial or failed (the report is still written; --allow-partial accepts a
    partial pull); 3 with --fail-on-exceptions when the report holds exceptions at or above
    --severity; else 0. The reason for 1 or 3 is printed on stderr.
    """
    from workbench.reconcile import SEVERITIES
    from workbench.report.runner import exceptions_at_or_above

    if severity not in SEVERITIES:
        raise typer.BadParameter(f"use one of {', '.join(SEVERITIES)}", param_hint="--severity")
    outcome = _run_report(
        notebook, [("--as-of", "as_of", as_of), ("--sla-days", "sla_days", sla_days)],
        _key_values(param), profile=profile, db=db, config=config, no_pull=no_pull,
        output_dir=output_dir, timeout=timeout, needs_summary=fail_on_exceptions,
    )  # fmt: skip
    _print_paths(outcome.run)
    code = _pull_verdict(outcome.pull_status, allow_partial=allow_partial)
    if not fail_on_exceptions:
        raise typer.Exit(code)
    summary = outcome.run.summary
    if summary is None:  # it calls publish_summary, but that cell did not display it
        typer.echo(f"Exit 1: notebook {notebook} published no summary to check.", err=True)
        raise typer.Exit(1)
    found = exceptions_at_or_above(summary, severity)
    if found:
        counts = summary.get("exceptions_by_severity") or {}
        worse = SEVERITIES[SEVERITIES.index(severity) :][::-1]
        detail = ", ".join(f"{s}: {counts.get(s, 0)}" for s in worse)
        typer.echo(f"{found} exception(s) at or above {severity} ({detail}).", err=True)
        code = code or 3
    raise typer.Exit(code)


@app.command()
def troubleshoot(
    request_id: Annotated[str, typer.Argument(help="The RequestID (or received transcript id).")],
    profile: Annotated[str | None, typer.Option(help=_PROFILE_HELP)] = None,
    db: Annotated[str | None, typer.Option(help=_DB_HELP)] = None,
    config: Annotated[str | None, typer.Option(help=_CONFIG_HELP)] = None,
    no_pull: Annotated[bool, typer.Option("--no-pull", help=_NO_PULL_HELP)] = False,
    allow_partial: Annotated[bool, typer.Option(help=_PARTIAL_HELP)] = False,
    output_dir: Annotated[str, typer.Option(help=_OUTPUT_HELP)] = "data/reports",
    bundle_dir: Annotated[str, typer.Option(help="Folder for the support bundle.")] = (
        "data/bundles"
    ),
    timeout: Annotated[int, typer.Option(min=1, help=_TIMEOUT_HELP)] = 600,
) -> None:
    """Pull, then run the troubleshoot notebook on one request; print the support bundle's
    path, then the report's two paths.

    The report tells the request's story from the database: its reconciliation, its timeline,
    every document with its validation, and a support bundle for the partner (a zip in
    --bundle-dir). Exit codes, the first that applies: 2 on a usage or configuration error
    (an id that cannot be a RequestID included; nothing pulled or run); 1 when the database
    knows nothing about REQUEST_ID, the notebook failed (naming the cell), or the pull was
    partial or failed (the report is still written; --allow-partial accepts a partial pull);
    else 0.
    """
    from workbench.api.ids import check_request_id
    from workbench.errors import InvalidValue

    try:
        check_request_id(request_id)
    except InvalidValue as exc:
        raise typer.BadParameter(str(exc), param_hint="REQUEST_ID") from None
    check_folder(bundle_dir, "--bundle-dir")
    bundles = Path(bundle_dir).resolve()
    before = set(bundles.glob("*.zip"))
    outcome = _run_report(
        "troubleshoot", [("REQUEST_ID", "request_id", request_id)], {}, profile=profile, db=db,
        config=config, no_pull=no_pull, output_dir=output_dir, timeout=timeout,
        known=request_id, automatic={"bundle_dir": str(bundles)},
    )  # fmt: skip
    made = sorted(set(bundles.glob("*.zip")) - before, key=lambda p: p.stat().st_mtime)
    if made:
        typer.echo(str(made[-1]))
    elif "bundle_dir" in outcome.declared:
        typer.echo(f"The notebook wrote no support bundle in {bundles}.", err=True)
    _print_paths(outcome.run)
    raise typer.Exit(_pull_verdict(outcome.pull_status, allow_partial=allow_partial))


def _key_values(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint="--param")
        out[key.strip()] = value
    return out


@dataclass(frozen=True)
class _Outcome:
    run: NotebookRun
    pull_status: str | None  # None with --no-pull
    declared: Mapping[str, object]


def _run_report(
    notebook: str,
    options: list[tuple[str, str, object]],
    params: dict[str, str],
    *,
    profile: str | None,
    db: str | None,
    config: str | None,
    no_pull: bool,
    output_dir: str,
    timeout: int,
    needs_summary: bool = False,
    known: str | None = None,
    automatic: Mapping[str, object] | None = None,
) -> _Outcome:
    """Check everything, pull (unless ``no_pull``), run the notebook; exit 1 when it fails.

    ``options`` are (flag, parameter, value) the user set: refused (exit 2) when the notebook
    does not declare the parameter; ``params`` (``-p``) likewise. ``db``, ``pull``,
    ``profile`` and ``automatic`` are passed only to a notebook that declares them. ``known``:
    an id the database must know (exit 1 before the kernel starts, like ``workbench bundle``).
    """
    from workbench.report.runner import (
        coerce_parameters,
        notebook_parameters,
        publishes_summary,
        run_report,
    )

    check_folder(output_dir, "--output-dir")
    with clean_errors():
        declared = notebook_parameters(notebook)
        accepts = f"notebook {notebook!r} accepts: {', '.join(sorted(declared)) or 'nothing'}"
        for flag, key, value in options:
            if value is not None and key not in declared:
                raise typer.BadParameter(f"{accepts}, not {key}", param_hint=flag)
        if needs_summary and not publishes_summary(notebook):
            raise typer.BadParameter(
                f"notebook {notebook!r} publishes no summary (it never calls publish_summary): "
                "there are no exceptions to count",
                param_hint="--fail-on-exceptions",
            )
        given = {key: value for _, key, value in options if value is not None}
        values = coerce_parameters({**given, **params}, declared, notebook=f"notebook {notebook!r}")
        _check_values(values)
        path, status = _report_db(profile=profile, db=db, config=config, no_pull=no_pull)
        if known is not None:
            _require_known(path, known)
        context = {"db": str(Path(path).resolve()), "pull": False, "profile": profile}
        context.update(automatic or {})
        passed = {k: v for k, v in context.items() if v is not None and k in declared}
        run = run_report(
            notebook, {**passed, **values}, warn=_warn, output_dir=output_dir, timeout_s=timeout
        )
    if run is None:
        if status not in (None, "ok"):
            _warn(f"The pull was {status} too.")
        raise typer.Exit(1)
    return _Outcome(run, status, declared)


def _warn(text: str) -> None:
    say(text, err=True)


def _print_paths(run: NotebookRun) -> None:
    """The executed notebook's and the HTML's absolute paths: the last two lines of stdout."""
    typer.echo(str(run.ipynb_path.resolve()))
    typer.echo(str(run.html_path.resolve()))


def _pull_verdict(status: str | None, *, allow_partial: bool) -> int:
    """1 (saying why on stderr) when the pull before the report was not ok, else 0."""
    if status in (None, "ok") or (status == "partial" and allow_partial):
        return 0
    if status == "partial":
        _warn(
            "Exit 1: the pull was partial (failed items are retried by the next pull); "
            "--allow-partial accepts a partial pull."
        )
    elif status == "failed":
        _warn(f"Exit 1: the pull failed: {PULL_FAILED} (--allow-partial does not accept it).")
    else:  # it raised: its error is printed above
        _warn("Exit 1: the pull stopped on the error above (--allow-partial does not accept it).")
    return 1


def check_folder(folder: str, flag: str) -> None:
    """A usage error (exit 2) when ``folder`` cannot be a folder we write in: a file stands
    there or on its way, or its nearest existing parent is not writable."""
    path = Path(folder)
    for existing in (path, *path.parents):
        if not existing.exists():
            continue
        if not existing.is_dir():
            raise typer.BadParameter(
                f"{existing} is a file, not a folder: pick another folder", param_hint=flag
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise typer.BadParameter(
                f"{existing} is not writable: pick another folder", param_hint=flag
            )
        return


def _check_values(values: Mapping[str, object]) -> None:
    """``sla_days`` a finite number of days, 0 or more; ``as_of`` an ISO time, not ahead of now
    (by more than ``AS_OF_TOLERANCE``): usage errors now rather than a failed cell later."""
    sla = values.get("sla_days")
    if isinstance(sla, int | float) and not (math.isfinite(sla) and sla >= 0):
        raise typer.BadParameter(
            f"{sla} is not a number of days: use a finite number, 0 or more",
            param_hint="--sla-days",
        )
    as_of = values.get("as_of")
    if isinstance(as_of, str):
        try:
            when = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
        except ValueError:
            raise typer.BadParameter(
                "use an ISO 8601 time such as 2026-03-02T09:00Z", param_hint="--as-of"
            ) from None
        when, now = (when if when.tzinfo else when.replace(tzinfo=UTC)), datetime.now(UTC)
        if when > now + AS_OF_TOLERANCE:
            raise typer.BadParameter(
                f"{as_of} is in the future (it is {now:%Y-%m-%dT%H:%MZ}): the store cannot "
                "know what has not happened yet; leave --as-of out to report on now",
                param_hint="--as-of",
            )


def _require_known(path: str, request_id: str) -> None:
    """``StoreError`` (exit 1) when the database at ``path`` knows nothing about the id."""
    from workbench.report import open_store, require_known

    with open_store(path) as store:
        require_known(store, request_id)


def _report_db(
    *, profile: str | None, db: str | None, config: str | None, no_pull: bool
) -> tuple[str, str | None]:
    """The database to report on, and the status of the pull into it first (None with
    ``no_pull``; then the database must exist). A pull that raised is "stopped": the report
    still runs on what was stored before."""
    from workbench.client import connect
    from workbench.config import load_profile
    from workbench.errors import ConfigError, WorkbenchError

    if no_pull:
        path = db if db is not None else load_profile(profile, config_path=config).db
        if not Path(path).is_file():
            raise ConfigError(
                f"There is no database at {path}: pass --db, or run without --no-pull."
            )
        return path, None
    with connect(profile, db=db, config_path=config) as w:
        try:
            summary = w.pull(progress=False)
        except ConfigError:
            raise
        except WorkbenchError as exc:
            _warn(f"The pull failed ({type(exc).__name__}: {exc}).")
            return w.db, "stopped"
        say(str(summary))
        if summary.status != "ok":
            _warn(f"The pull was {summary.status}: the report uses what is stored.")
        return w.db, summary.status
