"""What every command prints through: partner text made safe, our errors made exit codes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import typer

from workbench.errors import ConfigError, InvalidParameter, WorkbenchError


def say(text: str, *, err: bool = False) -> None:
    """Print ``text`` (ours, maybe holding partner text) with its control characters escaped."""
    from workbench.terminal import printable

    typer.echo(printable(text, keep_newlines=True), err=err)


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
        flag = "REQUEST_ID" if name == "request_id" else "--" + name.replace("_", "-")
        raise typer.BadParameter(str(exc), param_hint=flag) from None
    except ConfigError as exc:
        say(f"Configuration error: {exc}", err=True)
        raise typer.Exit(2) from None
    except WorkbenchError as exc:
        say(f"Error ({type(exc).__name__}): {exc}", err=True)
        raise typer.Exit(1) from None
