"""What every command prints through: partner text made safe, our errors made exit codes."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import textwrap
from collections.abc import Iterator

import typer

from workbench.errors import ConfigError, InvalidParameter, WorkbenchError

# Parameters that are arguments of a command (shown in capitals), not --options.
_ARGUMENTS = frozenset({"request_id", "role", "path"})


def say(text: str, *, err: bool = False, wrap: bool = True) -> None:
    """Print ``text`` (ours, maybe holding partner text) with its control characters escaped,
    its long lines wrapped at :func:`width` (``wrap=False`` for a document to copy as is)."""
    from workbench.http.masking import printable

    text = printable(text, keep_newlines=True)
    columns = width(err=err) if wrap else None
    if columns:
        text = "\n".join(_wrapped(line, columns) for line in text.split("\n"))
    typer.echo(text, err=err)


def width(*, err: bool = False) -> int | None:
    """The width to wrap at: ``COLUMNS`` when set, else the terminal's when printing to one;
    None (no wrapping) when printing to a file or a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stderr if err else sys.stdout
    return shutil.get_terminal_size().columns if stream.isatty() else None


def _wrapped(line: str, columns: int) -> str:
    """``line`` wrapped at ``columns``, continued one step further in; a word (an id, a path, a
    URL) is never cut, so one longer than the line stays whole."""
    if len(line) <= columns:
        return line
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    return "\n".join(
        textwrap.wrap(line, columns, subsequent_indent=indent, break_long_words=False,
                      break_on_hyphens=False)
    )  # fmt: skip


def warn(text: str) -> None:
    """:func:`say` on stderr."""
    say(text, err=True)


@contextlib.contextmanager
def clean_errors() -> Iterator[None]:
    """Turn our errors into a message and an exit code: 2 for usage and configuration, 1 for
    the rest. An ``InvalidParameter`` is a usage error naming the option it came from."""
    try:
        yield
    except InvalidParameter as exc:
        name = exc.parameter
        flag = name.upper() if name in _ARGUMENTS else "--" + name.replace("_", "-")
        raise typer.BadParameter(str(exc), param_hint=flag) from None
    except ConfigError as exc:
        say(f"Configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    except WorkbenchError as exc:
        say(f"Error ({type(exc).__name__}): {exc}", err=True)
        raise typer.Exit(1) from None


def announce_partner(profile: str | None, db: str | None, config: str | None) -> None:
    """Say (on stderr) which profile a command uses, which partner it talks to ("embedded
    sandbox" included) and which store it records in, its absolute path: a job started in the
    wrong folder says so on its first line."""
    from pathlib import Path

    from workbench.config import load_profile

    chosen = load_profile(profile, config_path=config)
    store = Path(db if db is not None else chosen.db).resolve()
    say(f"Profile {chosen.name!r} ({chosen.origin}); partner: {chosen.partner}; store: {store}",
        err=True)  # fmt: skip


def announce_store(profile: str | None, db: str | None, config: str | None) -> None:
    """Say (on stderr) which store a command reads, its absolute path, and whose data it
    holds ("the embedded sandbox's" included); the partner is not contacted."""
    from pathlib import Path

    from workbench.config import load_profile
    from workbench.store.identity import data_source, stored_partner

    path = Path(db if db is not None else load_profile(profile, config_path=config).db)
    try:
        source = data_source(stored_partner(path)) if path.exists() else "no such file"
    except WorkbenchError:  # not a store: the command itself says so, with its exit code
        source = "not readable as a workbench database"
    say(f"Store: {path.resolve()} ({source})", err=True)


class _Warnings(logging.Handler):
    """The library's warnings, printed as the CLI prints: control characters escaped, wrapped
    at the terminal's width."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            warn(self.format(record))
        except Exception:  # a warning must never fail the command
            self.handleError(record)


def show_library_warnings() -> None:
    """Route the ``workbench`` loggers' warnings to :func:`warn` (once per process)."""
    root = logging.getLogger("workbench")
    if not any(isinstance(h, _Warnings) for h in root.handlers):
        handler = _Warnings(level=logging.WARNING)
        root.addHandler(handler)
        root.propagate = False
