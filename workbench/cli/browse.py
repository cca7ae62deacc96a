"""``workbench browse``: Datasette on a store, read-only, on 127.0.0.1, guarded (:func:`guarded`)
as JupyterLab guards its own: the store names students."""

from __future__ import annotations

import errno
import signal
import threading
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote, urlencode

import typer

from workbench.cli.output import Config, Db, Profile, announce_store, clean_errors, say
from workbench.errors import ConfigError, InvalidParameter

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

HOST, DEFAULT_PORT = "127.0.0.1", 8001
INSTALL = (
    "pip install 'workbench[browse]' (in a checkout: "
    ".venv/bin/uv pip install --python .venv/bin/python -e '.[browse]')"
)
SQL_TIME_LIMIT_MS = 5000  # Datasette's 1 s is short for a request's story on a year of calls
TRUNCATE_CELLS = 120  # a table's page cuts a long cell (a document); its row's page has it all
COOKIE, TOKEN_PARAMETER = "workbench_browse", "token"
NO_CSV = (
    "CSV downloads are off here: a spreadsheet would run partner text in them as formulas. "
    "For a table, view or partner list, workbench export NAME --format csv (or xlsx) guards "
    "them."
)
NO_CSV_LINKS = "data:text/css," + quote(  # the links to the refused downloads are not shown
    'a[href*=".csv"], form[action*=".csv"], .advanced-export { display: none !important; }'
)


def browse(
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
    port: Annotated[
        int,
        typer.Option(min=0, max=65535, metavar="PORT", help="Port on 127.0.0.1 (0: any free one)."),
    ] = DEFAULT_PORT,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open it in your web browser.")
    ] = True,
) -> None:
    """Open the database in Datasette, read-only, with table and column descriptions and
    canned queries (overdue requests, transcripts awaiting acknowledgment, acknowledgment
    mismatches, one request's story).

    Serves on 127.0.0.1 until Ctrl-C, to you alone: the URL it prints holds a key, and CSV
    downloads are off (workbench export guards formulas). Needs the browse extra (it says how
    to install it). The partner is not contacted. Exit 2 when Datasette is missing, the port
    is taken, or there is no workbench store at --db.
    """
    with clean_errors():
        path = announce_store(profile, db, config)
        serve(path, port=port, open_browser=open_browser, announce=lambda t: say(t, err=True))


def serve(
    path: str | Path,
    *,
    port: int = DEFAULT_PORT,
    open_browser: bool = True,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the store at ``path`` until Ctrl-C or SIGTERM, ``announce`` told the URL."""
    import secrets  # here: `workbench --help` stays fast (bench/cli.py)
    import socket
    import tempfile

    from workbench.report.job import check_store
    from workbench.store import Store

    if find_spec("datasette") is None:
        raise ConfigError(f"Datasette is not installed: {INSTALL}.")
    path = Path(path)
    if not path.exists():  # check_store's advice would name --no-pull, which browse lacks
        raise ConfigError(
            f"There is no database at {path}: run `workbench pull --db {path}` first."
        )
    check_store(path, pulling=False)  # no workbench store there: a ConfigError
    path = path.resolve()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # held: the port stays ours
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
    except OSError as exc:
        listener.close()
        taken = (
            "is taken (another workbench browse, or another server)"
            if exc.errno == errno.EADDRINUSE
            else f"cannot be served on: {exc}"
        )
        raise InvalidParameter(
            f"Port {port} on {HOST} {taken}: pass another --port.", parameter="port"
        ) from None
    listener.listen(128)
    port = listener.getsockname()[1]  # the one chosen, for --port 0
    token = secrets.token_urlsafe(32)
    url = f"http://{HOST}:{port}/?{TOKEN_PARAMETER}={token}"
    stop = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler) if stop else None
    try:
        # An older store is served from its private migrated copy, removed when it closes.
        with (
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
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _open_privately(url: str, folder: str) -> None:
    """Open ``url`` through a private page that forwards to it, as JupyterLab does: the key
    stays out of the browser's command line, which every local user can read (``ps``)."""
    import html
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


def _server(path: Path, port: int, token: str, *, name: str) -> Any:
    """A uvicorn server of Datasette on ``path`` behind :func:`guarded`."""
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
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", workers=1))


def guarded(app: ASGIApp, *, token: str, hosts: set[str]) -> ASGIApp:
    """``app`` answering only requests for ``hosts`` (no DNS rebinding) that carry ``token`` (the
    URL's, which sets the cookie, or the cookie), and never a CSV download (no formula guard)."""
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, RedirectResponse, Response

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        request = Request(scope)
        query = request.query_params.multi_items()
        given = request.query_params.get(TOKEN_PARAMETER)
        response: Response
        if request.headers.get("host", "").lower() not in hosts:
            response = PlainTextResponse(
                "This server answers only for the address it printed.", 421
            )
        elif given is not None and _same(given, token):
            rest = urlencode([(k, v) for k, v in query if k != TOKEN_PARAMETER])
            response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), 303)
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        elif not _same(request.cookies.get(COOKIE, ""), token):
            response = PlainTextResponse("The store names students: open the link that workbench "
                                         "browse printed (it holds your key).", 401)  # fmt: skip
        elif request.url.path.endswith(".csv") or ("_format", "csv") in query:
            response = PlainTextResponse(NO_CSV, 403)
        else:
            await app(scope, receive, send)
            return
        await response(scope, receive, send)

    return guard


def _same(given: str, token: str) -> bool:
    """A constant-time comparison, whatever characters ``given`` holds."""
    import secrets

    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())
