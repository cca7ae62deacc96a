"""Client fixtures: a Workbench pointed at a real sandbox over loopback, with fast retries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import workbench as wb
from workbench.http import Exchange
from workbench.sandbox import Sandbox

# Retries fast enough for tests, patient enough for the fault rates they inject.
FAST = {
    "WORKBENCH_BACKOFF_INITIAL": "0.01",
    "WORKBENCH_BACKOFF_MAX": "0.05",
    "WORKBENCH_RETRY_AFTER_MAX": "0.05",
    "WORKBENCH_MAX_ATTEMPTS": "10",
}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No WORKBENCH_* variable or workbench.toml of the developer's leaks into a test."""
    import os

    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def exchanges() -> list[Exchange]:
    """Every exchange the workbench records, in order."""
    return []


@pytest.fixture
def connect_to(exchanges: list[Exchange]) -> Iterator[Callable[..., wb.Workbench]]:
    """``connect_to(sb, **env_overrides)``: a Workbench on ``sb``; closed at teardown."""
    opened: list[wb.Workbench] = []

    def make(sb: Sandbox, *, settings: dict[str, Any] | None = None, **env: str) -> wb.Workbench:
        w = wb.connect(env={**sb.env, **FAST, **env}, recorder=exchanges.append, **(settings or {}))
        opened.append(w)
        return w

    yield make
    for w in opened:
        w.close()


@pytest.fixture
def w(sandbox: Sandbox, connect_to: Callable[..., wb.Workbench]) -> wb.Workbench:
    """A Workbench on a fresh default sandbox."""
    return connect_to(sandbox)


def exchange_hits(sb: Sandbox) -> dict[tuple[str, str], int]:
    """The sandbox's hits below the exchange and gateway, token requests left out."""
    return {k: v for k, v in sb.hits.items() if not k[1].endswith("/connect/token")}
