"""Fixtures of the report tests: a populated database built once per session (a sandbox, a
pull, a morning's sends, eight hours later another pull), and small crafted reconciliations."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench import reconcile
from workbench.sandbox import SandboxSettings
from workbench.sandbox.runner import with_overrides
from workbench.scenario import act_out

NOW = pd.Timestamp("2026-03-10T09:00Z")
_FIGURE = re.compile(r'data-figure="([^"]+)" data-value="([^"]*)"')


@dataclass(frozen=True)
class Scenario:
    """The populated database and what ``act_out`` did in it (ids by what was done)."""

    db: Path
    acted: dict[str, list[str]]


@pytest.fixture(scope="session")
def report_scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """Built once: the sandbox starts eight hours ago, so after the clock moves its data is
    dated up to about now (the notebooks reconcile as of the real time)."""
    db = tmp_path_factory.mktemp("report") / "workbench.db"
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    settings = with_overrides(SandboxSettings(start=start), ack_miscount_rate=0.5)
    with wb.connect("sandbox", db=db, sandbox=settings) as w:
        w.pull(progress=False)
        acted = act_out(w)
        assert w.sandbox is not None
        w.sandbox.advance(hours=8)
        w.pull(progress=False)
    return Scenario(db, acted)


@pytest.fixture(scope="session")
def report_db(report_scenario: Scenario) -> Path:
    """The populated database's path (read it; copy it with ``report_copy`` to write)."""
    return report_scenario.db


@pytest.fixture
def report_copy(report_db: Path, tmp_path: Path) -> Path:
    """A private copy of ``report_db`` for a test that writes (or lets a notebook open it)."""
    target = tmp_path / "workbench.db"
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{report_db}{suffix}")
        if source.exists():
            shutil.copy2(source, f"{target}{suffix}")
    return target


def crafted_tables(*, extra_overdue: int = 0) -> dict[str, pd.DataFrame]:
    """Four requests, one of each severity of exception, with names that need escaping;
    ``extra_overdue`` more requests waiting seven days (medium ``response_overdue``)."""
    day = pd.Timedelta(days=1)
    tables = reconcile.empty_tables()
    requests = pd.DataFrame(
        {
            "request_id": ["R1", "R2", "R3", "R4"],
            "on_list": [True, True, False, False],
            "request_date": [NOW - 12 * day, NOW - day, NOW - 3 * day, NOW - 2 * day],
            "first_seen_at": [NOW - 12 * day] * 4,
            "left_at": [None, None, NOW - pd.Timedelta(hours=5), NOW - pd.Timedelta(hours=1)],
            "left_reason": [None, None, "elsewhere", "outbox"],
            "source_org_id": ["A&B", "OB", "A&B", "OB"],
            "source_org_name": ["Smith & Sons <College>", "O'Brien École"] * 2,
            "student_last_name": ["Lé & <b>", "X", "Y", "Tremblay"],
            "student_birth_date": [None, None, None, "2001-02-03"],
            "request_tracking_id": ["R1", "R2", "R3", "R4"],
        }
    )
    more = pd.DataFrame(
        {
            "request_id": [f"M{i}" for i in range(extra_overdue)],
            "on_list": True,
            "request_date": NOW - 7 * day,
            "first_seen_at": NOW - 7 * day,
            "source_org_name": "Many",
            "request_tracking_id": [f"M{i}" for i in range(extra_overdue)],
        }
    )
    tables["requests"] = pd.concat([requests, more], ignore_index=True)
    tables["outbox"] = pd.DataFrame(
        {
            "outbox_id": [1],
            "operation": ["send_transcript"],
            "request_id": ["R4"],
            "state": ["sent"],
            "created_at": [NOW - pd.Timedelta(hours=2)],
            "updated_at": [NOW - pd.Timedelta(hours=2)],
            "sent_request_tracking_id": ["R4"],
            "sent_student_last_name": ["Other"],
            "sent_student_birth_date": ["1999-01-01"],
            "sent_award_count": [1],
            "sent_course_count": [10],
        }
    )
    return tables


@pytest.fixture
def crafted() -> reconcile.Reconciliation:
    """R1 overdue (high), R2 open, R3 closed elsewhere (low), R4 another student's transcript
    sent (critical) and unacknowledged (medium)."""
    return reconcile.reconcile(crafted_tables(), now=NOW, sla_days=5)


@pytest.fixture
def empty_rec() -> reconcile.Reconciliation:
    return reconcile.reconcile(reconcile.empty_tables(), now=NOW, sla_days=5)


def ageing(rec: reconcile.Reconciliation) -> dict[str, dict[str, int]]:
    """Open requests and transcripts awaiting our ack per age bucket, as the headline counts."""
    return {"open": rec.headline["open_by_age"], "awaiting": rec.headline["awaiting_ack_by_age"]}


def figures(html: str) -> dict[str, str]:
    """``data-figure`` key -> ``data-value`` of every figure in an HTML text."""
    return dict(_FIGURE.findall(html))
