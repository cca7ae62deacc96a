"""A tiny hostile partner on 127.0.0.1: every interface answers what the test sets, byte for byte.

>>> with HostilePartner() as partner:  # doctest: +SKIP
...     partner.answer("GET", SUPPLIER_PENDING_PATH, b"null")
...     w = wb.connect(env=partner.env, db=tmp_path / "db.sqlite")
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from workbench import spec

EMPTY_REQUESTS = json.dumps({"Message": spec.NO_REQUESTS_FOUND}).encode()
EMPTY_TRANSCRIPTS = json.dumps({"Message": spec.NO_TRANSCRIPTS_FOUND}).encode()


def body(value: Any) -> bytes:
    """JSON as the partner would send it (``allow_nan``: NaN goes out as is)."""
    return json.dumps(value, ensure_ascii=True).encode()


class HostilePartner:
    """Gateway and exchange on one loopback port; static tokens, so no identity server."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, str], tuple[int, bytes]] = {}
        self.requests: list[tuple[str, str]] = []
        self.quiet()
        partner = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10  # a stuck client cannot hold a thread for ever

            def _answer(self) -> None:
                path = unquote(urlsplit(self.path).path)
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                partner.requests.append((self.command, path))
                status, content = partner.answer_for(self.command, path)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

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
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

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
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
