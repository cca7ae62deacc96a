"""Fixtures shared by every test: real sandboxes on loopback ports, the shared PESC folder."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.sandbox import Sandbox, SandboxSettings
from workbench.sandbox.runner import with_overrides

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
PESC_DIR = SHARED / "pesc"


@pytest.fixture
def sandbox_factory() -> Iterator[Callable[..., Sandbox]]:
    """Start sandboxes with SandboxSettings (or Faults) overrides; all stop at teardown."""
    started: list[Sandbox] = []

    def make(**overrides: Any) -> Sandbox:
        sb = Sandbox(with_overrides(SandboxSettings(), **overrides)).start()
        started.append(sb)
        return sb

    yield make
    for sb in started:
        sb.stop()


@pytest.fixture
def sandbox(sandbox_factory: Callable[..., Sandbox]) -> Sandbox:
    """A fresh sandbox with default settings."""
    return sandbox_factory()


@pytest.fixture(scope="session")
def xsd_dir() -> Path:
    """The official PESC schemas; tests that need them skip when the folder is absent."""
    path = PESC_DIR / "xsd"
    if not path.is_dir():
        pytest.skip(f"PESC schemas not found at {path} (shared/pesc/xsd is absent)")
    return path


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    path = PESC_DIR / "samples"
    if not path.is_dir():
        pytest.skip(f"PESC samples not found at {path} (shared/pesc/samples is absent)")
    return path
