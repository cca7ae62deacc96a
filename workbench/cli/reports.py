"""``workbench report``, ``troubleshoot`` and ``bundle``: what the database holds, written up.

Each calls one job of :mod:`workbench.report.job`; exit codes as in :mod:`workbench.cli`.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.output import (
    AllowPartial,
    AllProfiles,
    Config,
    Db,
    OutputDir,
    Profile,
    Profiles,
    RequestId,
    announce_partner,
    announce_store,
    clean_errors,
    each_profile,
    key_values,
    say,
    several,
    warn,
)

if TYPE_CHECKING:
    from workbench.report.job import ReportJob

CONSORTIUM = "consortium"  # the notebook that reads several colleges' stores side by side
# fmt: off
NoPull = Annotated[bool, typer.Option(
    "--no-pull", help="Report on what the database holds; do not contact the partner.")]
Timeout = Annotated[int, typer.Option(
    min=1, metavar="SECONDS", help="Seconds any one cell may run before the run fails.")]
Notebook = Annotated[str, typer.Option(metavar="NAME", help="Notebook of notebooks/ to run.")]
AsOf = Annotated[str | None, typer.Option(
    metavar="TIME", help="Reconcile the store as it was then (ISO 8601 time, not in the future; "
    "default: now).")]
SlaDays = Annotated[float | None, typer.Option(
    metavar="DAYS", help="Days after which an open item breaches the SLA (>= 0; default: the "
    "notebook's, 5 for reconcile).")]
GraceHours = Annotated[float | None, typer.Option(
    metavar="HOURS", help="Hours past the SLA an item may wait before it is overdue (>= 0; "
    "default 0).")]
Zone = Annotated[str | None, typer.Option(
    "--tz", metavar="ZONE", help="Show times in this zone, e.g. America/Toronto (default: the "
    "profile's timezone, else UTC); the database stays in UTC.")]
Param = Annotated[list[str] | None, typer.Option(
    "--param", "-p", metavar="KEY=VALUE", help="Another notebook parameter, key=value "
    "(repeatable).")]
FailOnExceptions = Annotated[bool, typer.Option(
    "--fail-on-exceptions", help="Exit 3 when the store holds exceptions at --severity or worse.")]
Severity = Annotated[str, typer.Option(
    metavar="LEVEL", help="Lowest severity --fail-on-exceptions counts: low ... critical.")]
Notify = Annotated[str | None, typer.Option(
    metavar="URL", help="Post a summary (figures, no student data) to this webhook URL.")]
MailTo = Annotated[list[str] | None, typer.Option(
    metavar="ADDRESS", help="Mail the summary (figures, no student data) to this address "
    "through the profile's SMTP server (repeatable).")]
MaxAge = Annotated[float | None, typer.Option(
    "--max-age", metavar="HOURS", help="Exit 1 when a list or feed was last read more than "
    "HOURS before the report (it says so at its top; default limit there: 24).")]
TrendDays = Annotated[int | None, typer.Option(
    "--trend-days", min=1, metavar="DAYS", help="The trends section covers the pull runs of the "
    "last DAYS days (default 14).")]
BundleDir = Annotated[str | None, typer.Option(
    metavar="DIR", help="Folder for the support bundle (default: bundles/ beside the database).")]
Out = Annotated[str | None, typer.Option(
    metavar="DIR", help="Folder to write the zip in (default: bundles/ beside the database).")]
RedactPersonal = Annotated[bool, typer.Option(
    "--redact-personal",
    help="Also mask student names, birth dates, agency ids, addresses, emails, phones.")]
# fmt: on


def report(
    notebook: Notebook = "reconcile", profile: Profiles = None,
    all_profiles: AllProfiles = False, db: Db = None, config: Config = None,
    no_pull: NoPull = False, allow_partial: AllowPartial = False, as_of: AsOf = None,
    sla_days: SlaDays = None, grace_hours: GraceHours = None, tz: Zone = None,
    param: Param = None, output_dir: OutputDir = None, timeout: Timeout = 600,
    fail_on_exceptions: FailOnExceptions = False, severity: Severity = "high",
    notify: Notify = None, mail_to: MailTo = None, max_age: MaxAge = None,
    trend_days: TrendDays = None,
) -> None:  # fmt: skip
    """Pull, run a notebook with papermill, write its executed copy and HTML; print the paths.

    The HTML hides the code, embeds its charts and fetches nothing from the network.

    Exit codes, the first that applies: 2 on a usage or configuration error (nothing pulled
    or run); 1 when the notebook failed (naming the cell; the partial outputs are kept), the
    pull was partial or failed (the report is still written; --allow-partial accepts a
    partial pull), or, with --max-age, the data is older than HOURS (the report is written and
    says so at its top); 3 with --fail-on-exceptions when the store holds exceptions at or
    above --severity, reconciled as the report was; else 0. The reason for 1 or 3 is printed
    on stderr.

    --notify and --mail-to send a summary without student data once the report is written:
    when one fails, the report is kept and the exit code is 1.

    A report's file names carry the profile named (--profile). With several profiles, a report
    each, one line each at the end, and the worst exit code; but --notebook consortium runs one
    report over all their stores, without pulling, into reports/ of this folder (or
    --output-dir), its table as CSV and Parquet beside its HTML.
    """
    parameters = key_values(param)
    names = several(profile, all_profiles, db, config)
    named: dict[str, object] = dict(as_of=as_of, sla_days=sla_days, grace_hours=grace_hours,
                                    tz=tz, trend_days=trend_days)  # fmt: skip

    def one(name: str | None) -> tuple[int, str]:
        from workbench.report.deliver import plan_delivery

        delivery = plan_delivery(notify=notify, mail_to=mail_to, profile=name, config_path=config)
        if notebook != CONSORTIUM:  # a consortium's: each store, once chosen
            (announce_store if no_pull else announce_partner)(name, db, config)
        from workbench.report.job import run_report_job  # papermill: after the quick checks

        job = run_report_job(
            notebook, named, parameters, profile=name, db=db, config_path=config,
            no_pull=no_pull, output_dir=output_dir, timeout_s=timeout,
            fail_on_exceptions=fail_on_exceptions, severity=severity, max_age_hours=max_age,
            say=say, warn=warn,
        )  # fmt: skip
        return _finish(job, allow_partial=allow_partial, failures=delivery.deliver(job, say=warn))

    with clean_errors():
        if notebook == CONSORTIUM and (notify or mail_to):
            raise typer.BadParameter(
                "the consortium report has no one college's summary to deliver: run each "
                "college's report with --notify/--mail-to",
                param_hint="--notify/--mail-to",
            )
        if notebook == CONSORTIUM and {"stores", "exports"} & parameters.keys():
            names, profile, no_pull = None, None, True  # stores named by path: no profile
        elif notebook == CONSORTIUM:  # one report over the colleges' stores, as they are
            from workbench.config import load_profile

            chosen = [load_profile(n, config_path=config) for n in names or profile or [""]]
            stores = [announce_store(None, db or p.db, config).resolve() for p in chosen]
            named |= {"colleges": [p.name for p in chosen], "stores": [str(s) for s in stores]}
            names, profile, no_pull = None, [chosen[0].name], True
    if names is not None:
        each_profile(names, config, one)
    with clean_errors():
        code = one(profile[0] if profile else None)[0]
    raise typer.Exit(code)


def troubleshoot(
    request_id: RequestId, profile: Profile = None, db: Db = None, config: Config = None,
    no_pull: NoPull = False, allow_partial: AllowPartial = False, output_dir: OutputDir = None,
    bundle_dir: BundleDir = None, timeout: Timeout = 600,
) -> None:  # fmt: skip
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
    from workbench.report.job import run_troubleshoot_job

    with clean_errors():
        (announce_store if no_pull else announce_partner)(profile, db, config)
        job = run_troubleshoot_job(
            request_id, bundle_dir=bundle_dir, profile=profile, db=db, config_path=config,
            no_pull=no_pull, output_dir=output_dir, timeout_s=timeout, say=say, warn=warn,
        )  # fmt: skip
    if job.bundle is not None:
        typer.echo(str(job.bundle.resolve()))
    raise typer.Exit(_finish(job, allow_partial=allow_partial)[0])


def bundle(
    request_id: RequestId, profile: Profile = None, db: Db = None, config: Config = None,
    out: Out = None, redact_personal: RedactPersonal = False,
) -> None:  # fmt: skip
    """Zip what the database holds about one request for a partner ticket; print its path.

    The zip holds a redacted HAR of its calls (it opens in a browser's developer tools), its
    PESC documents with their validation, and its timeline. Reads the database only: the
    partner is not contacted. Exit 0 ok, 1 when the database knows nothing about REQUEST_ID,
    2 on a configuration error.
    """
    from workbench.bundle import make_bundle_from_profile
    from workbench.folders import check_folder

    with clean_errors():
        if out is None:
            from workbench.report.job import beside_store

            out = beside_store(db, "bundles", profile=profile, config_path=config)
        check_folder(out, parameter="out")
        announce_store(profile, db, config)
        zip_path = make_bundle_from_profile(
            request_id, profile=profile, db=db, config_path=config, out_dir=out,
            redact_personal=redact_personal,
        )  # fmt: skip
    typer.echo(str(Path(zip_path).resolve()))


def _finish(
    job: ReportJob, *, allow_partial: bool, failures: list[str] | None = None
) -> tuple[int, str]:
    """Print the absolute path of each file the report wrote, its HTML last, and say why the exit
    code is not 0 on stderr; the code (a failed delivery makes it 1), and where the report is."""
    where = "none: the notebook failed"
    if job.run is not None:
        html = job.run.html_path.resolve()
        stem = glob.escape(html.stem)  # a consortium's table shares its report's name
        others = set(html.parent.glob(f"{stem}.*")) - {html, html.with_suffix(".ipynb")}
        for path in [*sorted(others), html.with_suffix(".ipynb"), html]:
            typer.echo(str(path))
        where = str(html)
    code, reasons = job.verdict(allow_partial=allow_partial)
    if failures:
        code, reasons = (code if code in (1, 2) else 1), [*reasons, *failures]
    for reason in reasons:
        warn(reason)
    return code, f"pull {job.pull_status or 'skipped'}; report {where}"
