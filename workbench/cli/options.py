"""The options several commands share, declared once with one help text each."""

from __future__ import annotations

from typing import Annotated

import typer

Profile = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="Profile to use (default: WORKBENCH_PROFILE, the profiles file's default_profile, "
        "env when WORKBENCH_*_URL variables are set, else sandbox).",
    ),
]
Db = Annotated[
    str | None,
    typer.Option(
        metavar="PATH",
        help="SQLite database (default: WORKBENCH_DB, the profile's db, else data/workbench.db).",
    ),
]
Config = Annotated[
    str | None,
    typer.Option(
        metavar="PATH",
        help="Profiles file (default: WORKBENCH_CONFIG, else the first workbench.toml in this "
        "folder, WORKBENCH_HOME, then ~/.config/workbench).",
    ),
]
RequestId = Annotated[
    str,
    typer.Argument(
        metavar="REQUEST_ID",
        help="The RequestID (or received transcript id); a GUID pasted with dashes or in upper "
        "case is matched to the stored spelling.",
    ),
]
OutputDir = Annotated[
    str | None,
    typer.Option(
        metavar="DIR",
        help="Folder for the executed notebook and its HTML (default: reports/ beside the "
        "database, data/reports for the default one).",
    ),
]
