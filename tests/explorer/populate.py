"""A workbench database with some history: a pull, a realistic mix of sends
(``workbench.scenario.act_out``), eight partner hours, and another pull.

Shared by the explorer tests and the browser tests.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import workbench as wb
from workbench.sandbox import SandboxSettings
from workbench.scenario import act_out


def populate(db: Path, *, start: datetime | None = None) -> dict[str, list[str]]:
    """Fill ``db`` from a fresh embedded sandbox (dated from ``start``, default now); the ids
    ``act_out`` acted on, by what it did."""
    settings = SandboxSettings(start=start or datetime.now(UTC))
    with wb.connect("sandbox", db=db, env={}, sandbox=settings) as w:
        assert w.sandbox is not None
        w.pull(progress=False)
        acted = act_out(w)  # with the embedded sandbox, one send ends uncertain
        w.sandbox.advance(hours=8)
        w.pull(progress=False)
    return acted
