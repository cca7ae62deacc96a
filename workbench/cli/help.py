"""Help that reads as plain Click help: ``--port INTEGER`` (or the option's ``metavar=``), not
Typer's ``--port <int>``; ``ID``, ``[FILE]``, not ``{id}``; each command's whole first
paragraph in a group's list; wrapped at ``COLUMNS``, at most 120 characters."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, get_args, get_origin

from typer.core import TyperArgument, TyperCommand, TyperGroup

if TYPE_CHECKING:  # Typer carries its own copy of Click
    from typer._click import Context, HelpFormatter, Parameter

CONTEXT_SETTINGS: dict[str, Any] = {"max_content_width": 120}  # wider prose is hard to read
_LABELS = {str: "TEXT", int: "INTEGER", float: "NUMBER", bool: "BOOLEAN"}


def _label(param: Parameter) -> str:
    """A plain metavar: an argument's name, else its type's (``PATH``, ``INTEGER``...)."""
    if isinstance(param, TyperArgument):
        return param.metavar or (param.name or "value").upper()
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    if isinstance(annotation, type) and annotation.__name__.endswith("Path"):
        return "PATH"
    return _LABELS.get(annotation, "VALUE") if isinstance(annotation, type) else "VALUE"


class Command(TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.metavar is None and not getattr(param, "is_flag", False):
                param.metavar = _label(param)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                pieces.append(_label(param) if param.required else f"[{_label(param)}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {"Arguments": [], "Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if isinstance(param, TyperArgument):  # Typer adds "<str>" after the name
                sections["Arguments"].append((_label(param), record[1]))
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
