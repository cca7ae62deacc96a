"""Every call has a deadline and a size cap; so does the whole pull (issue #10, findings 3, 4).

The partner here is the sandbox behind a tiny loopback proxy that misbehaves on one path: it
trickles a body one byte at a time, sends header lines forever, answers a gzip bomb, or keeps
asking to retry later. Each misbehaviour lasts a bounded time, then the proxy passes the request
through, so a client without limits ends up served (and these tests fail instead of hanging).
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

import workbench as wb
from workbench import spec
from workbench.api.ids import request_path
from workbench.config import load_profile
from workbench.http import Exchange
from workbench.pull import PullSummary
from workbench.sandbox import Sandbox

from .documents import response_xml

BUDGET_S = 8.0  # how long the proxy misbehaves in all, before it gives in
_HOP = {"connection", "content-encoding", "content-length", "keep-alive", "transfer-encoding"}


class Proxy:
    """The sandbox's exchange on 127.0.0.1, except ``(method, path)`` answered as ``mode``."""

    def __init__(self, upstream: str, method: str, path: str, mode: str, **options: Any) -> None:
        self.upstream, self.target, self.mode, self.options = (
            upstream,
            (method, path),
            mode,
            options,
        )
        self.stop_at: float | None = None  # the end of the misbehaviour budget
        self.hits = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30  # a stuck client cannot hold a thread for ever

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                content = self.rfile.read(length) if length else b""
                if (self.command, self.path.split("?")[0]) == proxy.target and proxy.misbehaving():
                    proxy.hits += 1
                    with contextlib.suppress(OSError):  # the client gave up: as it should
                        getattr(proxy, f"_{proxy.mode}")(self)
                    self.close_connection = True
                    return
                self._forward(content)

            def _forward(self, content: bytes) -> None:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                answer = httpx.request(
                    self.command, proxy.upstream + self.path, headers=headers, content=content
                )
                self.send_response(answer.status_code)
                for key, value in answer.headers.items():
                    if key.lower() not in _HOP:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def misbehaving(self) -> bool:
        if self.stop_at is None:
            self.stop_at = time.monotonic() + BUDGET_S
        return time.monotonic() < self.stop_at

    def _until_budget(self, every_s: float) -> Iterator[None]:
        while self.stop_at is not None and time.monotonic() < self.stop_at:
            yield
            time.sleep(every_s)

    def _trickle(self, handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        handler.wfile.write(b"Content-Length: 100000\r\n\r\n[")
        for _ in self._until_budget(0.5):
            handler.wfile.write(b" ")
            handler.wfile.flush()

    def _headers(self, handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
        for n, _ in enumerate(self._until_budget(0.5)):
            handler.wfile.write(b"X-Filler-%d: x\r\n" % n)
            handler.wfile.flush()

    def _bomb(self, handler: BaseHTTPRequestHandler) -> None:
        bomb = gzip.compress(b"0" * self.options["inflated"], compresslevel=9)
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        handler.wfile.write(b"Content-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(bomb))
        handler.wfile.write(bomb)

    def _retry_later(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(503)
        handler.send_header("Retry-After", "1")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def misbehaving(sandbox: Sandbox) -> Iterator[Callable[..., Proxy]]:
    """``misbehaving(method, path, mode)``: a proxy in front of ``sandbox``'s exchange."""
    started: list[Proxy] = []

    def make(method: str, path: str, mode: str, **options: Any) -> Proxy:
        started.append(Proxy(sandbox.exchange_url, method, path, mode, **options))
        return started[-1]

    yield make
    for proxy in started:
        proxy.close()


def _detail(request_id: str) -> str:
    return request_path(spec.SUPPLIER_REQUEST_PATH, request_id)


def _pull_with_one_bad_detail(
    sandbox: Sandbox,
    connect_to: Callable[..., wb.Workbench],
    misbehaving: Any,
    mode: str,
    **env: str,
) -> tuple[wb.Workbench, PullSummary, str]:
    request_id = sandbox.pending_request_ids()[0]
    proxy = misbehaving("GET", _detail(request_id), mode, **env.pop("options", {}))
    w = connect_to(sandbox, WORKBENCH_EXCHANGE_URL=proxy.url, **env)
    return w, w.pull(), request_id


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["trickle", "headers"])
def test_a_call_past_its_deadline_fails_alone_and_frees_the_pull(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any, mode: str
) -> None:
    w, summary, request_id = _pull_with_one_bad_detail(
        sandbox, connect_to, misbehaving, mode, WORKBENCH_CALL_DEADLINE="2"
    )
    assert summary.status == "partial"
    [failure] = summary.failures
    assert failure["id"] == request_id
    assert "WORKBENCH_CALL_DEADLINE" in failure["error"]
    listed = summary.lists["supplier_requests"]
    assert listed.details_fetched == listed.listed - 1
    with w.store.run_lock(timeout_s=0):  # the pull let go of its lock
        pass


def test_an_answer_over_the_cap_fails_that_call_with_a_clear_error(
    sandbox: Sandbox,
    connect_to: Callable[..., wb.Workbench],
    misbehaving: Any,
    exchanges: list[Exchange],
) -> None:
    cap = 1024 * 1024
    _, summary, request_id = _pull_with_one_bad_detail(
        sandbox,
        connect_to,
        misbehaving,
        "bomb",
        WORKBENCH_MAX_ANSWER_BYTES=str(cap),
        options={"inflated": 50 * cap},
    )
    assert summary.status == "partial"
    [failure] = summary.failures
    assert failure["id"] == request_id
    assert "WORKBENCH_MAX_ANSWER_BYTES" in failure["error"]
    listed = summary.lists["supplier_requests"]
    assert listed.details_fetched == listed.listed - 1
    [bomb] = [e for e in exchanges if e.url.endswith(_detail(request_id))]
    assert bomb.error is not None and "WORKBENCH_MAX_ANSWER_BYTES" in bomb.error
    assert len(bomb.response_body) <= cap


def test_a_send_past_its_deadline_may_have_reached_the_partner(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any
) -> None:
    request_id = sandbox.pending_request_ids()[0]
    path = request_path(spec.SUPPLIER_RESPONSES_PATH, request_id)
    proxy = misbehaving("POST", path, "trickle")
    w = connect_to(sandbox, WORKBENCH_EXCHANGE_URL=proxy.url, WORKBENCH_CALL_DEADLINE="1")
    with pytest.raises(wb.TransportError) as info:
        w.supplier.send_response(request_id, response_xml(request_id))
    assert info.value.may_have_reached
    assert "WORKBENCH_CALL_DEADLINE" in str(info.value)
    assert proxy.hits == 1  # never resent
    assert list(w.store.outbox.pending_or_uncertain()["state"]) == ["uncertain"]


def test_retries_and_their_waits_stay_within_the_deadline(
    sandbox: Sandbox,
    connect_to: Callable[..., wb.Workbench],
    misbehaving: Any,
    exchanges: list[Exchange],
) -> None:
    proxy = misbehaving("GET", spec.SUPPLIER_PENDING_PATH, "retry_later")
    w = connect_to(
        sandbox,
        WORKBENCH_EXCHANGE_URL=proxy.url,
        WORKBENCH_CALL_DEADLINE="2",
        WORKBENCH_RETRY_AFTER_MAX="5",
        WORKBENCH_MAX_ATTEMPTS="10",
    )
    with pytest.raises(wb.PartnerError):
        w.supplier.pending_requests()
    # Retry-After: 1 with a 2 s deadline leaves room for two attempts, not ten.
    assert 1 <= proxy.hits <= 3


@pytest.mark.slow
def test_the_pull_stops_fetching_at_its_deadline(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any
) -> None:
    w, summary, request_id = _pull_with_one_bad_detail(
        sandbox, connect_to, misbehaving, "trickle", WORKBENCH_PULL_DEADLINE="2"
    )
    assert summary.status == "partial"
    assert any(
        f["id"] == request_id and "WORKBENCH_PULL_DEADLINE" in f["error"] for f in summary.failures
    )
    with w.store.run_lock(timeout_s=0):
        pass


@pytest.mark.parametrize(
    ("name", "value"),
    [("CALL_DEADLINE", "0"), ("CALL_DEADLINE", "inf"), ("MAX_ANSWER_BYTES", "0"),
     ("PULL_DEADLINE", "-1"), ("PULL_DEADLINE", "nan")],
)  # fmt: skip
def test_limits_must_be_positive_and_finite(name: str, value: str) -> None:
    with pytest.raises(wb.ConfigError, match=f"WORKBENCH_{name}"):
        load_profile(env={f"WORKBENCH_{name}": value})
