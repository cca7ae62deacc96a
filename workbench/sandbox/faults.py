"""Faults on demand, as ASGI middleware: latency, 500/503, 429 with Retry-After and dropped
connections (before the operation runs, or after it took effect)."""

from __future__ import annotations

import asyncio
import math
import random
import re

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.sandbox.settings import Faults

TRANSPORT_KEY = "workbench.sandbox.transport"


def with_transport(app: ASGIApp) -> ASGIApp:
    """``app``, given uvicorn's connection in ``scope[TRANSPORT_KEY]``: ASGI cannot drop a
    connection unanswered (``send`` is a method of the cycle whose ``transport`` it is)."""

    async def app_with_transport(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            transport = getattr(getattr(send, "__self__", None), "transport", None)
            scope.setdefault(TRANSPORT_KEY, transport)
        await app(scope, receive, send)

    return app_with_transport


class FaultMiddleware:
    """Applies ``faults``, read at every call so that they can change while serving."""

    def __init__(self, app: ASGIApp, faults: Faults, *, latency_only: bool = False) -> None:
        self.app, self.faults, self.latency_only = app, faults, latency_only
        self.rng = random.Random()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        f = self.faults
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        delay = f.latency_ms + (self.rng.uniform(0, f.jitter_ms) if f.jitter_ms else 0.0)
        if delay > 0:
            send = _answer_after(send, asyncio.get_running_loop().time() + delay / 1000)
        if self.latency_only or not re.search(f.path_pattern, scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        roll = self.rng.random()
        if (roll := roll - f.drop_rate) < 0:
            await drop(scope, send)
        elif (roll := roll - f.error_rate) < 0:
            status = self.rng.choice((500, 503))
            text = "An error has occurred." if status == 500 else "The service is unavailable."
            await JSONResponse({"Message": text}, status)(scope, receive, send)
        elif (roll := roll - f.rate_limit_rate) < 0:
            text = "Rate limit is exceeded. Try again later."
            wait = {"Retry-After": str(max(0, math.ceil(f.retry_after_s)))}
            await JSONResponse({"Message": text}, 429, wait)(scope, receive, send)
        elif roll - f.drop_after_rate < 0:
            # The operation runs (and a POST takes effect), but its answer never arrives.
            await self.app(scope, receive, _discard)
            await drop(scope, send)
        else:
            await self.app(scope, receive, send)


async def _discard(message: Message) -> None:
    pass


def _answer_after(send: Send, deadline: float) -> Send:
    """``send`` holding the answer until ``deadline`` (latency counts from the arrival)."""

    async def delayed(message: Message) -> None:
        if message["type"] == "http.response.start":
            await until(deadline)
        await send(message)

    delayed.deadline = deadline  # type: ignore[attr-defined]  # for drop()
    return delayed


async def until(deadline: float | None) -> None:
    """Wait until ``deadline`` on the loop's clock (None: no wait)."""
    wait = 0 if deadline is None else deadline - asyncio.get_running_loop().time()
    if wait > 0:
        await asyncio.sleep(wait)


async def drop(scope: Scope, send: Send) -> None:
    """Close the connection without an answer, once the latency ``send`` holds is over."""
    await until(getattr(send, "deadline", None))
    transport = scope.get(TRANSPORT_KEY)
    if transport is None:  # not under uvicorn: the nearest thing is an exception
        raise ConnectionAbortedError("sandbox fault: connection dropped")
    transport.abort()
    await asyncio.sleep(0.01)
