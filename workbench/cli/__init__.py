"""The ``workbench`` command: thin commands, each calling one library function.

Exit codes: 0 ok, 1 failed, 2 usage or configuration error, 3 exceptions found (``report
--fail-on-exceptions``), 130 Ctrl-C; when several apply, the first of 2, 1, 3. Each command
imports what it uses when it runs: ``--help`` loads neither pandas nor httpx (``bench/cli.py``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.cli import browse, data, demo, reports, send

app = typer.Typer(
    context_settings={"max_content_width": 120},
    help="Pull, store, reconcile and troubleshoot partner data.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: Rich and its Markdown stack cost most of a start
)


def _version(value: bool) -> None:
    if value:
        from workbench._version import __version__

        typer.echo(f"workbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    """Pull, store, reconcile and troubleshoot partner data."""


for command in (demo.sandbox, data.doctor, data.pull, data.export, data.call, demo.demo,
                reports.bundle, reports.report, reports.troubleshoot, browse.browse):  # fmt: skip
    app.command()(command)
app.add_typer(send.app, name="send")
store = typer.Typer(
    help="The database itself: the partner it holds.", no_args_is_help=True, rich_markup_mode=None
)
store.command()(data.repoint)
app.add_typer(store, name="store")


def main() -> None:
    """Entry point of the console script."""
    from workbench.cli.output import show_library_warnings

    show_library_warnings()
    app()
