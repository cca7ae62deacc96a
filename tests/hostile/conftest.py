"""In this folder ``sandbox_factory`` (and so ``sandbox``) starts hostile sandboxes: its
overrides may name ``Hostile`` fields beside the ``SandboxSettings`` and ``Faults`` ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.hostile.sandbox import HOSTILE_NAMES, HostileSandbox
from workbench.sandbox import SandboxSettings
from workbench.sandbox.runner import with_overrides


@pytest.fixture
def sandbox_factory() -> Iterator[Callable[..., HostileSandbox]]:
    started: list[HostileSandbox] = []

    def make(**overrides: Any) -> HostileSandbox:
        hostile = {k: overrides.pop(k) for k in list(overrides) if k in HOSTILE_NAMES}
        sb = HostileSandbox(with_overrides(SandboxSettings(), **overrides), **hostile).start()
        started.append(sb)
        return sb

    yield make
    for sb in started:
        sb.stop()
