"""Help that reads as plain Click help: ``ID``, ``[FILE]``, not Typer's ``{id}`` and ``<str>``;
each command's whole first paragraph in a group's list; wrapped at ``COLUMNS``, at most 120
characters. Every option names its value (``metavar=``; ``tests/test_cli_help.py`` checks)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from typer.core import TyperArgument, TyperCommand, TyperGroup

if TYPE_CHECKING:  # Typer carries its own copy of Click
    from typer._click import Context, HelpFormatter

CONTEXT_SETTINGS: dict[str, Any] = {"max_content_width": 120}  # wider prose is hard to read


class Command(TyperCommand):
    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                pieces.append(str(param.metavar) if param.required else f"[{param.metavar}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):  # Typer adds "<str>" after the name
                sections["Arguments"].append((str(param.metavar), record[1]))
            else:
                sections["Options"].append(record)
        for title, rows in sections.items():
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(TyperGroup):
    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                text = inspect.cleandoc(command.short_help or command.help or "")
                rows.append((name, " ".join(text.split("\n\n")[0].split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
