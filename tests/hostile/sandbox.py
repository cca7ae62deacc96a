"""The sandbox turned hostile: answers that trickle or never end, reshaped, padded, gzip bombs,
hostile JSON, errors that echo the request. The tests' own, not the product's.

``HostileSandbox(settings, **hostile)`` is a ``Sandbox`` whose answers pass through
``HostileMiddleware``; ``set_faults`` takes the ``Hostile`` names beside the ``Faults`` ones, and
the sandbox's ``path_pattern`` scopes both.
"""

from __future__ import annotations

import asyncio
import dataclasses
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
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.watched import WatchedSandbox
from workbench import spec
from workbench.sandbox import SandboxSettings
from workbench.sandbox.app import TRANSPORT_KEY, drop, with_transport
from workbench.sandbox.settings import Faults

# The kinds of the hostile answers; "" is off.
KINDS: dict[str, tuple[str, ...]] = {
    "success_body": ("", "empty", "no_content", "text", "html"),
    "list_shape": ("", "null", "object", "scalar", "string", "two_arrays"),
    "hostile_json": ("", "deep", "surrogate_id", "surrogate_event", "nan"),
}


@dataclass
class Hostile:
    """Hostile answers on demand; the operation runs first (a POST takes effect), then its
    answer is made hostile. Rates are shares of calls, 0..1."""

    # Status and headers at once, then the body one byte per interval; with trickle_forever
    # only whitespace trickles and the body never comes.
    trickle_rate: float = 0.0
    trickle_interval_s: float = 2.0
    trickle_forever: bool = False
    header_flood_rate: float = 0.0  # header lines trickle, never ending
    success_body: str = ""  # a send's 2xx answer becomes: empty, no_content, text or html
    list_shape: str = ""  # lists and event feeds answer: null, object, scalar, string, two_arrays
    pad_bytes: int = 0  # JSON answers padded with whitespace to at least this many bytes
    gzip_bomb_bytes: int = 0  # answers sent gzip-encoded, inflating to more than this many bytes
    bad_encoding: bool = False  # answers say Content-Encoding: gzip, but their body is not gzip
    hostile_json: str = ""  # array answers: deep, surrogate_id, surrogate_event or nan
    echo_errors: bool = False  # error messages echo the raw query and body (identity too)

    def __post_init__(self) -> None:
        for name, kinds in KINDS.items():
            if getattr(self, name) not in kinds:
                raise ValueError(f"Unknown {name} {getattr(self, name)!r}: use one of {kinds}.")
        for name in ("trickle_rate", "header_flood_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} is a share of calls: use a number from 0 to 1.")
        if self.trickle_interval_s <= 0:
            raise ValueError("trickle_interval_s must be a positive number of seconds.")
        for name in ("pad_bytes", "gzip_bomb_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (off) or a positive number of bytes.")

    def update(self, **changes: Any) -> None:
        dataclasses.replace(self, **changes)  # checks the result before anything changes
        for name, value in changes.items():
            setattr(self, name, value)

    @property
    def reshapes(self) -> bool:
        return bool(
            self.success_body
            or self.list_shape
            or self.pad_bytes
            or self.gzip_bomb_bytes
            or self.bad_encoding
            or self.hostile_json
            or self.echo_errors
        )


HOSTILE_NAMES = {f.name for f in dataclasses.fields(Hostile)}


class HostileSandbox(WatchedSandbox):
    """A sandbox whose answers turn hostile as ``self.hostile`` says."""

    def __init__(self, settings: SandboxSettings, **hostile: Any) -> None:
        super().__init__(settings)
        self.hostile = Hostile(**hostile)
        self.app = with_transport(HostileMiddleware(self.app, self.hostile, settings.faults))

    def set_faults(self, **changes: Any) -> None:
        self.hostile.update(**{k: v for k, v in changes.items() if k in HOSTILE_NAMES})
        super().set_faults(**{k: v for k, v in changes.items() if k not in HOSTILE_NAMES})


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


class HostileMiddleware:
    """Makes the answers of ``app`` (the whole sandbox) hostile; the identity server's only
    echo errors."""

    def __init__(self, app: ASGIApp, hostile: Hostile, faults: Faults) -> None:
        self.app, self.hostile, self.faults = app, hostile, faults
        self.rng = random.Random()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not re.search(self.faults.path_pattern, path):
            await self.app(scope, receive, send)
            return
        h = self.hostile
        if path.startswith("/identity/"):
            h = Hostile(echo_errors=h.echo_errors)
        roll = self.rng.random()
        if roll < h.header_flood_rate:
            await _capture(self.app, scope, receive)  # the operation runs; its answer is lost
            await _flood_headers(scope, h.trickle_interval_s)
            return
        trickle = roll - h.header_flood_rate < h.trickle_rate
        if not (trickle or h.reshapes):
            await self.app(scope, receive, send)
            return
        received = bytearray()

        async def recording() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                received.extend(message.get("body", b""))
            return message

        answer = _reshape(await _capture(self.app, scope, recording), scope, h, bytes(received))
        if trickle:
            await _trickle(scope, send, answer, h)
        else:
            await _send_answer(send, answer)


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


def _reshape(answer: Answer, scope: Scope, hostile: Hostile, received: bytes) -> Answer:
    """``answer`` as the hostile partner ``hostile`` describes would send it."""
    method = scope.get("method", "GET")
    success = 200 <= answer.status < 300
    if hostile.success_body and method == "POST" and success:
        status, body, content_type = SUCCESS_BODIES[hostile.success_body]
        answer = replace(answer.with_body(body, content_type=content_type), status=status)
    is_list = scope.get("path", "").rstrip("/").endswith(LIST_PATHS)
    if hostile.list_shape and method == "GET" and success and is_list:
        if hostile.list_shape == "two_arrays":
            answer = answer.with_body(
                b'{"value": ' + answer.body + b', "items": ' + answer.body + b"}"
            )
        else:
            answer = answer.with_body(LIST_SHAPES[hostile.list_shape])
    if hostile.hostile_json and method == "GET" and success:
        answer = _hostile_json(answer, hostile.hostile_json)
    if hostile.echo_errors and 400 <= answer.status < 500:
        answer = _echo(answer, scope, received)
    if hostile.pad_bytes and answer.content_type.startswith(b"application/json"):
        answer = replace(answer, body=answer.body.ljust(hostile.pad_bytes))
    if hostile.gzip_bomb_bytes and answer.status != 204:
        answer = _gzip_bomb(answer, hostile.gzip_bomb_bytes)
    if hostile.bad_encoding and answer.status != 204:
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


async def _trickle(scope: Scope, send: Send, answer: Answer, hostile: Hostile) -> None:
    """Status and headers at once, then one byte per interval (whitespace forever, if so set).

    Stops when the client hangs up, or cuts the connection after ``HOSTILE_LIMIT_S``.
    """
    transport = scope.get(TRANSPORT_KEY)
    forever = hostile.trickle_forever
    await send(answer.start(length=not forever))  # endless: chunked, with no length to reach
    pieces: Iterable[bytes] = (
        itertools.repeat(b" ")
        if forever
        else (answer.body[i : i + 1] for i in range(len(answer.body)))
    )
    loop = asyncio.get_running_loop()
    give_up = loop.time() + HOSTILE_LIMIT_S
    for piece in pieces:
        await asyncio.sleep(hostile.trickle_interval_s)
        if _hung_up(transport):
            return
        if loop.time() > give_up:
            await drop(scope, send)
            return
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _flood_headers(scope: Scope, interval: float) -> None:
    """A status line, then header lines one per ``interval``, never the blank line that ends them.

    ASGI servers write headers in one go, so this writes to the connection itself; it stops when
    the client hangs up, and cuts the connection after ``HOSTILE_LIMIT_S``.
    """
    transport = scope[TRANSPORT_KEY]
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
