"""A report job: check its parameters, pull (unless told not to), run a notebook; its outcome.

>>> job = run_report_job("reconcile", {"sla_days": 7}, db="data/prod.db", no_pull=True,
...                      fail_on_exceptions=True)  # doctest: +SKIP
>>> job.run.html_path, job.verdict()  # doctest: +SKIP
(PosixPath('data/reports/reconcile-20260302T090000Z.html'), (3, ['2 exception(s) at or ...']))

Everything that can be refused is refused before anything is pulled or run: an unusable
parameter raises :class:`~workbench.errors.InvalidParameter` naming it, an unknown notebook or
profile a ``ConfigError``, a database that is not a workbench store to report on a
``ConfigError`` (:func:`check_store`: the file is left as it was), an id the database does not
know a ``StoreError``.
"""

from __future__ import annotations

import math
import shlex
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from workbench.errors import (
    ConfigError,
    InvalidParameter,
    InvalidValue,
    StoreError,
    WorkbenchError,
)
from workbench.folders import check_folder
from workbench.report.notebooks import require_report
from workbench.report.runner import (
    NotebookRun,
    coerce_parameters,
    exceptions_at_or_above,
    notebook_parameters,
    notebook_path,
    publishes_summary,
    run_report,
)
from workbench.report.staleness import Freshness, check_max_age
from workbench.report.zones import report_zone
from workbench.severities import SEVERITIES

# How far ahead of this machine's clock ``as_of`` may be (another machine's clock, a slow typist).
AS_OF_TOLERANCE = timedelta(minutes=5)
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


@dataclass(frozen=True)
class ReportJob:
    """What a report job did: the notebook's run (None when it failed: ``warn`` was told why
    and where the partial outputs are) and the pull's status (None without a pull; ``ok``,
    ``partial``, ``failed``, or ``stopped`` when it raised)."""

    notebook: str
    parameters: Mapping[str, object]  # what the notebook was given
    run: NotebookRun | None
    pull_status: str | None
    fail_on: str | None = None  # the severity whose exceptions fail the job
    max_age_hours: float | None = None  # --max-age: older data fails the job
    freshness: Freshness | None = None  # how old the store's data was when reported on

    @property
    def bundle(self) -> Path | None:
        """The support bundle the notebook published (``report.publish_bundle``), if any."""
        path = (self.run.summary or {}).get("bundle") if self.run else None
        return Path(path) if path else None

    def verdict(self, *, allow_partial: bool = False) -> tuple[int, list[str]]:
        """The exit code and its reasons: 1 when the notebook failed, the pull was not ok
        (``allow_partial`` accepts a partial one) or the data is older than ``max_age_hours``,
        else 3 when the summary counts exceptions at or above ``fail_on``, else 0."""
        if self.run is None:
            late = self.pull_status not in (None, "ok")
            return 1, [f"The pull was {self.pull_status} too."] if late else []
        code, reason = pull_verdict(self.pull_status, allow_partial=allow_partial)
        reasons = [reason] if reason else []
        fresh, limit = self.freshness, self.max_age_hours
        if limit is not None and fresh is not None and fresh.is_stale(limit):
            reasons.append(f"Exit 1 (--max-age {limit:g}): {fresh.warning(limit)}")
            code = 1
        if self.fail_on is None:
            return code, reasons
        summary = self.run.summary
        if summary is None:  # it calls publish_summary, but that cell did not display it
            return 1, [*reasons, f"Exit 1: notebook {self.notebook} published no summary to check."]
        try:
            found = exceptions_at_or_above(summary, self.fail_on)
        except ValueError as exc:  # a notebook of one's own that publishes its own summary
            return 1, [*reasons, f"Exit 1: notebook {self.notebook}'s summary is unusable: {exc}."]
        if found:
            counts = summary.get("exceptions_by_severity") or {}
            worse = SEVERITIES[SEVERITIES.index(self.fail_on) :][::-1]
            detail = ", ".join(f"{s}: {counts.get(s, 0)}" for s in worse)
            reasons.append(f"{found} exception(s) at or above {self.fail_on} ({detail}).")
            code = code or 3
        return code, reasons


def pull_verdict(status: str | None, *, allow_partial: bool) -> tuple[int, str | None]:
    """1 and why when the pull before a report was not ok (``allow_partial`` accepts a partial
    one), else 0 and None."""
    if status in (None, "ok") or (status == "partial" and allow_partial):
        return 0, None
    from workbench.pull import PULL_FAILED, PULL_PARTIAL  # the pull's modules: only when not ok

    if status == "partial":
        return 1, f"Exit 1: the pull was partial: {PULL_PARTIAL}."
    if status == "failed":
        return 1, f"Exit 1: the pull failed: {PULL_FAILED} (--allow-partial does not accept it)."
    # it raised: its error was told before
    return 1, "Exit 1: the pull stopped on the error above (--allow-partial does not accept it)."


def run_report_job(
    notebook: str,
    options: Mapping[str, object] | None = None,
    parameters: Mapping[str, str] | None = None,
    *,
    profile: str | None = None,
    db: str | None = None,
    config_path: str | None = None,
    no_pull: bool = False,
    output_dir: str | None = None,
    timeout_s: float = 600,
    fail_on_exceptions: bool = False,
    severity: str = "high",
    known: str | None = None,
    automatic: Mapping[str, object] | None = None,
    max_age_hours: float | None = None,
    say: Callable[[str], None] = print,
    warn: Callable[[str], None] = print,
) -> ReportJob:
    """Check everything, pull (unless ``no_pull``), run the notebook.

    ``options``: parameters the caller set by name (None values are left out), an
    ``InvalidParameter`` when the notebook does not declare one; ``parameters``: more, as text,
    a ``ConfigError`` when undeclared. ``fail_on_exceptions``: the verdict counts exceptions at
    or above ``severity`` (the notebook must publish a summary). ``db``, ``pull``, ``profile``
    and ``automatic`` go only to a notebook that declares them. ``known``: an id the database
    must know (a ``StoreError`` before the kernel starts). ``max_age_hours``: the verdict
    fails when the store's oldest last read is older (an ``InvalidParameter`` unless more than
    0); a notebook that declares it says so at its top. ``say`` gets the pull's summary,
    ``warn`` what went wrong.
    """
    if severity not in SEVERITIES:
        raise InvalidParameter(f"use one of {', '.join(SEVERITIES)}", parameter="severity")
    output_dir = output_dir or reports_beside(db, profile=profile, config_path=config_path)
    check_folder(output_dir, parameter="output_dir")
    declared = notebook_parameters(notebook)
    require_report(notebook_path(notebook))  # ``explore`` is opened in JupyterLab, not run
    given = {key: value for key, value in (options or {}).items() if value is not None}
    accepts = f"notebook {notebook!r} accepts: {', '.join(sorted(declared)) or 'nothing'}"
    for key in given:
        if key not in declared:
            raise InvalidParameter(f"{accepts}, not {key}", parameter=key)
    if fail_on_exceptions and not publishes_summary(notebook):
        raise InvalidParameter(
            f"notebook {notebook!r} publishes no summary (it never calls publish_summary): "
            "there are no exceptions to count",
            parameter="fail_on_exceptions",
        )
    values = coerce_parameters(
        {**given, **(parameters or {})}, declared, notebook=f"notebook {notebook!r}"
    )
    _check_values(values)
    max_age_hours = check_max_age(max_age_hours)
    if "tz" in declared:  # the zone times show in: the option's, else the profile's; checked now
        values["tz"] = report_zone(values.get("tz"), profile=profile, config_path=config_path)
    path, status = _pull_first(
        profile=profile, db=db, config_path=config_path, no_pull=no_pull, say=say, warn=warn
    )
    if known is not None:
        from workbench.report import open_store, require_known

        with open_store(path) as store:
            spelled = require_known(store, known)
        values = {k: spelled if v == known else v for k, v in values.items()}
    if "db" in declared:
        _validate_stored(path, say=say, warn=warn)
    context: dict[str, object] = {"db": str(Path(path).resolve()), "pull": False}
    context.update(profile=profile, max_age_hours=max_age_hours, **(automatic or {}))
    arguments = {k: v for k, v in context.items() if v is not None and k in declared} | values
    run = run_report(notebook, arguments, warn=warn, output_dir=output_dir, timeout_s=timeout_s)
    fresh = _freshness(path, run, arguments, warn=warn)
    fail_on = severity if fail_on_exceptions else None
    return ReportJob(notebook, arguments, run, status, fail_on, max_age_hours, fresh)


def _validate_stored(path: str, *, say: Callable[[str], None], warn: Callable[[str], None]) -> None:
    """Validate the stored documents never validated, when a schema folder is set, keeping the
    results (:mod:`workbench.report.validation`); a store that cannot be written, or of an
    older schema, is reported on as it is."""
    import os

    from workbench.config import SCHEMAS_VARIABLE

    if not os.environ.get(SCHEMAS_VARIABLE):
        return  # nothing can change; the report says how to validate them
    from workbench.report.validation import validate_stored
    from workbench.store import Store
    from workbench.store.connection import open_read_only
    from workbench.store.migrations import read_version
    from workbench.store.schema import SCHEMA_VERSION

    conn = open_read_only(Path(path), busy_timeout_s=30.0)
    try:
        older = read_version(conn) < SCHEMA_VERSION
    finally:
        conn.close()
    if older:  # validating would migrate the file: a report leaves an older store as it is
        warn("The store has an older schema: the report counts what was validated before "
             "(a pull migrates it, then the next report validates).")  # fmt: skip
        return

    try:
        with Store(path) as store:
            outcome = validate_stored(store)
    except StoreError as exc:
        warn(f"The stored documents could not be validated now ({exc}); the report counts "
             "what was validated before.")  # fmt: skip
        return
    if outcome.folder is not None and not outcome.folder.is_dir():
        warn(str(outcome))
    elif outcome.checked:
        say(str(outcome))


def _freshness(
    path: str,
    run: NotebookRun | None,
    arguments: Mapping[str, object],
    *,
    warn: Callable[[str], None],
) -> Freshness | None:
    """How fresh the store was at the moment the report was measured at: what the notebook
    published in its summary, else (none, or one ``warn`` says is unusable) read from the
    store (at the summary's ``as_of``, else the ``as_of`` it was given, else now); None when
    it cannot be read."""
    summary = (run.summary if run else None) or {}
    if summary.get("freshness") is not None:
        try:
            return Freshness.from_json(summary["freshness"])
        except ValueError as exc:  # a notebook of one's own, or a hand-made summary
            warn(
                f"The summary's freshness cannot be used ({exc}): --max-age reads it from the "
                "store instead."
            )
    from workbench.report import freshness, open_store  # pandas: only for such a notebook

    try:
        with open_store(path) as store:
            return freshness(store, summary.get("as_of") or arguments.get("as_of"))
    except (WorkbenchError, ValueError, TypeError):  # a failed notebook, a summary's odd as_of
        return None


def run_troubleshoot_job(
    request_id: str,
    *,
    bundle_dir: str | None = None,
    warn: Callable[[str], None] = print,
    **options: Any,
) -> ReportJob:
    """:func:`run_report_job` of the troubleshoot notebook on one request, writing its support
    bundle in ``bundle_dir`` (None: ``bundles/`` beside the store; ``ReportJob.bundle``); same
    ``options``."""
    from workbench.http.answers import check_request_id

    if bundle_dir is None:
        reports = reports_beside(options.get("db"), profile=options.get("profile"),
                                 config_path=options.get("config_path"))  # fmt: skip
        bundle_dir = str(Path(reports).with_name("bundles"))

    try:
        check_request_id(request_id)
    except InvalidValue as exc:
        raise InvalidParameter(str(exc), parameter="request_id") from None
    check_folder(bundle_dir, parameter="bundle_dir")
    bundles = Path(bundle_dir).resolve()
    job = run_report_job(
        "troubleshoot",
        {"request_id": request_id},
        known=request_id,
        automatic={"bundle_dir": str(bundles)},
        warn=warn,
        **options,
    )
    if job.run is not None and job.bundle is None and "bundle_dir" in job.parameters:
        warn(f"The notebook wrote no support bundle in {bundles}.")
    return job


def _check_values(values: Mapping[str, object]) -> None:
    """``sla_days`` a finite number of days, 0 or more; ``as_of`` an ISO time, not ahead of now
    (by more than ``AS_OF_TOLERANCE``): refused now rather than in a failed cell later."""
    sla = values.get("sla_days")
    if isinstance(sla, int | float) and not (math.isfinite(sla) and sla >= 0):
        raise InvalidParameter(
            f"{sla} is not a number of days: use a finite number, 0 or more", parameter="sla_days"
        )
    grace = values.get("grace_hours")
    if isinstance(grace, int | float) and not (math.isfinite(grace) and grace >= 0):
        raise InvalidParameter(
            f"{grace} is not a number of hours: use a finite number, 0 or more",
            parameter="grace_hours",
        )
    as_of = values.get("as_of")
    if isinstance(as_of, str):
        try:
            when = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidParameter(
                "use an ISO 8601 time such as 2026-03-02T09:00Z", parameter="as_of"
            ) from None
        when, now = (when if when.tzinfo else when.replace(tzinfo=UTC)), datetime.now(UTC)
        if when > now + AS_OF_TOLERANCE:
            raise InvalidParameter(
                f"{as_of} is in the future (it is {now:%Y-%m-%dT%H:%MZ}): the store cannot "
                "know what has not happened yet; leave --as-of out to report on now",
                parameter="as_of",
            )


def reports_beside(db: str | None, *, profile: str | None, config_path: str | None) -> str:
    """Where reports go by default: ``reports/`` beside the store (``data/reports`` for the
    default store), so that a job started in any folder writes them in one place (bundles go
    to ``bundles/`` beside it)."""
    from workbench.config import load_profile

    path = db if db is not None else load_profile(profile, config_path=config_path).db
    return str(Path(path).parent / "reports")


def _pull_first(
    *,
    profile: str | None,
    db: str | None,
    config_path: str | None,
    no_pull: bool,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> tuple[str, str | None]:
    """The database to report on, and the status of the pull into it first (None with
    ``no_pull``; then the database must exist). A pull that raised is "stopped": the report
    still runs on what was stored before."""
    from workbench.config import load_profile

    path = db if db is not None else load_profile(profile, config_path=config_path).db
    check_store(path, pulling=not no_pull)
    if no_pull:
        return path, None
    from workbench.client import connect  # the pull's modules (pandas, httpx): only to pull

    with connect(profile, db=db, config_path=config_path) as w:
        try:
            summary = w.pull(progress=False)
        except ConfigError:
            raise
        except WorkbenchError as exc:
            warn(f"The pull failed ({type(exc).__name__}: {exc}).")
            return w.db, "stopped"
        say(str(summary))
        if summary.status != "ok":
            warn(f"The pull was {summary.status}: the report uses what is stored.")
        return w.db, summary.status


def check_store(path: str | Path, *, pulling: bool) -> None:
    """``ConfigError`` unless ``path`` is a workbench store a report can use, checked before
    anything is pulled or run, reading only the file's header and table names (it is left as
    it was, a 0-byte file included).

    Refused: a folder; a file that is not SQLite; an SQLite database holding other tables
    than a workbench store's (they are named); a store of a newer schema than this workbench
    reads; and, without a pull, a missing or empty file (0 bytes, or SQLite with no table:
    nothing was ever pulled into it). A pull creates the store in a missing or empty file; an
    older store is read as it is, without the partner (a pull migrates it).
    """
    from workbench._version import __version__
    from workbench.store.connection import open_read_only
    from workbench.store.migrations import read_version, refuse_newer

    where = Path(path)
    first = f"Run `workbench pull --db {shlex.quote(str(where))}` first"
    another = "pass the --db of a workbench database (a pull creates one in a new file)"
    if where.is_dir():
        raise ConfigError(f"{where} is a folder, not a database: {another}.")
    if not where.is_file():
        if pulling:
            return
        raise ConfigError(
            f"There is no database at {where}. {first}, or leave out --no-pull to pull into it."
        )
    with where.open("rb") as f:
        header = f.read(len(SQLITE_HEADER))
    if not header and pulling:
        return
    if not header:
        raise ConfigError(
            f"{where} is an empty file (0 bytes), not a workbench store: nothing was ever "
            f"pulled into it. {first} (it creates the store there), or {another}."
        )
    if header != SQLITE_HEADER:
        raise ConfigError(
            f"{where} is not an SQLite database, so not a workbench store: {another}."
        )
    try:
        conn = open_read_only(where, busy_timeout_s=30.0)
        try:
            names = [str(row[0]) for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%' ORDER BY name"
            )]  # fmt: skip
            version = read_version(conn) if "meta" in names else 0
        finally:
            conn.close()
    except (sqlite3.Error, ValueError) as exc:  # ValueError: a meta table that is not ours
        raise ConfigError(
            f"{where} cannot be read as a workbench store ({exc}): {another}."
        ) from None
    if names and not version:
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise ConfigError(
            f"{where} is an SQLite database but not a workbench store (tables: {shown}): {another}."
        )
    if pulling:
        return  # the pull creates the store in an SQLite file with no table, or migrates it
    if not names:
        raise ConfigError(
            f"{where} is an SQLite database with no table, not a workbench store: nothing was "
            f"ever pulled into it. {first}, or {another}."
        )
    try:  # an older store is read from a migrated private copy (Store, read_only=True)
        refuse_newer(version, path=str(where), version=__version__)
    except StoreError as exc:
        raise ConfigError(str(exc)) from None
