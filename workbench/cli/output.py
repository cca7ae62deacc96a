"""What every command shares: its options, partner text made safe to print, errors as exit codes."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from workbench.errors import ConfigError, InvalidParameter, WorkbenchError

_PROFILE_HELP = (
    "Profile to use (default: WORKBENCH_PROFILE, the profiles file's default_profile, env when "
    "WORKBENCH_*_URL variables are set, else sandbox)"
)
Profile = Annotated[str | None, typer.Option(
    "--profile", "-P", metavar="NAME", help=f"{_PROFILE_HELP}.")]  # fmt: skip
Profiles = Annotated[list[str] | None, typer.Option(
    "--profile", "-P", metavar="NAME",
    help=f"{_PROFILE_HELP}; repeat it to run several colleges, one after another.")]  # fmt: skip
AllowPartial = Annotated[bool, typer.Option("--allow-partial", help="Exit 0 (or a report's 3) even "
    "when some lists or details failed (the next pull retries them); a pull that read nothing "
    "still exits 1.")]  # fmt: skip
AllProfiles = Annotated[bool, typer.Option(
    "--all-profiles", help="Run every profile of the profiles file in turn.")]  # fmt: skip
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
        help="The RequestID (ack, bundle and troubleshoot also take a received transcript's id); "
        "a GUID pasted with dashes or in upper case is matched to the spelling stored, or else "
        "the partner's.",
    ),
]
OutputDir = Annotated[
    str | None,
    typer.Option(
        metavar="DIR",
        help="Folder for the executed notebook and its HTML (default: reports/ "
        "beside the database, data/reports for the default one; a consortium's: reports/ here).",
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking for confirmation.")]
_ARGUMENTS = frozenset({"request_id", "role", "path", "name", "file"})  # shown in capitals
_WORST = (0, 3, 1, 2, 130)  # exit codes, the worst last


def key_values(pairs: list[str] | None, option: str = "--param") -> dict[str, str]:
    """``KEY=VALUE`` options as a dict; a usage error for one without ``=`` or a key."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"{pair!r} is not key=value", param_hint=option)
        out[key.strip()] = value
    return out


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
    """Our errors as a message and an exit code (:func:`failure`)."""
    try:
        yield
    except (WorkbenchError, KeyboardInterrupt) as exc:  # a pull's Ctrl-C says what it stored
        code, message = failure(exc)
        say(message, err=True)
        raise typer.Exit(code) from None


def failure(exc: BaseException) -> tuple[int, str]:
    """The exit code and message of an error: a usage or configuration error 2, Ctrl-C 130,
    another 1."""
    if isinstance(exc, KeyboardInterrupt):
        return 130, str(exc) or "Interrupted."
    if isinstance(exc, InvalidParameter):  # printed by us, not click: it wraps at COLUMNS
        name = exc.parameter
        flag = name.upper() if name in _ARGUMENTS else "--" + name.replace("_", "-")
        return 2, f"Error: Invalid value for {flag}: {exc}"
    if isinstance(exc, ConfigError):
        return 2, f"Configuration error: {exc}"
    return 1, f"Error ({type(exc).__name__}): {exc}"


def several(
    profiles: list[str] | None, all_profiles: bool, db: str | None, config: str | None
) -> list[str] | None:
    """The profiles of ``--profile``s or ``--all-profiles`` when a command runs several (None:
    one, ``profiles[0]`` or the default, as ever); refused with ``--db`` or ``WORKBENCH_DB``."""
    if not all_profiles and len(profiles or []) < 2:
        return None
    if all_profiles and profiles:
        raise typer.BadParameter(
            "it runs every profile: leave out --profile", param_hint="--all-profiles"
        )
    if db is not None:
        raise typer.BadParameter(
            "each college has its own store: set db in each profile instead", param_hint="--db"
        )
    from workbench.config import SANDBOX
    from workbench.config.files import CONFIG, profiles_file

    with clean_errors():
        if os.environ.get("WORKBENCH_DB"):  # it wins over each profile's db
            raise ConfigError("WORKBENCH_DB is set, so every college would share its store: "
                              "unset it, and set db in each profile.")  # fmt: skip
        if profiles:
            return list(dict.fromkeys(profiles))
        path, looked, found, _ = profiles_file(config, os.environ)
        names = [name for name in found if name != SANDBOX]  # it only tunes the embedded one
        if not names:
            where = path or f"no profiles file (looked for {', '.join(map(str, looked))})"
            raise ConfigError(f"{where} defines no [profiles.NAME] table: add one per college, "
                              f"or pass {CONFIG}.")  # fmt: skip
        return names


def each_profile(
    names: list[str], config: str | None, run: Callable[[str], tuple[int, str]]
) -> NoReturn:
    """``run(name)`` for each profile, one after another, then one line each: its exit code and
    ``run``'s summary, or its error. One failing never stops the others, Ctrl-C does; the exit
    code is the worst (2, then 1, then 3, then 0; 130 when stopped)."""
    from workbench.config import load_profile

    lines, worst, stores = [], 0, dict[Path, str]()  # a store run, the profile it was run for
    for name in names:
        say(f"== Profile {name}", err=True)
        try:
            store = Path(load_profile(name, config_path=config).db).resolve()
            # one file under two names too: a hard link, or a disk that ignores case
            same = [s for s in stores if s.exists() and store.exists() and s.samefile(store)]
            store = same[0] if same else store
            if store in stores:  # two colleges' data mixed in one store could not be told apart
                raise ConfigError(f"Profile {name!r} has the store of profile {stores[store]!r} "
                                  f"({store}): give it its own, such as db = \"data/{name}.db\" "
                                  f"in [profiles.{name}].")  # fmt: skip
            stores[store] = name
            code, detail = run(name)
        except (Exception, KeyboardInterrupt) as exc:
            code, detail = failure(exc)
            say(detail, err=True)
        lines.append(f"{name}: exit {code}, {detail}")
        worst = max(worst, code, key=_WORST.index)
        if code == 130:
            break
    say("\n".join(lines))
    raise typer.Exit(worst)


def announce_partner(profile: str | None, db: str | None, config: str | None) -> None:
    """Say (stderr) the profile, the partner and the store's absolute path."""
    from workbench.config import load_profile

    chosen = load_profile(profile, config_path=config)
    store = Path(db if db is not None else chosen.db).resolve()
    say(
        f"Profile {chosen.name!r} ({chosen.origin}); partner: {chosen.partner}; store: {store}",
        err=True,
    )


def announce_store(profile: str | None, db: str | None, config: str | None) -> Path:
    """Say (stderr) the store a command reads, its absolute path and whose data it holds; its
    path."""
    from workbench.report.stores import store_path
    from workbench.store.identity import data_source, stored_partner

    path = store_path(db, profile=profile, config_path=config)
    try:
        source = data_source(stored_partner(path)) if path.exists() else "no such file"
    except WorkbenchError:  # not a store: the command itself says so, with its exit code
        source = "not readable as a workbench database"
    say(f"Store: {path.resolve()} ({source})", err=True)
    return path


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
