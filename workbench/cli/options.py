"""The options several commands share, declared once with one help text each."""

from __future__ import annotations

from typing import Annotated

import typer

Profile = Annotated[
    str | None,
    typer.Option(
        help="Profile to use (default: WORKBENCH_PROFILE, the profiles file's default_profile, "
        "else sandbox)."
    ),
]
Db = Annotated[
    str | None,
    typer.Option(
        help="SQLite database (default: WORKBENCH_DB, the profile's db, else data/workbench.db)."
    ),
]
Config = Annotated[
    str | None,
    typer.Option(help="Profiles file (default: WORKBENCH_CONFIG, else workbench.toml)."),
]
RequestId = Annotated[str, typer.Argument(help="The RequestID (or received transcript id).")]
OutputDir = Annotated[str, typer.Option(help="Folder for the executed notebook and its HTML.")]
