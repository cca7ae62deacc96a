"""``workbench browse``: Datasette on a store, read-only, on 127.0.0.1, with the store's
metadata (titles, descriptions, units and canned queries: ``workbench.store.metadata``).

Datasette opens the file with SQLite's ``mode=ro``: no query, canned or typed, can write, and
a pull running meanwhile shows up on the next page load (``--immutable`` would ignore what a
pull holds in its write-ahead log). Datasette is the ``browse`` extra.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path

from workbench.errors import ConfigError, InvalidParameter

HOST = "127.0.0.1"
DEFAULT_PORT = 8001
INSTALL = (
    "pip install 'workbench[browse]' (in a checkout: "
    ".venv/bin/uv pip install --python .venv/bin/python -e '.[browse]')"
)
# Datasette's default (1 s) is short for a request's story on a store of a year's calls.
SQL_TIME_LIMIT_MS = 5000
# A table's page shows this much of a long cell (a document's XML, its JSON) and an ellipsis, so
# that a row is a line; the row's own page and the JSON API give the whole value.
TRUNCATE_CELLS = 120


def datasette_installed() -> bool:
    return find_spec("datasette") is not None


def datasette_arguments(path: Path, metadata: Path, *, port: int, open_browser: bool) -> list[str]:
    """``datasette serve``'s arguments: ``path`` read-only on ``HOST:port`` with ``metadata``."""
    arguments = [
        "serve", str(path), "--metadata", str(metadata), "--host", HOST, "--port", str(port),
        "--setting", "sql_time_limit_ms", str(SQL_TIME_LIMIT_MS),
        "--setting", "truncate_cells_html", str(TRUNCATE_CELLS),
    ]  # fmt: skip
    return [*arguments, "--open"] if open_browser else arguments


def browse(
    db: str | os.PathLike[str] | None = None,
    *,
    profile: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    announce: Callable[[str], None] = print,
) -> int:
    """Serve the profile's store (``db`` overrides it) in Datasette until it stops (Ctrl-C);
    0 once stopped, else Datasette's exit code. ``announce`` is told the URL first.

    ``ConfigError`` when Datasette is not installed (saying how to install it), or there is no
    workbench store at the path; ``InvalidParameter`` for a port outside 1-65535.
    """
    from workbench.config import load_profile
    from workbench.report.job import check_store
    from workbench.store import Store
    from workbench.store.metadata import datasette_metadata

    if not 0 < port < 65536:
        raise InvalidParameter(f"The port must be within 1-65535, not {port}.", parameter="port")
    if not datasette_installed():
        raise ConfigError(f"Datasette is not installed: {INSTALL}.")
    path = Path(db if db is not None else load_profile(profile, config_path=config_path).db)
    if not path.exists():
        raise ConfigError(
            f"There is no database at {path}: run `workbench pull --db {path}` first."
        )
    check_store(path, pulling=False)
    path = path.resolve()
    # In this process: Ctrl-C and SIGTERM stop its server (uvicorn shuts down, then raises the
    # signal again), and the metadata file is removed with its folder. An older store is
    # served from its private migrated copy (Store.file), removed when the store closes.
    try:
        with (
            _stopped_by_sigterm(),
            Store(path, read_only=True) as store,
            tempfile.TemporaryDirectory(prefix="workbench-browse-") as folder,
        ):
            metadata = Path(folder) / "metadata.json"
            metadata.write_text(json.dumps(datasette_metadata(path.stem)), encoding="utf-8")
            served = store.file
            arguments = datasette_arguments(served, metadata, port=port, open_browser=open_browser)
            announce(f"Datasette on {path} (read-only): http://{HOST}:{port}/ (Ctrl-C stops it)")
            from datasette.cli import cli

            cli.main(args=arguments, prog_name="datasette", standalone_mode=False)
    except (KeyboardInterrupt, _Stopped):
        return 0
    except SystemExit as exc:  # uvicorn exits 1 when it cannot bind the port
        return exc.code if isinstance(exc.code, int) else 1
    return 0


class _Stopped(Exception):
    """SIGTERM arrived."""


@contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM raises :class:`_Stopped` in the block (where signals can be handled)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_signal: int, _frame: object) -> None:
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
