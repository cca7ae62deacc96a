"""A report job: check everything before anything is pulled or run, pull, run a notebook, and
judge it (exit code, freshness, severity) from the store, reconciled as the notebook did."""

from __future__ import annotations

import math
import os
import shlex
import sqlite3
from collections.abc import Callable, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError, InvalidParameter, InvalidValue, StoreError, WorkbenchError
from workbench.folders import check_folder
from workbench.report.runner import (
    NotebookRun,
    coerce_parameters,
    declared_default,
    notebook_parameters,
    run_report,
)
from workbench.report.stores import open_store, reconciled, report_zone, store_path
from workbench.severities import SEVERITIES

if TYPE_CHECKING:
    from workbench.reconcile import Reconciliation
    from workbench.report.staleness import Freshness

AS_OF_TOLERANCE = timedelta(minutes=5)  # ``as_of`` ahead of our clock: another's, a typist's
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


@dataclass(frozen=True)
class ReportJob:
    """What a report job did, and what its verdict counts."""

    notebook: str
    parameters: Mapping[str, object]  # what the notebook was given
    run: NotebookRun | None
    pull_status: str | None
    db: str = ""  # the store reported on
    fail_on: str | None = None  # the severity whose exceptions fail the job
    max_age_hours: float | None = None  # --max-age: older data fails the job
    measured: Mapping[str, Any] = field(default_factory=dict)  # as_of, sla_days, grace_hours
    bundle: Path | None = None  # the support bundle the notebook wrote, if any
    colleges: Mapping[str, str] = field(default_factory=dict)  # a consortium's: name -> store
    unreadable: Mapping[str, str] = field(default_factory=dict)  # college -> why not read

    @cached_property
    def figures(self) -> tuple[Reconciliation, Freshness]:
        """The store reconciled as the notebook did, and how fresh it was then."""
        return reconciled(self.db, **self.measured)

    def verdict(self, *, allow_partial: bool = False) -> tuple[int, list[str]]:
        """The exit code and why: 1 when the notebook failed, the pull was not ok (a partial
        one ``allow_partial`` accepts), a consortium's store cannot be read or the data is
        older than ``max_age_hours``, else 3 when a store holds exceptions at or above
        ``fail_on``, else 0."""
        if self.run is None:
            return 1, [f"The pull was {self.pull_status} too."] if self.pull_status not in (
                None, "ok") else []  # fmt: skip
        code, reason = pull_verdict(self.pull_status, allow_partial=allow_partial)
        reasons = [reason] if reason else []
        for college, why in self.unreadable.items():
            code, reasons = 1, [*reasons, f"Exit 1: {college}'s store cannot be read: {why}"]
        if self.fail_on is None and self.max_age_hours is None:
            return code, reasons
        exported = "exports" in self.parameters  # a consortium's export folders
        for college, source in (self.colleges or {"": self.db}).items():
            if college in self.unreadable:
                continue
            of = f"{college}: " if college else ""
            try:
                if not college:
                    rec, fresh = self.figures
                else:
                    rec, fresh = reconciled(source, exported=exported, **self.measured)
            except WorkbenchError as exc:
                code, reasons = 1, [*reasons, f"Exit 1: {of}the store could not be judged: {exc}"]
                continue
            limit = self.max_age_hours
            if limit is not None and fresh.is_stale(limit):
                code = 1
                reasons.append(f"Exit 1 (--max-age {limit:g}): {of}{fresh.warning(limit)}")
            if self.fail_on is not None:
                counts = rec.headline["exceptions_by_severity"]
                worse = SEVERITIES[SEVERITIES.index(self.fail_on) :][::-1]
                if found := sum(counts.get(s, 0) for s in worse):
                    detail = ", ".join(f"{s}: {counts.get(s, 0)}" for s in worse)
                    reasons.append(
                        f"{of}{found} exception(s) at or above {self.fail_on} ({detail})."
                    )
                    code = code or 3
        return code, reasons


def pull_verdict(status: str | None, *, allow_partial: bool) -> tuple[int, str | None]:
    """1 and why when the pull was not ok (``allow_partial``: partial is), else 0."""
    if status in (None, "ok") or (status == "partial" and allow_partial):
        return 0, None
    from workbench.pull import PULL_FAILED, PULL_PARTIAL  # the pull's modules: only when not ok

    if status == "partial":
        return 1, f"Exit 1: the pull was partial: {PULL_PARTIAL}."
    said = f"failed: {PULL_FAILED}" if status == "failed" else "stopped on the error above"
    return 1, f"Exit 1: the pull {said} (--allow-partial does not accept it)."


def run_report_job(
    notebook: str, options: Mapping[str, object] | None = None,
    parameters: Mapping[str, str] | None = None, *, profile: str | None = None,
    db: str | None = None, config_path: str | None = None, no_pull: bool = False,
    output_dir: str | None = None, timeout_s: float = 600, fail_on_exceptions: bool = False,
    severity: str = "high", max_age_hours: float | None = None, known: str | None = None,
    automatic: Mapping[str, object] | None = None, say: Callable[[str], None] = print,
    warn: Callable[[str], None] = print,
) -> ReportJob:  # fmt: skip
    """Check everything, pull (unless ``no_pull``), run the notebook. ``options`` by name,
    ``parameters`` as text; ``known``: an id the store must know; ``automatic``: if declared."""
    if severity not in SEVERITIES:
        raise InvalidParameter(f"use one of {', '.join(SEVERITIES)}", parameter="severity")
    if max_age_hours is not None and not (math.isfinite(max_age_hours) and max_age_hours > 0):
        raise InvalidParameter(f"{max_age_hours} is not a number of hours: use a finite number "
                               "more than 0, e.g. 24", parameter="max_age")  # fmt: skip
    where = dict(profile=profile, config_path=config_path)
    declared = notebook_parameters(notebook, report=True)
    given = {key: value for key, value in (options or {}).items() if value is not None}
    for key in sorted(given.keys() - declared.keys()):
        accepts = ", ".join(sorted(declared)) or "nothing"
        raise InvalidParameter(f"notebook {notebook!r} accepts: {accepts}, not {key}",
                               parameter=key)  # fmt: skip
    values = coerce_parameters({**given, **(parameters or {})}, declared,
                               notebook=f"notebook {notebook!r}")  # fmt: skip
    _check_values(values)
    if "tz" in declared:  # the zone times show in: the option's, else the profile's; checked now
        values["tz"] = report_zone(values.get("tz"), **where)
    colleges, unreadable = _colleges(values, declared, no_pull=no_pull, warn=warn)
    # a consortium's report is no one college's: never beside a store it reads
    output_dir = output_dir or ("reports" if colleges else beside_store(db, "reports", **where))
    check_folder(output_dir, parameter="output_dir")
    path, status = ("", None) if colleges else _pull_first(db=db, no_pull=no_pull, say=say,
                                                           warn=warn, **where)  # fmt: skip
    if known is not None:
        with open_store(path) as store:
            spelled = store.known(known)
        values = {k: spelled if v == known else v for k, v in values.items()}
    if "db" in declared:
        _validate_stored(path, say=say, warn=warn)
    context = {"db": str(Path(path).resolve()), "pull": False, "profile": profile,
               "max_age_hours": max_age_hours, **(automatic or {})}  # fmt: skip
    arguments = {k: v for k, v in context.items() if v is not None and k in declared} | values
    measured: dict[str, Any] = {k: arguments.get(k, declared_default(declared[k]))
                for k in ("as_of", "sla_days", "grace_hours") if k in declared}  # fmt: skip
    bundles = Path(str(arguments["bundle_dir"])) if "bundle_dir" in arguments else None
    before = set(bundles.glob("*.zip")) if bundles else set()
    run = run_report(notebook, arguments, warn=warn, output_dir=output_dir, timeout_s=timeout_s,
                     label=profile if not colleges else None)  # fmt: skip
    written = set(bundles.glob("*.zip")) - before if bundles else set()
    bundle = max(written, key=lambda p: p.stat().st_mtime) if written else None
    return ReportJob(notebook, arguments, run, status, path,
                     severity if fail_on_exceptions else None, max_age_hours, measured,
                     bundle, colleges, unreadable)  # fmt: skip


def _colleges(
    values: dict[str, Any], declared: Mapping[str, object], *, no_pull: bool,
    warn: Callable[[str], None],
) -> tuple[dict[str, str], dict[str, str]]:  # fmt: skip
    """A consortium's colleges -> their stores (or export folders), named into ``values``, and
    those that cannot be read -> why (warned now; the others are still reported)."""
    if "stores" not in declared:
        return {}, {}
    from workbench.report.stores import ExportedStore, colleges

    if not no_pull:
        raise InvalidParameter("a consortium report reads the stores as they are: pull each "
                               "college first, then report with --no-pull",
                               parameter="no_pull")  # fmt: skip
    stores, exports = values.get("stores"), values.get("exports")
    if stores and exports:
        raise InvalidParameter("give stores or exports, not both", parameter="exports")
    named = colleges(stores or exports or [], values.get("colleges"))
    named = {college: str(Path(source).resolve()) for college, source in named.items()}
    values.update({"exports" if exports else "stores": list(named.values()), "colleges": [*named]})
    unreadable = {}
    for college, source in named.items():
        try:
            check_store(source, pulling=False) if not exports else ExportedStore(source).close()
        except WorkbenchError as exc:
            warn(f"{college}: {exc}")
            unreadable[college] = str(exc)
    return named, unreadable


def run_troubleshoot_job(
    request_id: str, *, bundle_dir: str | None = None, warn: Callable[[str], None] = print,
    **options: Any,
) -> ReportJob:  # fmt: skip
    """:func:`run_report_job` of the troubleshoot notebook on one request."""
    from workbench.http.answers import check_request_id

    bundle_dir = bundle_dir or beside_store(options.get("db"), "bundles",
                                            profile=options.get("profile"),
                                            config_path=options.get("config_path"))  # fmt: skip
    try:
        check_request_id(request_id)
    except InvalidValue as exc:
        raise InvalidParameter(str(exc), parameter="request_id") from None
    check_folder(bundle_dir, parameter="bundle_dir")
    bundles = Path(bundle_dir).resolve()
    job = run_report_job("troubleshoot", {"request_id": request_id}, known=request_id,
                         automatic={"bundle_dir": str(bundles)}, warn=warn, **options)  # fmt: skip
    if job.run is not None and job.bundle is None and "bundle_dir" in job.parameters:
        warn(f"The notebook wrote no support bundle in {bundles}.")
    return job


def beside_store(db: str | None, name: str, **where: str | None) -> str:
    """The folder ``name`` beside the store: a job started in any folder writes in one place."""
    return str(store_path(db, **where).parent / name)


def _check_values(values: Mapping[str, object]) -> None:
    """``sla_days``, ``grace_hours`` and ``as_of`` refused now, not in a failed cell."""
    for key, unit in (("sla_days", "days"), ("grace_hours", "hours")):
        value = values.get(key)
        if isinstance(value, int | float) and not (math.isfinite(value) and value >= 0):
            raise InvalidParameter(f"{value} is not a number of {unit}: use a finite number, 0 "
                                   "or more", parameter=key)  # fmt: skip
    if not isinstance(as_of := values.get("as_of"), str):
        return
    try:
        when = datetime.fromisoformat(as_of)
    except ValueError:
        raise InvalidParameter("use an ISO 8601 time such as 2026-03-02T09:00Z",
                               parameter="as_of") from None  # fmt: skip
    if when.replace(tzinfo=when.tzinfo or UTC) > (now := datetime.now(UTC)) + AS_OF_TOLERANCE:
        raise InvalidParameter(
            f"{as_of} is in the future (it is {now:%Y-%m-%dT%H:%MZ}): the store cannot know what "
            "has not happened yet; leave --as-of out to report on now", parameter="as_of",
        )  # fmt: skip


def _pull_first(
    *, profile: str | None, db: str | None, config_path: str | None, no_pull: bool,
    say: Callable[[str], None], warn: Callable[[str], None],
) -> tuple[str, str | None]:  # fmt: skip
    """The database, and the status of the pull into it (None: ``no_pull``)."""
    path = store_path(db, profile=profile, config_path=config_path)
    check_store(path, pulling=not no_pull)
    if no_pull:
        return str(path), None
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


def _validate_stored(path: str, *, say: Callable[[str], None], warn: Callable[[str], None]) -> None:
    """Validate the documents never validated, when a schema folder is set."""
    from workbench.config import SCHEMAS_VARIABLE

    if not os.environ.get(SCHEMAS_VARIABLE):
        return  # nothing can change; the report says how to validate them
    from workbench.report.validation import validate_stored
    from workbench.store import Store
    from workbench.store.connection import open_read_only
    from workbench.store.migrations import read_version
    from workbench.store.schema import SCHEMA_VERSION

    with closing(open_read_only(Path(path), busy_timeout_s=30.0)) as conn:
        older = read_version(conn) < SCHEMA_VERSION
    if older:
        return warn("The store has an older schema: the report counts what was validated "
                    "before (a pull migrates it, then the next report validates).")  # fmt: skip
    try:
        with Store(path) as store:
            outcome = validate_stored(store)
    except StoreError as exc:
        return warn(f"The stored documents could not be validated now ({exc}); the report "
                    "counts what was validated before.")  # fmt: skip
    if outcome.folder is not None and not outcome.folder.is_dir():
        warn(str(outcome))
    elif outcome.checked:
        say(str(outcome))


def check_store(path: str | Path, *, pulling: bool) -> None:
    """``ConfigError`` unless ``path`` is a store a report (or a pull) can use."""
    from workbench._version import __version__
    from workbench.store.connection import open_read_only
    from workbench.store.migrations import read_version, refuse_newer

    where = Path(path)
    first = f"Run `workbench pull --db {shlex.quote(str(where))}` first"
    another = "pass the --db of a workbench database (a pull creates one in a new file)"
    if where.is_dir():
        raise ConfigError(f"{where} is a folder, not a database: {another}.")
    header = None
    if where.is_file():
        with where.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    if not header and not pulling:
        raise ConfigError(
            f"There is no database at {where}. {first}, or leave out --no-pull to pull into it."
            if header is None
            else f"{where} is an empty file (0 bytes), not a workbench store: nothing was ever "
            f"pulled into it. {first} (it creates the store there), or {another}."
        )
    if not header:
        return
    if header != SQLITE_HEADER:
        raise ConfigError(
            f"{where} is not an SQLite database, so not a workbench store: {another}."
        )
    try:
        with closing(open_read_only(where, busy_timeout_s=30.0)) as conn:
            names = [str(row[0]) for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%' ORDER BY name")]  # fmt: skip
            version = read_version(conn) if "meta" in names else 0
    except (sqlite3.Error, ValueError) as exc:  # ValueError: a meta table that is not ours
        raise ConfigError(f"{where} cannot be read as a workbench store ({exc}): {another}.") \
            from None  # fmt: skip
    if names and not version:
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        raise ConfigError(
            f"{where} is an SQLite database but not a workbench store (tables: {shown}): {another}."
        )
    if pulling:  # a pull migrates an older store; a report reads a migrated private copy
        return
    if not names:
        raise ConfigError(
            f"{where} is an SQLite database with no table, not a workbench store: nothing was "
            f"ever pulled into it. {first}, or {another}."
        )
    try:
        refuse_newer(version, path=str(where), version=__version__)
    except StoreError as exc:
        raise ConfigError(str(exc)) from None
