"""Hostile partners on 127.0.0.1: ``LoopbackServer`` answers every request as the test writes
it, byte for byte, or ``forward``s it to a real sandbox; ``HostilePartner`` answers each interface
with what the test sets.

>>> with HostilePartner() as partner:  # doctest: +SKIP
...     partner.answer("GET", SUPPLIER_PENDING_PATH, b"null")
...     w = wb.connect(env=partner.env, db=tmp_path / "db.sqlite")
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from workbench import spec

EMPTY_REQUESTS = json.dumps({"Message": spec.NO_REQUESTS_FOUND}).encode()
EMPTY_TRANSCRIPTS = json.dumps({"Message": spec.NO_TRANSCRIPTS_FOUND}).encode()
_HOP = {"connection", "content-encoding", "content-length", "keep-alive", "transfer-encoding"}


class LoopbackServer:
    """A threading HTTP server on 127.0.0.1 where ``respond(handler, body)`` writes every
    answer; a stuck client holds a thread ``timeout`` seconds at most. Serves until ``close``."""

    def __init__(
        self, respond: Callable[[BaseHTTPRequestHandler, bytes], None], *, timeout: float = 30
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                respond(self, self.rfile.read(length) if length else b"")

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        Handler.timeout = timeout
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def forward(handler: BaseHTTPRequestHandler, upstream: str, body: bytes) -> None:
    """Pass ``handler``'s request on to ``upstream`` and its answer back (hop-by-hop headers
    and encodings left out: the answer goes back as decoded)."""
    headers = {k: v for k, v in handler.headers.items() if k.lower() != "host"}
    answer = httpx.request(handler.command, upstream + handler.path, headers=headers, content=body)
    handler.send_response(answer.status_code)
    for key, value in answer.headers.items():
        if key.lower() not in _HOP:
            handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(answer.content)))
    handler.end_headers()
    handler.wfile.write(answer.content)


def body(value: Any) -> bytes:
    """JSON as the partner would send it (``allow_nan``: NaN goes out as is)."""
    return json.dumps(value, ensure_ascii=True).encode()


class HostilePartner:
    """Gateway and exchange on one loopback port; static tokens, so no identity server."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], tuple[int, bytes]] = {}
        self.requests: list[tuple[str, str]] = []
        self.quiet()
        self._server = LoopbackServer(self._respond, timeout=10)

    def _respond(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        path = unquote(urlsplit(handler.path).path)
        self.requests.append((handler.command, path))
        status, content = self.answer_for(handler.command, path)
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        handler.wfile.write(content)

    def quiet(self) -> None:
        """Every list and feed empty, the way the spec says it."""
        self.answers.clear()
        self.answer("GET", spec.SUPPLIER_PENDING_PATH, EMPTY_REQUESTS, 400)
        self.answer("GET", spec.CONSUMER_PENDING_PATH, EMPTY_TRANSCRIPTS, 400)
        self.answer("GET", spec.PENDING_PLACEMENT_EVENTS_PATH, b"[]")
        self.answer("GET", spec.PEEK_EVENTS_PATH, b"[]")

    def answer(self, method: str, path: str, content: bytes, status: int = 200) -> None:
        """Answer ``method path`` with ``content``; a path ending in ``/`` is a prefix."""
        self.answers[(method, path)] = (status, content)

    def answer_for(self, method: str, path: str) -> tuple[int, bytes]:
        if (method, path) in self.answers:
            return self.answers[(method, path)]
        prefixes = [p for m, p in self.answers if m == method and p.endswith("/")]
        for prefix in sorted(prefixes, key=len, reverse=True):
            if path.startswith(prefix):
                return self.answers[(method, prefix)]
        return 404, b'{"Message": "nothing here"}'

    @property
    def url(self) -> str:
        return self._server.url

    @property
    def env(self) -> dict[str, str]:
        return {
            "WORKBENCH_GATEWAY_URL": self.url,
            "WORKBENCH_EXCHANGE_URL": self.url,
            "WORKBENCH_SUBSCRIPTION_KEY": "hostile-key",
            "WORKBENCH_INTL_TOKEN": "hostile-intl-token",
            "WORKBENCH_DOMESTIC_TOKEN": "hostile-domestic-token",
            "WORKBENCH_SUPPLIER_TOKEN": "hostile-supplier-token",
            "WORKBENCH_CONSUMER_TOKEN": "hostile-consumer-token",
            "WORKBENCH_MAX_ATTEMPTS": "1",
        }

    def __enter__(self) -> HostilePartner:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.close()
