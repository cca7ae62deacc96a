"""``workbench browse``: Datasette on a store, read-only, on 127.0.0.1, for you alone.

The store names students, so the server is guarded (:func:`guarded`) as JupyterLab guards a
notebook server:

- a key: the URL printed on start carries a random token; the first page sets it as a cookie,
  and every request without it is refused. Another user of this machine cannot read the store
  through the port;
- the ``Host`` header must be the address it serves on: a web page that rebinds its own name to
  127.0.0.1 (DNS rebinding) is refused, and its origin never sees the cookie anyway;
- no CSV download: a spreadsheet would run partner text in it as formulas. ``workbench export``
  writes csv with its formula guard.

Datasette opens the file read-only (its connections use SQLite's ``mode=ro``), with the
store's metadata (titles, descriptions, units and canned queries: ``workbench.store.metadata``);
a pull running meanwhile shows up on the next page load. Datasette is the ``browse`` extra.
"""

from __future__ import annotations

import errno
import html
import os
import secrets
import signal
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from http.cookies import SimpleCookie
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

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
COOKIE = "workbench_browse"
NO_CSV = (
    "CSV downloads are off here: a spreadsheet would run partner text in them as formulas. "
    "For a table, view or partner list, workbench export NAME --format csv (or xlsx) guards "
    "them."
)
# Datasette's pages offer CSV downloads, which guarded() refuses: their links are not shown.
NO_CSV_LINKS = "data:text/css," + quote(
    'a[href*=".csv"], form[action*=".csv"], .advanced-export { display: none !important; }'
)
TOKEN_PARAMETER = "token"  # noqa: S105 - the name of a query parameter

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def datasette_installed() -> bool:
    return find_spec("datasette") is not None


def browse(
    db: str | os.PathLike[str] | None = None,
    *,
    profile: str | None = None,
    config_path: str | os.PathLike[str] | None = None,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    announce: Callable[[str], None] = print,
) -> int:
    """Serve the profile's store (``db`` overrides it) in Datasette until it stops (Ctrl-C or
    SIGTERM); 0 once stopped. ``announce`` is told the URL, with its key, first.

    ``ConfigError`` when Datasette is not installed (saying how to install it), or there is no
    workbench store at the path; ``InvalidParameter`` for a port outside 1-65535 or taken.
    """
    from workbench.config import load_profile
    from workbench.report.job import check_store
    from workbench.store import Store

    if not 0 <= port < 65536:
        raise InvalidParameter(
            f"The port must be within 0-65535 (0: any free one), not {port}.", parameter="port"
        )
    if not datasette_installed():
        raise ConfigError(f"Datasette is not installed: {INSTALL}.")
    path = Path(db if db is not None else load_profile(profile, config_path=config_path).db)
    if not path.exists():
        raise ConfigError(
            f"There is no database at {path}: run `workbench pull --db {path}` first."
        )
    check_store(path, pulling=False)
    path = path.resolve()
    listener = _listen(port)  # held from here, so the port cannot be taken meanwhile
    port = listener.getsockname()[1]  # the one chosen, for --port 0
    token = secrets.token_urlsafe(32)
    url = f"http://{HOST}:{port}/?{TOKEN_PARAMETER}={token}"
    try:
        # An older store is served from its private migrated copy (Store.file), removed when
        # the store closes.
        with (
            _stopped_by_sigterm(),
            Store(path, read_only=True) as store,
            tempfile.TemporaryDirectory(prefix="workbench-browse-") as folder,
        ):
            server = _server(store.file, port, token, name=path.stem)
            announce(
                f"Datasette on {path} (read-only, for you alone): {url}\n"
                "The link holds your key: keep it to yourself. Ctrl-C stops it."
            )
            if open_browser:
                _open_privately(url, folder)
            server.run(sockets=[listener])
    except (KeyboardInterrupt, _Stopped):
        return 0
    finally:
        listener.close()
    return 0


def _open_privately(url: str, folder: str) -> None:
    """Open ``url`` in the web browser through a page of ours (0600, in a 0700 folder) that
    forwards to it: the key stays out of the browser's command line, which every local user
    can read (``ps``), as JupyterLab does."""
    import webbrowser

    from workbench.folders import create_private

    page = Path(folder) / "open.html"
    create_private(page)
    link = html.escape(url, quote=True)
    page.write_text(
        f'<!doctype html><meta http-equiv="refresh" content="0; url={link}">'
        f'<a href="{link}">Open the store</a>',
        encoding="utf-8",
    )
    webbrowser.open(page.as_uri())


def _listen(port: int) -> socket.socket:
    """A socket bound to ``HOST:port``; ``InvalidParameter`` saying so when it is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InvalidParameter(
                f"Port {port} on {HOST} is taken (another workbench browse, or another "
                "server): pass another --port.",
                parameter="port",
            ) from None
        raise InvalidParameter(f"Cannot serve on {HOST}:{port}: {exc}.", parameter="port") from None
    sock.listen(128)
    return sock


def _server(path: Path, port: int, token: str, *, name: str) -> Any:
    """A uvicorn server of Datasette on ``path`` (the database ``name``), behind
    :func:`guarded`."""
    import asyncio

    import uvicorn
    from datasette.app import Datasette

    from workbench.store.metadata import datasette_metadata

    ds = Datasette(
        [str(path)],
        metadata={**datasette_metadata(name), "extra_css_urls": [{"url": NO_CSV_LINKS}]},
        settings={"sql_time_limit_ms": SQL_TIME_LIMIT_MS, "truncate_cells_html": TRUNCATE_CELLS},
    )
    asyncio.run(ds.invoke_startup())  # what `datasette serve` runs before serving
    app = guarded(ds.app(), token=token, hosts={f"{HOST}:{port}", f"localhost:{port}"})
    config = uvicorn.Config(app, log_level="warning", lifespan="on", workers=1)
    return uvicorn.Server(config)


def guarded(app: ASGIApp, *, token: str, hosts: set[str]) -> ASGIApp:
    """``app`` answering only requests for ``hosts`` that carry ``token`` (the URL's, which
    sets it as a cookie, or the cookie), and never a CSV download."""

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if headers.get("host", "").lower() not in hosts:
            await _refuse(send, 421, "This server answers only for the address it printed.")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get(TOKEN_PARAMETER)
        if given is not None and _same(given, token):
            rest = urlencode([(k, v) for k, v in query if k != TOKEN_PARAMETER])
            where = scope.get("path", "/") + (f"?{rest}" if rest else "")
            await _send(send, 303, b"", [
                (b"location", where.encode("latin-1")),
                (b"set-cookie", f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/".encode()),
            ])  # fmt: skip
            return
        cookie = SimpleCookie(headers.get("cookie", "")).get(COOKIE)
        if cookie is None or not _same(cookie.value, token):
            await _refuse(send, 401, "The store names students: open the link that "
                          "workbench browse printed (it holds your key).")  # fmt: skip
            return
        if scope.get("path", "").endswith(".csv") or ("_format", "csv") in query:
            await _refuse(send, 403, NO_CSV)
            return
        await app(scope, receive, send)

    return guard


def _same(given: str, token: str) -> bool:
    """A constant-time comparison, whatever characters ``given`` holds."""
    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())


async def _refuse(send: Send, status: int, text: str) -> None:
    await _send(send, status, text.encode(), [(b"content-type", b"text/plain; charset=utf-8")])


async def _send(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


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
