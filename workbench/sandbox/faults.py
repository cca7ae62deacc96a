"""Fault injection as ASGI middleware: latency, 5xx, 429 with Retry-After, dropped connections."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from workbench.sandbox.settings import Faults

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TRANSPORT_KEY = "workbench.sandbox.transport"


class CaptureTransport:
    """Outermost middleware: remembers the server's transport so a fault can cut it.

    uvicorn hands the app the bound ``send`` of its request cycle, which holds the transport;
    ASGI itself has no way to drop a connection without answering.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            cycle = getattr(send, "__self__", None)
            scope[TRANSPORT_KEY] = getattr(cycle, "transport", None)
        await self.app(scope, receive, send)


async def _json(send: Send, status: int, body: dict[str, str], headers: list[tuple[bytes, bytes]]):
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json; charset=utf-8"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


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
        if self.latency_only or (
            f.path_pattern and not re.search(f.path_pattern, scope.get("path", ""))
        ):
            await self.app(scope, receive, send)
            return
        roll = self.rng.random()
        if roll < f.drop_rate:
            await _drop(scope, send)
            return
        roll -= f.drop_rate
        if roll < f.error_rate:
            status = self.rng.choice((500, 503))
            text = "An error has occurred." if status == 500 else "The service is unavailable."
            await _json(send, status, {"Message": text}, [])
            return
        roll -= f.error_rate
        if roll < f.rate_limit_rate:
            wait = str(max(0, math.ceil(f.retry_after_s))).encode()
            await _json(
                send,
                429,
                {"Message": "Rate limit is exceeded. Try again later."},
                [(b"retry-after", wait)],
            )
            return
        roll -= f.rate_limit_rate
        if roll < f.drop_after_rate:
            # The operation runs (and a POST takes effect), but its answer never arrives.
            async def swallow(message: Message) -> None:
                return None

            await self.app(scope, receive, swallow)
            await _drop(scope, send)
            return
        await self.app(scope, receive, send)


def _answer_after(send: Send, deadline: float) -> Send:
    """``send`` that holds the answer until ``deadline`` (the loop's clock).

    Latency counts from the request's arrival, as a partner's response time would: the
    sandbox's own work (routing, generating a document) happens inside it, not on top of it.
    """

    async def delayed(message: Message) -> None:
        if message["type"] == "http.response.start":
            await _until(deadline)
        await send(message)

    delayed.deadline = deadline  # type: ignore[attr-defined]  # for _drop
    return delayed


async def _until(deadline: float) -> None:
    wait = deadline - asyncio.get_running_loop().time()
    if wait > 0:
        await asyncio.sleep(wait)


async def _drop(scope: Scope, send: Send) -> None:
    deadline = getattr(send, "deadline", None)
    if deadline is not None:  # a dropped connection also takes the latency to notice
        await _until(deadline)
    transport = scope.get(TRANSPORT_KEY)
    if transport is None:  # not under uvicorn: the nearest thing is an exception
        raise ConnectionAbortedError("sandbox fault: connection dropped")
    transport.abort()
    # Let the server see the connection is gone, so it does not try to answer on it.
    await asyncio.sleep(0.01)
