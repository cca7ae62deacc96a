"""How every command's help reads: plain metavars, usage without braces, wrapped at COLUMNS.

Typer labels a value by its Python type (``--port <int>``, ``NAME <str>``) and braces required
arguments in the usage line (``{ID}``). :class:`Command` and :class:`Group` print what Click
users expect instead: ``--port INTEGER`` (or the option's own ``metavar=``), ``ID``, ``[FILE]``.
Help wraps at the terminal's width (``COLUMNS``), at most :data:`MAX_WIDTH` characters.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, get_args, get_origin

from typer.core import TyperArgument, TyperCommand, TyperGroup

if TYPE_CHECKING:  # Typer carries its own copy of Click
    from typer._click import Context, HelpFormatter, Parameter

MAX_WIDTH = 120  # wider prose is hard to read, whatever the terminal
CONTEXT_SETTINGS: dict[str, Any] = {"max_content_width": MAX_WIDTH}
_TYPE_LABELS = {str: "TEXT", int: "INTEGER", float: "NUMBER", bool: "BOOLEAN"}


def _label(param: Parameter) -> str:
    """A plain metavar from the parameter's declared type (``PATH``, ``INTEGER``, ``TEXT``)."""
    if isinstance(param, TyperArgument):
        return (param.name or "value").upper()
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    if isinstance(annotation, type) and annotation.__name__.endswith("Path"):
        return "PATH"
    return _TYPE_LABELS.get(annotation, "VALUE") if isinstance(annotation, type) else "VALUE"


class Command(TyperCommand):
    """A Typer command whose help reads as plain Click help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            is_flag = getattr(param, "is_flag", False)
            if param.metavar is None and not is_flag:
                param.metavar = _label(param)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                name = param.metavar or _label(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):  # Typer adds "<str>" after the name
                arguments.append((param.metavar or _label(param), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


class Group(TyperGroup):
    """A Typer group listing each command with the whole first paragraph of its help, wrapped
    (Click would cut it short with "...")."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, summary(command.short_help or command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def summary(text: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(inspect.cleandoc(text).split("\n\n")[0].split())
