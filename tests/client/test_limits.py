"""Every call has a deadline and a size cap; so does the whole pull (issue #10, findings 3, 4).

The partner here is the sandbox behind a tiny loopback proxy that misbehaves on one path: it
trickles a body one byte at a time, sends header lines forever, answers a gzip bomb, or keeps
asking to retry later. Each misbehaviour lasts a bounded time, then the proxy passes the request
through, so a client without limits ends up served (and these tests fail instead of hanging).
"""

from __future__ import annotations

import contextlib
import gzip
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

import workbench as wb
from tests.hostile.partner import LoopbackServer, forward
from workbench import spec
from workbench.config import load_profile
from workbench.http.answers import request_path
from workbench.http.limits import AnswerTooLarge, read_capped
from workbench.http.session import Exchange
from workbench.pull import PullSummary
from workbench.sandbox import Sandbox

from .documents import response_xml

BUDGET_S = 8.0  # how long a slow proxy (trickle, headers) misbehaves in all, before it gives in


class Proxy:
    """The sandbox's exchange on 127.0.0.1, except ``(method, path)`` answered as ``mode``."""

    def __init__(self, upstream: str, method: str, path: str, mode: str, **options: Any) -> None:
        self.upstream, self.target = upstream, (method, path)
        self.mode, self.options = mode, options
        self.stop_at: float | None = None  # the end of the misbehaviour budget
        self.hits = 0
        self._server = LoopbackServer(self._respond)

    def _respond(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if (handler.command, handler.path.split("?")[0]) == self.target and self.misbehaving():
            self.hits += 1
            with contextlib.suppress(OSError):  # the client gave up: as it should
                getattr(self, f"_{self.mode}")(handler)
            handler.close_connection = True
            return
        forward(handler, self.upstream, body)

    @property
    def url(self) -> str:
        return self._server.url

    def misbehaving(self) -> bool:
        if self.mode not in ("trickle", "headers"):  # instant answers: wrong on every call
            return True
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

    def _bomb_in_a_bomb(self, handler: BaseHTTPRequestHandler) -> None:
        inner = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = b"0" * (1 << 20)
        parts = [inner.compress(zeros) for _ in range(self.options["inflated"] >> 20)]
        bomb = gzip.compress(b"".join([*parts, inner.flush()]), compresslevel=9)
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        handler.wfile.write(b"Content-Encoding: gzip, gzip\r\n")
        handler.wfile.write(b"Content-Length: %d\r\n\r\n" % len(bomb))
        handler.wfile.write(bomb)

    def _encoded(self, handler: BaseHTTPRequestHandler) -> None:
        status, coding, body = self.options["status"], self.options["coding"], b"not gzip at all"
        handler.wfile.write(b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\n" % status)
        handler.wfile.write(b"Content-Encoding: %s\r\n" % coding.encode())
        handler.wfile.write(b"Content-Length: %d\r\n\r\n" % len(body))
        handler.wfile.write(body)

    def _retry_later(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(503)
        handler.send_header("Retry-After", "1")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def close(self) -> None:
        self._server.close()


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


@pytest.mark.slow
def test_a_bomb_inside_a_bomb_is_never_inflated_past_the_cap(
    sandbox: Sandbox,
    connect_to: Callable[..., wb.Workbench],
    misbehaving: Any,
    exchanges: list[Exchange],
) -> None:
    cap = 1024 * 1024
    tracemalloc.start()
    try:
        _, summary, request_id = _pull_with_one_bad_detail(
            sandbox,
            connect_to,
            misbehaving,
            "bomb_in_a_bomb",
            WORKBENCH_MAX_ANSWER_BYTES=str(cap),
            options={"inflated": 64 * cap},
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    [failure] = summary.failures
    assert failure["id"] == request_id
    assert "WORKBENCH_MAX_ANSWER_BYTES" in failure["error"]
    assert peak < 16 * cap  # the 64 MiB inside were never all in memory


def _one_bad_body(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any, **options: Any
) -> tuple[wb.Workbench, PullSummary, str]:
    return _pull_with_one_bad_detail(sandbox, connect_to, misbehaving, "encoded", options=options)


@pytest.mark.parametrize("coding", ["gzip", "br", "gzip, gzip, gzip"])
def test_a_body_that_cannot_be_decoded_fails_its_call_alone_and_typed(
    sandbox: Sandbox,
    connect_to: Callable[..., wb.Workbench],
    misbehaving: Any,
    exchanges: list[Exchange],
    coding: str,
) -> None:
    w, summary, request_id = _one_bad_body(
        sandbox, connect_to, misbehaving, status=200, coding=coding
    )
    assert summary.status == "partial"
    [failure] = summary.failures
    assert failure["id"] == request_id
    assert "Content-Encoding" in failure["error"]
    [bad] = [e for e in exchanges if e.url.endswith(_detail(request_id))]
    assert bad.status == 200 and bad.error is not None
    assert bad.response_headers["content-encoding"] == coding  # what the partner sent
    request = request_path(spec.SUPPLIER_REQUEST_PATH, request_id)
    with pytest.raises(wb.UnreadableAnswer) as info:
        w.session.call("supplier", "GET", request, operation="supplier.request")
    assert info.value.status == 200


def test_an_error_status_with_an_undecodable_body_is_still_that_status(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any
) -> None:
    request_id = sandbox.pending_request_ids()[0]
    proxy = misbehaving("GET", _detail(request_id), "encoded", status=404, coding="gzip")
    w = connect_to(sandbox, WORKBENCH_EXCHANGE_URL=proxy.url)
    with pytest.raises(wb.PartnerError) as info:
        w.session.call("supplier", "GET", _detail(request_id), operation="supplier.request")
    assert info.value.status == 404


def test_an_undecodable_2xx_answer_to_a_send_means_sent(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any
) -> None:
    request_id = sandbox.pending_request_ids()[0]
    path = request_path(spec.SUPPLIER_RESPONSES_PATH, request_id)
    proxy = misbehaving("POST", path, "encoded", status=200, coding="gzip")
    w = connect_to(sandbox, WORKBENCH_EXCHANGE_URL=proxy.url)
    df = w.supplier.send_response(request_id, response_xml(request_id))
    assert "took the send" in df.attrs["reply_note"]
    outbox_id = df.attrs["outbox_id"]
    assert w.store.db["outbox"].get(outbox_id)["state"] == "sent"


def test_we_ask_only_for_encodings_we_decode_under_the_cap(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], exchanges: list[Exchange]
) -> None:
    connect_to(sandbox).supplier.pending_requests()
    assert {e.request_headers.get("accept-encoding") for e in exchanges} == {"gzip, deflate"}


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
    assert f"at {proxy.url.rstrip('/')}{path} within" in str(info.value)  # the whole URL
    assert proxy.hits == 1  # never resent
    assert list(w.store.table("outbox_unresolved")["state"]) == ["uncertain"]


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


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("codings", "encode"),
    [
        ([], lambda d: d),
        (["identity"], lambda d: d),
        (["gzip"], gzip.compress),
        (["x-gzip"], gzip.compress),
        (["deflate"], zlib.compress),  # zlib-wrapped, as the RFC says
        (["deflate"], _raw_deflate),  # raw, as some servers send it
        (["deflate", "gzip"], lambda d: gzip.compress(zlib.compress(d))),
        (["GZIP", " identity"], gzip.compress),
    ],
)
def test_every_encoding_we_ask_for_is_read_whole(codings: list[str], encode: Any) -> None:
    body = b'[{"RequestID": "A1"}]' * 20_000
    wire = encode(body)
    chunks = [wire[i : i + 1000] for i in range(0, len(wire), 1000)]
    assert read_capped(chunks, codings, limit=len(body)) == body
    with pytest.raises(AnswerTooLarge):
        read_capped(chunks, codings, limit=len(body) - 1)


def test_a_login_past_its_deadline_is_no_send_that_may_have_reached(
    sandbox: Sandbox, connect_to: Callable[..., wb.Workbench], misbehaving: Any
) -> None:
    proxy = misbehaving("POST", spec.TOKEN_PATH, "trickle")
    w = connect_to(sandbox, WORKBENCH_AUTH_URL=proxy.url, WORKBENCH_CALL_DEADLINE="1")
    with pytest.raises(wb.TransportError) as info:
        w.supplier.pending_requests()
    assert not info.value.may_have_reached  # a login changes nothing at the partner
    assert "pending list" not in str(info.value)
    assert "WORKBENCH_CALL_DEADLINE" in str(info.value)
