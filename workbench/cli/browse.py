"""``workbench browse``: the store in Datasette."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.browse import DEFAULT_PORT
from workbench.cli.options import Config, Db, Profile
from workbench.cli.output import announce_store, clean_errors, say


def browse(
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 to serve on (0: any free one).")
    ] = DEFAULT_PORT,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open it in your web browser.")
    ] = True,
) -> None:
    """Open the database in Datasette, read-only, with table and column descriptions and
    canned queries (overdue requests, transcripts awaiting acknowledgment, acknowledgment
    mismatches, one request's story).

    Serves on 127.0.0.1 until Ctrl-C, to you alone: the URL it prints holds a key, and CSV
    downloads are off (workbench export guards formulas). Needs the browse extra (it says how
    to install it). The partner is not contacted. Exit 2 when Datasette is missing, the port
    is taken, or there is no workbench store at --db.
    """
    from workbench.browse import browse as serve

    with clean_errors():
        announce_store(profile, db, config)
        code = serve(
            db, profile=profile, config_path=config, port=port, open_browser=open_browser,
            announce=lambda text: say(text, err=True),
        )  # fmt: skip
    if code:
        raise typer.Exit(code)
