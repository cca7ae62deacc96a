"""Fault injection as ASGI middleware: latency, 5xx, 429 with Retry-After, dropped connections,
and hostile answers (trickled or endless, reshaped, padded, gzip bombs, echoed requests).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import math
import random
import re
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, replace

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench import spec
from workbench.sandbox.settings import Faults

TRANSPORT_KEY = "workbench.sandbox.transport"


def with_transport(app: ASGIApp) -> ASGIApp:
    """``app``, given the connection in ``scope[TRANSPORT_KEY]``: the one reach past ASGI.

    ASGI has no way to drop a connection without answering, nor to send headers a line at a
    time, and uvicorn offers no public one. Its ``send`` is a method of the request cycle, whose
    ``transport`` is the connection; only the outermost app gets that ``send`` (Starlette wraps
    it), hence the scope key. Under another server it holds None and those faults raise.
    """

    async def app_with_transport(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[TRANSPORT_KEY] = getattr(getattr(send, "__self__", None), "transport", None)
        await app(scope, receive, send)

    return app_with_transport


class FaultMiddleware:
    """Applies ``faults`` (read at every call, so they can change while serving)."""

    def __init__(self, app: ASGIApp, faults: Faults, *, latency_only: bool = False) -> None:
        self.app = app
        self.faults = faults
        self.latency_only = latency_only
        self.rng = random.Random()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        f = self.faults
        delay = f.latency_ms + (self.rng.uniform(0, f.jitter_ms) if f.jitter_ms else 0.0)
        if delay > 0:
            send = _answer_after(send, asyncio.get_running_loop().time() + delay / 1000)
        if f.path_pattern and not re.search(f.path_pattern, scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        if self.latency_only:
            await self._answer(scope, receive, send, Faults(echo_errors=f.echo_errors))
            return
        roll = self.rng.random()
        if roll < f.drop_rate:
            await _drop(scope, send)
            return
        roll -= f.drop_rate
        if roll < f.error_rate:
            status = self.rng.choice((500, 503))
            text = "An error has occurred." if status == 500 else "The service is unavailable."
            await JSONResponse({"Message": text}, status)(scope, receive, send)
            return
        roll -= f.error_rate
        if roll < f.rate_limit_rate:
            text = "Rate limit is exceeded. Try again later."
            wait = {"Retry-After": str(max(0, math.ceil(f.retry_after_s)))}
            await JSONResponse({"Message": text}, 429, wait)(scope, receive, send)
            return
        roll -= f.rate_limit_rate
        if roll < f.drop_after_rate:
            # The operation runs (and a POST takes effect), but its answer never arrives.
            await _capture(self.app, scope, receive)
            await _drop(scope, send)
            return
        roll -= f.drop_after_rate
        if roll < f.header_flood_rate:
            await _capture(self.app, scope, receive)  # the operation runs; its answer is lost
            await _flood_headers(scope, send, f.trickle_interval_s)
            return
        roll -= f.header_flood_rate
        await self._answer(scope, receive, send, f, trickle=roll < f.trickle_rate)

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, faults: Faults, *, trickle: bool = False
    ) -> None:
        """Run the operation, then send its answer reshaped by ``faults`` (and trickled)."""
        if not (trickle or _reshapes(faults)):
            await self.app(scope, receive, send)
            return
        received = bytearray()

        async def recording() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                received.extend(message.get("body", b""))
            return message

        answer = reshape(await _capture(self.app, scope, recording), scope, faults, bytes(received))
        if trickle:
            await _trickle(scope, send, answer, faults)
        else:
            await _send_answer(send, answer)


def _answer_after(send: Send, deadline: float) -> Send:
    """``send`` that holds the answer until ``deadline`` (the loop's clock).

    Latency counts from the request's arrival, as a partner's response time would: the
    sandbox's own work (routing, generating a document) happens inside it, not on top of it.
    """

    async def delayed(message: Message) -> None:
        if message["type"] == "http.response.start":
            await _until(deadline)
        await send(message)

    delayed.deadline = deadline  # type: ignore[attr-defined]  # for _latency_of
    return delayed


async def _until(deadline: float) -> None:
    wait = deadline - asyncio.get_running_loop().time()
    if wait > 0:
        await asyncio.sleep(wait)


async def _latency_of(send: Send) -> None:
    """Wait out the latency held by ``send``: a dropped or endless answer takes it too."""
    deadline = getattr(send, "deadline", None)
    if deadline is not None:
        await _until(deadline)


async def _drop(scope: Scope, send: Send) -> None:
    await _latency_of(send)
    transport = scope.get(TRANSPORT_KEY)
    if transport is None:  # not under uvicorn: the nearest thing is an exception
        raise ConnectionAbortedError("sandbox fault: connection dropped")
    transport.abort()
    # Let the server see the connection is gone, so it does not try to answer on it.
    await asyncio.sleep(0.01)


# -- hostile answers ------------------------------------------------------------------------

LIST_PATHS = (
    spec.SUPPLIER_PENDING_PATH,
    spec.CONSUMER_PENDING_PATH,
    spec.PENDING_PLACEMENT_EVENTS_PATH,
    spec.PEEK_EVENTS_PATH,
)
HOSTILE_LIMIT_S = 600.0  # an endless answer gives up after this long, so it never leaks
DEEP = 200_000
CHUNK = 65_536
JSON_TYPE = b"application/json; charset=utf-8"
LIST_SHAPES = {"null": b"null", "object": b"{}", "scalar": b"42", "string": b'"ok"'}
SUCCESS_BODIES: dict[str, tuple[int, bytes, bytes | None]] = {
    "empty": (200, b"", JSON_TYPE),
    "no_content": (204, b"", None),
    "text": (202, b"Accepted", b"text/plain; charset=utf-8"),
    "html": (
        200,
        b"<!DOCTYPE html><html><head><title>OK</title></head>"
        b"<body><h1>Your request was received.</h1></body></html>",
        b"text/html; charset=utf-8",
    ),
}
# A gzip member header: deflate, no name, no time, maximum compression, unknown OS.
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"


@dataclass
class Answer:
    """An answer held back from the client: status, headers (Content-Length aside), body."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    @property
    def content_type(self) -> bytes:
        return next((v for k, v in self.headers if k.lower() == b"content-type"), b"")

    def with_body(self, body: bytes, *, content_type: bytes | None = JSON_TYPE) -> Answer:
        headers = [(k, v) for k, v in self.headers if k.lower() != b"content-type"]
        if content_type is not None:
            headers.append((b"content-type", content_type))
        return replace(self, headers=headers, body=body)

    def start(self, *, length: bool = True) -> Message:
        headers = [(k, v) for k, v in self.headers if k.lower() != b"content-length"]
        if length and self.status != 204:
            headers.append((b"content-length", str(len(self.body)).encode()))
        return {"type": "http.response.start", "status": self.status, "headers": headers}


def _reshapes(faults: Faults) -> bool:
    return bool(
        faults.success_body
        or faults.list_shape
        or faults.pad_bytes
        or faults.gzip_bomb_bytes
        or faults.bad_encoding
        or faults.hostile_json
        or faults.echo_errors
    )


async def _capture(app: ASGIApp, scope: Scope, receive: Receive) -> Answer:
    """Run ``app`` and keep its answer instead of sending it."""
    answer = Answer(500, [], b"")
    chunks: list[bytes] = []

    async def keep(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, keep)
    answer.body = b"".join(chunks)
    return answer


def reshape(answer: Answer, scope: Scope, faults: Faults, received: bytes) -> Answer:
    """``answer`` as the hostile partner ``faults`` describe would send it."""
    method = scope.get("method", "GET")
    success = 200 <= answer.status < 300
    if faults.success_body and method == "POST" and success:
        status, body, content_type = SUCCESS_BODIES[faults.success_body]
        answer = replace(answer.with_body(body, content_type=content_type), status=status)
    is_list = scope.get("path", "").rstrip("/").endswith(LIST_PATHS)
    if faults.list_shape and method == "GET" and success and is_list:
        if faults.list_shape == "two_arrays":
            answer = answer.with_body(
                b'{"value": ' + answer.body + b', "items": ' + answer.body + b"}"
            )
        else:
            answer = answer.with_body(LIST_SHAPES[faults.list_shape])
    if faults.hostile_json and method == "GET" and success:
        answer = _hostile_json(answer, faults.hostile_json)
    if faults.echo_errors and 400 <= answer.status < 500:
        answer = _echo(answer, scope, received)
    if faults.pad_bytes and answer.content_type.startswith(b"application/json"):
        answer = replace(answer, body=answer.body.ljust(faults.pad_bytes))
    if faults.gzip_bomb_bytes and answer.status != 204:
        answer = _gzip_bomb(answer, faults.gzip_bomb_bytes)
    if faults.bad_encoding and answer.status != 204:
        headers = [(k, v) for k, v in answer.headers if k.lower() != b"content-encoding"]
        answer = replace(answer, headers=[*headers, (b"content-encoding", b"gzip")])
    return answer


def _hostile_json(answer: Answer, kind: str) -> Answer:
    """A JSON array answer made hostile: nested too deep, or its first item poisoned."""
    try:
        items = json.loads(answer.body)
    except ValueError:
        return answer
    if not isinstance(items, list):
        return answer
    if kind == "deep":
        return answer.with_body(b"[" * DEEP + b"]" * DEEP)
    if not items or not isinstance(items[0], dict):
        return answer
    first = items[0]
    if kind == "surrogate_id":
        first["RequestID"] = "\ud800"
    elif kind == "surrogate_event":
        payload = first.get("payload")
        # What Latin-1 bytes decoded with surrogateescape look like: "café" gone wrong.
        (payload if isinstance(payload, dict) else first)["note"] = "caf\udce9"
    else:  # nan
        for key in ("RequestDate", "occurredAt"):
            if key in first:
                first[key] = math.nan
        first["Score"] = math.inf
    return answer.with_body(json.dumps(items, ensure_ascii=True, allow_nan=True).encode())


def _echo(answer: Answer, scope: Scope, received: bytes) -> Answer:
    """An error answer whose message repeats the request's query and body as received."""
    try:
        body = json.loads(answer.body)
    except ValueError:
        return answer
    if not isinstance(body, dict):
        return answer
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    echo = f" (query: {query!r}; body: {received.decode('utf-8', 'replace')!r})"
    key = "error_description" if "error" in body else "Message"
    body[key] = str(body.get(key, "")) + echo
    return answer.with_body(json.dumps(body).encode())


@functools.lru_cache(maxsize=4)
def _deflated_spaces(size: int) -> tuple[bytes, int]:
    """``size`` spaces as raw deflate blocks ending at a full flush, and their CRC-32.

    A full flush ends byte-aligned with no back references, so any deflate stream may follow:
    one bomb per size serves every answer (512 MB of spaces deflates to about 0.5 MB).
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = b" " * min(size, 1 << 20)
    parts, crc, left = [], 0, size
    while left:
        piece = block[:left]
        parts.append(compressor.compress(piece))
        crc = zlib.crc32(piece, crc)
        left -= len(piece)
    parts.append(compressor.flush(zlib.Z_FULL_FLUSH))
    return b"".join(parts), crc


def _gzip_bomb(answer: Answer, size: int) -> Answer:
    """``answer`` gzip-encoded after ``size`` spaces: still the same JSON, once inflated."""
    spaces, crc = _deflated_spaces(size)
    tail = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    trailer = struct.pack(
        "<II", zlib.crc32(answer.body, crc), (size + len(answer.body)) & 0xFFFFFFFF
    )
    body = GZIP_HEADER + spaces + tail.compress(answer.body) + tail.flush() + trailer
    headers = [(k, v) for k, v in answer.headers if k.lower() != b"content-encoding"]
    return replace(answer, headers=[*headers, (b"content-encoding", b"gzip")], body=body)


async def _send_answer(send: Send, answer: Answer) -> None:
    await send(answer.start())
    body = answer.body
    for at in range(0, len(body), CHUNK):
        await send({"type": "http.response.body", "body": body[at : at + CHUNK], "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _trickle(scope: Scope, send: Send, answer: Answer, faults: Faults) -> None:
    """Status and headers at once, then one byte per interval (whitespace forever, if so set).

    Stops when the client hangs up, or cuts the connection after ``HOSTILE_LIMIT_S``.
    """
    transport = scope.get(TRANSPORT_KEY)
    forever = faults.trickle_forever
    await send(answer.start(length=not forever))  # endless: chunked, with no length to reach
    pieces: Iterable[bytes] = (
        itertools.repeat(b" ")
        if forever
        else (answer.body[i : i + 1] for i in range(len(answer.body)))
    )
    loop = asyncio.get_running_loop()
    give_up = loop.time() + HOSTILE_LIMIT_S
    for piece in pieces:
        await asyncio.sleep(faults.trickle_interval_s)
        if _hung_up(transport):
            return
        if loop.time() > give_up:
            await _drop(scope, send)
            return
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _flood_headers(scope: Scope, send: Send, interval: float) -> None:
    """A status line, then header lines one per ``interval``, never the blank line that ends them.

    ASGI servers write headers in one go, so this writes to the connection itself; it stops when
    the client hangs up, and cuts the connection after ``HOSTILE_LIMIT_S``.
    """
    await _latency_of(send)
    transport = scope.get(TRANSPORT_KEY)
    if transport is None:  # not under uvicorn: the nearest thing is an exception
        raise ConnectionAbortedError("sandbox fault: header flood needs a real server")
    transport.write(b"HTTP/1.1 200 OK\r\n")
    give_up = asyncio.get_running_loop().time() + HOSTILE_LIMIT_S
    for n in itertools.count():
        if _hung_up(transport) or asyncio.get_running_loop().time() > give_up:
            break
        transport.write(b"X-Pad-%d: %s\r\n" % (n, b"." * 32))
        await asyncio.sleep(interval)
    transport.abort()
    await asyncio.sleep(0.01)


def _hung_up(transport: asyncio.BaseTransport | None) -> bool:
    return transport is not None and transport.is_closing()
