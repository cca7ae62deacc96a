"""Client fixtures: a Workbench pointed at a real sandbox over loopback, with fast retries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import workbench as wb
from workbench.sandbox import Sandbox


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """No WORKBENCH_* variable or workbench.toml of the developer's leaks into a test."""
    import os

    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def w(sandbox: Sandbox, connect_to: Callable[..., wb.Workbench]) -> wb.Workbench:
    """A Workbench on a fresh default sandbox."""
    return connect_to(sandbox)


def exchange_hits(sb: Sandbox) -> dict[tuple[str, str], int]:
    """The sandbox's hits below the exchange and gateway, token requests left out."""
    return {k: v for k, v in sb.hits.items() if not k[1].endswith("/connect/token")}
