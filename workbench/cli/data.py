"""``workbench doctor`` and ``workbench pull``: the partner's interfaces and the database."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.cli.options import Config, Db, Profile
from workbench.cli.output import clean_errors, say


def doctor(profile: Profile = None, config: Config = None) -> None:
    """Check every configured credential and interface; print what works and what to fix.

    Exit 0 when every check passes, 1 when one fails, 2 on a configuration error (an interface
    the profile uses and cannot authenticate for lack of a setting, a secret say).
    """
    from workbench.client import connect
    from workbench.doctor import passed, render, run_checks

    with clean_errors(), connect(profile, config_path=config) as w:
        say(f"Profile {w.profile.name!r} ({w.profile.origin})")
        checks = run_checks(w)
        say(render(checks))
        w.profile.check_interfaces()  # the same ConfigError as pull and report: exit 2
    if not passed(checks):
        typer.echo("Some checks failed: see the fix column.", err=True)
        raise typer.Exit(1)


def pull(
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
    allow_partial: Annotated[
        bool,
        typer.Option(
            help="Exit 0 even when some lists or details failed (they retry next pull); a pull "
            "that read nothing still exits 1."
        ),
    ] = False,
    wait: Annotated[
        float, typer.Option(help="Seconds to wait for another pull on the same database.")
    ] = 60.0,
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Show a progress bar.")
    ] = None,
) -> None:
    """Store every list, event feed and missing detail in the database; print a summary.

    Exit 0 when everything was stored, 1 when the run was partial (unless --allow-partial) or
    failed (nothing could be read: --allow-partial does not accept that), 2 on a configuration
    error.
    """
    from workbench.client import connect
    from workbench.pull import PULL_FAILED

    with clean_errors(), connect(profile, db=db, config_path=config) as w:
        summary = w.pull(progress=progress, lock_timeout_s=wait)
        say(str(summary))
        typer.echo(f"Stored in {w.db}")
    if summary.status == "failed":
        typer.echo(f"The pull failed: {PULL_FAILED}.", err=True)
        raise typer.Exit(1)
    if summary.status == "partial" and not allow_partial:
        typer.echo("The pull was partial: failed items are retried by the next pull.", err=True)
        raise typer.Exit(1)
