"""``workbench store repoint``: the database itself, whom it holds."""

from __future__ import annotations

import typer

from workbench.cli.output import Config, Db, Profile, Yes, clean_errors, say, warn

app = typer.Typer(
    help="The database itself: the partner it holds.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def repoint(
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
    yes: Yes = False,
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


app.command()(repoint)
