"""A report job: check its parameters, pull (unless told not to), run a notebook; its outcome.

>>> job = run_report_job("reconcile", {"sla_days": 7}, db="data/prod.db", no_pull=True,
...                      fail_on_exceptions=True)  # doctest: +SKIP
>>> job.run.html_path, job.verdict()  # doctest: +SKIP
(PosixPath('data/reports/reconcile-20260302T090000Z.html'), (3, ['2 exception(s) at or ...']))

Everything that can be refused is refused before anything is pulled or run: an unusable
parameter raises :class:`~workbench.errors.InvalidParameter` naming it, an unknown notebook or
profile a ``ConfigError``, an id the database does not know a ``StoreError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from workbench.bundle import DEFAULT_OUT_DIR
from workbench.errors import ConfigError, InvalidParameter, InvalidValue, WorkbenchError
from workbench.folders import check_folder
from workbench.pull import PULL_FAILED
from workbench.reconcile import SEVERITIES
from workbench.report.runner import (
    DEFAULT_OUTPUT_DIR,
    NotebookRun,
    coerce_parameters,
    exceptions_at_or_above,
    notebook_parameters,
    publishes_summary,
    run_report,
)

# How far ahead of this machine's clock ``as_of`` may be (another machine's clock, a slow typist).
AS_OF_TOLERANCE = timedelta(minutes=5)


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

    @property
    def bundle(self) -> Path | None:
        """The support bundle the notebook published (``report.publish_bundle``), if any."""
        path = (self.run.summary or {}).get("bundle") if self.run else None
        return Path(path) if path else None

    def verdict(self, *, allow_partial: bool = False) -> tuple[int, list[str]]:
        """The exit code and its reasons: 1 when the notebook failed or the pull was not ok
        (``allow_partial`` accepts a partial one), else 3 when the summary counts exceptions at
        or above ``fail_on``, else 0."""
        if self.run is None:
            late = self.pull_status not in (None, "ok")
            return 1, [f"The pull was {self.pull_status} too."] if late else []
        code, reason = pull_verdict(self.pull_status, allow_partial=allow_partial)
        reasons = [reason] if reason else []
        if self.fail_on is None:
            return code, reasons
        summary = self.run.summary
        if summary is None:  # it calls publish_summary, but that cell did not display it
            return 1, [*reasons, f"Exit 1: notebook {self.notebook} published no summary to check."]
        found = exceptions_at_or_above(summary, self.fail_on)
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
    if status == "partial":
        return 1, (
            "Exit 1: the pull was partial (failed items are retried by the next pull); "
            "--allow-partial accepts a partial pull."
        )
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
    output_dir: str = DEFAULT_OUTPUT_DIR,
    timeout_s: float = 600,
    fail_on_exceptions: bool = False,
    severity: str = "high",
    known: str | None = None,
    automatic: Mapping[str, object] | None = None,
    say: Callable[[str], None] = print,
    warn: Callable[[str], None] = print,
) -> ReportJob:
    """Check everything, pull (unless ``no_pull``), run the notebook.

    ``options``: parameters the caller set by name (None values are left out), an
    ``InvalidParameter`` when the notebook does not declare one; ``parameters``: more, as text,
    a ``ConfigError`` when undeclared. ``fail_on_exceptions``: the verdict counts exceptions at
    or above ``severity`` (the notebook must publish a summary). ``db``, ``pull``, ``profile``
    and ``automatic`` go only to a notebook that declares them. ``known``: an id the database
    must know (a ``StoreError`` before the kernel starts). ``say`` gets the pull's summary,
    ``warn`` what went wrong.
    """
    if severity not in SEVERITIES:
        raise InvalidParameter(f"use one of {', '.join(SEVERITIES)}", parameter="severity")
    check_folder(output_dir, parameter="output_dir")
    declared = notebook_parameters(notebook)
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
    path, status = _pull_first(
        profile=profile, db=db, config_path=config_path, no_pull=no_pull, say=say, warn=warn
    )
    if known is not None:
        from workbench.report import open_store, require_known

        with open_store(path) as store:
            require_known(store, known)
    context: dict[str, object] = {"db": str(Path(path).resolve()), "pull": False}
    context.update(profile=profile, **(automatic or {}))
    arguments = {k: v for k, v in context.items() if v is not None and k in declared} | values
    run = run_report(notebook, arguments, warn=warn, output_dir=output_dir, timeout_s=timeout_s)
    return ReportJob(notebook, arguments, run, status, severity if fail_on_exceptions else None)


def run_troubleshoot_job(
    request_id: str,
    *,
    bundle_dir: str = DEFAULT_OUT_DIR,
    warn: Callable[[str], None] = print,
    **options: Any,
) -> ReportJob:
    """:func:`run_report_job` of the troubleshoot notebook on one request, writing its support
    bundle in ``bundle_dir`` (``ReportJob.bundle``); same ``options``."""
    from workbench.api.ids import check_request_id

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
    from workbench.client import connect
    from workbench.config import load_profile

    if no_pull:
        path = db if db is not None else load_profile(profile, config_path=config_path).db
        if not Path(path).is_file():
            raise ConfigError(
                f"There is no database at {path}: pass --db, or run without --no-pull."
            )
        return path, None
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
