"""``workbench doctor``, ``pull``, ``export``, ``call`` and ``store repoint``: the partner and the
database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.output import (
    AllowPartial,
    AllProfiles,
    Config,
    Db,
    Profile,
    Profiles,
    Yes,
    announce_partner,
    announce_store,
    clean_errors,
    each_profile,
    key_values,
    say,
    several,
    warn,
)


def doctor(profile: Profile = None, config: Config = None) -> None:
    """Check every configured credential and interface; print what works and what to fix.

    Exit 0 when every check passes, 1 when one fails, 2 on a configuration error (an interface
    the profile uses and cannot authenticate for lack of a setting, a secret say).
    """
    from workbench.cli.doctor import FIX_HEADING, passed, render, run_checks
    from workbench.client import connect

    with clean_errors():
        announce_partner(profile, None, config)
        # A check writes nothing and answers quickly: one retry, a second at most between.
        with connect(
            profile, config_path=config, record=False, max_attempts=2, backoff_max=1.0
        ) as w:
            checks = run_checks(w)
            say(render(checks))
            w.profile.check_interfaces()  # the same ConfigError as pull and report: exit 2
    if not passed(checks):
        typer.echo(f'Some checks failed: see "{FIX_HEADING}" above.', err=True)
        raise typer.Exit(1)


def pull(
    profile: Profiles = None,
    all_profiles: AllProfiles = False,
    db: Db = None,
    config: Config = None,
    allow_partial: AllowPartial = False,
    wait: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", help="Seconds to wait for another pull on the same database."
        ),
    ] = 60.0,
) -> None:
    """Store every list, event feed and missing detail in the database; print a summary.

    Exit 0 when everything was stored, 1 when the run was partial (unless --allow-partial) or
    failed (nothing could be read: --allow-partial does not accept that), 2 on a configuration
    error. With several profiles, one line each at the end, and the worst exit code.
    """

    def one(name: str | None) -> tuple[int, str]:
        from workbench.client import connect
        from workbench.pull import PULL_FAILED, PULL_PARTIAL

        announce_partner(name, db, config)
        with connect(name, db=db, config_path=config) as w:
            summary = w.pull(lock_timeout_s=wait)  # a progress bar on a terminal
            say(str(summary))
            typer.echo(f"Stored in {Path(w.db).resolve()}")
        r = summary.lists.values()
        figures = (f"{sum(x.listed for x in r)} listed, {sum(x.new for x in r)} new, "
                   f"{sum(x.details_fetched for x in r)} details, {len(summary.failures)} "
                   f"failed; stored in {Path(w.db).resolve()}")  # fmt: skip
        if summary.status == "failed":
            typer.echo(f"The pull failed: {PULL_FAILED}.", err=True)
            return 1, f"failed: {PULL_FAILED}"
        if summary.status == "partial" and not allow_partial:
            typer.echo(f"The pull was partial: {PULL_PARTIAL}.", err=True)
            return 1, f"partial: {figures}"
        return 0, f"{summary.status}: {figures}"

    names = several(profile, all_profiles, db, config)
    if names is not None:
        each_profile(names, config, one)
    with clean_errors():
        code = one(profile[0] if profile else None)[0]
    raise typer.Exit(code)


def export(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="A table or view of the database, "
            "or a partner list (supplier_requests, consumer_transcripts, placement_events, "
            "domestic_events).",
        ),
    ],
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="csv|xlsx|parquet",
            help="File format (default: --out's suffix, else csv). parquet needs the parquet "
            "extra.",
        ),
    ] = None,
    out: Annotated[
        str | None,
        typer.Option(
            metavar="PATH",
            help="File to write (default: exports/NAME-<UTC time>.<format> beside the database).",
        ),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            metavar="RUN",
            help="A partner list as that pull run left it (a run id; or an ISO 8601 time).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists.")] = False,
) -> None:
    """Write one table, view or partner list of the database to a csv, xlsx or parquet file;
    print its absolute path.

    The file holds student data and is readable by you only (mode 0600); no row is printed.
    Reads the database only: the partner is not contacted. Exit 0 ok, 2 on a usage or
    configuration error (an unknown NAME lists the known ones; an existing file without
    --force; parquet without pyarrow says how to install it), 1 when the database cannot be
    read.
    """
    from workbench.export import export as export_store
    from workbench.report.job import check_store
    from workbench.store import Store

    with clean_errors():
        path = announce_store(profile, db, config)
        check_store(path, pulling=False)  # no workbench store there: a ConfigError, exit 2
        with Store(path, read_only=True) as store:
            done = export_store(store, name, fmt, out, as_of=as_of, force=force)
    source = f"{done.kind} {done.name}" + (f", {done.snapshot}" if done.snapshot else "")
    data = " (the embedded sandbox's data, made up)" if done.sandbox else ""
    say(
        f"Wrote {done.rows} rows and {done.columns} columns of {source}{data} as {done.fmt}.",
        err=True,
    )
    for note in done.notes:
        say(f"Note: {note}", err=True)
    typer.echo(str(done.path))


def call(
    role: Annotated[
        str, typer.Argument(metavar="ROLE", help="international, domestic, supplier or consumer.")
    ],
    path: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="Below the role's base URL, from "
            "its first slash: /api/transcriptrequests/no_response.",
        ),
    ],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", metavar="NAME=VALUE", help="A query parameter (repeat for more)."),
    ] = None,
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
) -> None:
    """Send one GET to the partner, as you would in Postman, and print its answer.

    Tokens, headers, deadline and retries are handled, and the call is recorded in the
    database as every call is; the answer is printed as JSON with its control characters
    escaped and tokens of ours masked. Writes are not possible here: they go through
    `workbench send` and its outbox. Exit 0 on a 2xx, 1 on another answer (its message
    printed), 2 on a usage or configuration error.
    """
    import json

    from workbench.client import connect

    params = key_values(param)
    with clean_errors():
        announce_partner(profile, db, config)
        with connect(profile, db=db, config_path=config) as w:
            answer = w.read(role, path, params=params or None)
            shown = json.dumps(answer, indent=2, ensure_ascii=False)
            say(w.session.redactor.document(shown), wrap=False)


def repoint(
    profile: Profile = None, db: Db = None, config: Config = None, yes: Yes = False
) -> None:
    """Re-point the database to the profile's partner: the same partner at a new address.

    A database holds one partner's data and refuses a profile whose URLs differ. This records
    the profile's URLs instead, after showing what changes and asking (unless --yes); the change
    is kept as a run of kind repoint. The partner is not contacted.

    Exit 0 re-pointed, or nothing to change; 1 declined at the prompt; 2 on a configuration
    error (no workbench database there).
    """
    from workbench.config import load_profile
    from workbench.store.identity import Changes
    from workbench.store.identity import repoint as repoint_store

    with clean_errors():
        settings = load_profile(profile, config_path=config)
        path = db if db is not None else settings.db

        def confirm(changes: Changes) -> bool:
            warn(f"Re-point {path} to the partner of profile {settings.name!r}:")
            for key, (before, after) in changes.items():
                warn(f"  {key}: {before or '(none)'} -> {after}")
            return yes or typer.confirm("Re-point it?", default=False, err=True)

        changes, done = repoint_store(path, settings.identity(), confirm=confirm)
    if not changes:
        say(f"{path} already records the partner of profile {settings.name!r}: nothing changed.")
    elif not done:
        warn("Nothing was changed.")
        raise typer.Exit(1)
    else:
        say(f"Re-pointed {path} to the partner of profile {settings.name!r}.")
