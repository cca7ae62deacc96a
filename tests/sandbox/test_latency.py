"""Latency counts from a request's arrival, as a partner's response time does: the sandbox's
own work happens inside it, not on top of it; a document is generated once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from workbench.sandbox import generator
from workbench.sandbox.app import FaultMiddleware
from workbench.sandbox.settings import Faults


def answer_after(work_s: float, latency_ms: float, **faults: Any) -> list[dict[str, Any]]:
    """Run one request through FaultMiddleware over an app that works ``work_s`` seconds."""
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        time.sleep(work_s)  # the app's own work (generating, routing, encoding) holds the loop
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"[]"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    middleware = FaultMiddleware(app, Faults(latency_ms=latency_ms, **faults))
    asyncio.run(middleware({"type": "http", "path": "/x"}, receive, send))
    return sent


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every ``asyncio.sleep`` the middleware makes (the app's work does not sleep)."""
    waits: list[float] = []
    sleep = asyncio.sleep

    async def recorded(seconds: float, *args: Any) -> Any:
        waits.append(seconds)
        return await sleep(seconds, *args)

    monkeypatch.setattr(asyncio, "sleep", recorded)
    return waits


def test_work_inside_the_latency_only_waits_for_the_rest(sleeps):
    sent = answer_after(work_s=0.0, latency_ms=60)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 0.06


def test_work_longer_than_the_latency_adds_no_wait(sleeps):
    sent = answer_after(work_s=0.08, latency_ms=20)
    assert sleeps == []  # the deadline passed while the app worked
    assert sent[0]["status"] == 200


def test_errors_are_held_for_the_latency_too(sleeps):
    sent = answer_after(work_s=0.0, latency_ms=50, error_rate=1.0)
    assert sent[0]["status"] in (500, 503)
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 0.05


def test_latency_is_a_lower_bound_over_http(sandbox):
    import httpx

    sandbox.set_faults(latency_ms=120)
    started = time.perf_counter()
    httpx.get(f"{sandbox.gateway_url}/nowhere")  # a 404 takes the latency too
    # A lower bound, never flaky: uvloop's timers may fire up to half a millisecond early.
    assert time.perf_counter() - started >= 0.119


def test_each_document_is_generated_once(sandbox_factory):
    sb = sandbox_factory(initial_requests=7, initial_transcripts=5)
    generator.document.cache_clear()
    listed = [("request", i) for i in sb.state.listed(sb.state.requests)]
    listed += [("transcript", i) for i in sb.state.listed(sb.state.transcripts)]
    assert len(listed) == 12
    for kind, item in listed + listed:
        assert sb.state.document(kind, item)
    assert generator.document.cache_info().misses == 12  # the second round came from the cache
