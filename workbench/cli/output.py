"""What every command shares: its options, partner text made safe to print, errors as exit codes."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from workbench.errors import ConfigError, InvalidParameter, WorkbenchError

Profile = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="Profile to use (default: WORKBENCH_PROFILE, the profiles file's "
        "default_profile, env when WORKBENCH_*_URL variables are set, else sandbox).",
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
        help="Profiles file (default: WORKBENCH_CONFIG, else the first "
        "workbench.toml in this folder, WORKBENCH_HOME, then ~/.config/workbench).",
    ),
]
RequestId = Annotated[
    str,
    typer.Argument(
        metavar="REQUEST_ID",
        help="The RequestID (or received transcript id); a GUID pasted with "
        "dashes or in upper case is matched to the stored spelling.",
    ),
]
OutputDir = Annotated[
    str | None,
    typer.Option(
        metavar="DIR",
        help="Folder for the executed notebook and its HTML (default: reports/ "
        "beside the database, data/reports for the default one).",
    ),
]
_ARGUMENTS = frozenset({"request_id", "role", "path", "name", "file"})  # shown in capitals


def say(text: str, *, err: bool = False, wrap: bool = True) -> None:
    """Print ``text`` with control characters escaped, wrapped at ``COLUMNS`` or the terminal's
    width (``wrap=False`` for a document to copy)."""
    from workbench.http.masking import printable

    text = printable(text, keep_newlines=True)
    stream = sys.stderr if err else sys.stdout
    terminal = "COLUMNS" in os.environ or stream.isatty()  # into a file or a pipe: no wrap
    width = shutil.get_terminal_size((0, 0)).columns if terminal else 0
    if wrap and width:
        lines = []
        for line in text.split("\n"):
            indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
            wrapped = textwrap.wrap(
                line, width, subsequent_indent=indent, break_long_words=False,
                break_on_hyphens=False,
            )  # fmt: skip
            lines += wrapped if len(line) > width else [line]
        text = "\n".join(lines)
    typer.echo(text, err=err)


def warn(text: str) -> None:
    """:func:`say` on stderr."""
    say(text, err=True)


@contextlib.contextmanager
def clean_errors() -> Iterator[None]:
    """Our errors as a message and an exit code: usage error or ``ConfigError`` 2, another
    ``WorkbenchError`` 1, Ctrl-C 130."""
    try:
        yield
    except InvalidParameter as exc:
        name = exc.parameter
        if name == "file":  # printed by us, not click, so that a long refusal wraps at COLUMNS
            say(f"Error: Invalid value for FILE: {exc}", err=True)
            raise typer.Exit(2) from None
        flag = name.upper() if name in _ARGUMENTS else "--" + name.replace("_", "-")
        raise typer.BadParameter(str(exc), param_hint=flag) from None
    except ConfigError as exc:
        say(f"Configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    except WorkbenchError as exc:
        say(f"Error ({type(exc).__name__}): {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt as stop:  # a pull's says what it stored
        say(str(stop) or "Interrupted.", err=True)
        raise typer.Exit(130) from None


def announce_partner(profile: str | None, db: str | None, config: str | None) -> None:
    """Say (stderr) the profile, the partner and the store's absolute path."""
    from workbench.config import load_profile

    chosen = load_profile(profile, config_path=config)
    store = Path(db if db is not None else chosen.db).resolve()
    say(
        f"Profile {chosen.name!r} ({chosen.origin}); partner: {chosen.partner}; store: {store}",
        err=True,
    )


def announce_store(profile: str | None, db: str | None, config: str | None) -> None:
    """Say (stderr) the store a command reads, its absolute path and whose data it holds."""
    from workbench.config import load_profile
    from workbench.store.identity import data_source, stored_partner

    path = Path(db if db is not None else load_profile(profile, config_path=config).db)
    try:
        source = data_source(stored_partner(path)) if path.exists() else "no such file"
    except WorkbenchError:  # not a store: the command itself says so, with its exit code
        source = "not readable as a workbench database"
    say(f"Store: {path.resolve()} ({source})", err=True)


def show_library_warnings() -> None:
    """Route the ``workbench`` loggers' warnings to :func:`warn` (once per process)."""
    import logging  # here: `workbench --help` stays fast (bench/cli.py)

    class Warnings(logging.Handler):
        """The library's warnings, printed as the command prints: escaped, wrapped."""

        def emit(self, record: logging.LogRecord) -> None:
            try:
                warn(self.format(record))
            except Exception:  # a warning must never fail the command
                self.handleError(record)

    root = logging.getLogger("workbench")
    if not any(h.get_name() == "workbench.cli" for h in root.handlers):
        handler = Warnings(level=logging.WARNING)
        handler.set_name("workbench.cli")
        root.addHandler(handler)
        root.propagate = False
