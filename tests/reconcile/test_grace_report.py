"""``workbench report --grace-hours``: the option reaches the notebook's reconciliation, and an
unusable value is refused before anything runs."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.reconcile.builders import NOW, Partner
from tests.report.conftest import figures
from workbench.cli import app
from workbench.store import Store

PROJECT = Path(__file__).resolve().parents[2]
SLA_DAYS, GRACE_HOURS = 2.0, 3.0
MARGIN = 20 / (24 * 60)  # days: 20 minutes (the edges to the minute: test_grace.py)


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in os.environ if n.startswith("WORKBENCH_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(PROJECT / "notebooks"))
    return tmp_path


@pytest.mark.slow
def test_the_report_counts_overdue_past_the_sla_plus_the_grace(clean_env: Path) -> None:
    db = clean_env / "graced.db"
    with Store(db) as store:
        partner = Partner(store)
        # Dated from the real clock: the report measures at the time it runs, a little later
        # than this, so the margin is wide enough for the kernel to start.
        edge = SLA_DAYS + GRACE_HOURS / 24 - (datetime.now(UTC) - NOW) / timedelta(days=1)
        partner.request("R-UNDER", days=edge - MARGIN)
        partner.request("R-OVER", days=edge + MARGIN)
        partner.transcript("T-UNDER", days=edge - MARGIN)
        partner.transcript("T-OVER", days=edge + MARGIN)
        partner.list_requests("R-UNDER", "R-OVER")
        partner.list_transcripts("T-UNDER", "T-OVER")
    result = CliRunner().invoke(
        app,
        ["report", "--no-pull", "--db", str(db), "--output-dir", str(clean_env / "out"),
         "--sla-days", str(SLA_DAYS),
         "--grace-hours", str(GRACE_HOURS)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    html = Path(result.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
    found = figures(html)
    assert (found["open_over_sla"], found["awaiting_ack_over_sla"]) == ("1", "1")
    assert "days + 3 h grace" in html
    assert "R-OVER" in html and "T-OVER" in html
    assert "R-UNDER" not in html.split("Exceptions per kind")[1]


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_an_unusable_grace_is_refused_before_anything_runs(clean_env: Path, value: str) -> None:
    db = clean_env / "never.db"
    result = CliRunner().invoke(
        app, ["report", "--no-pull", "--db", str(db), "--grace-hours", value]
    )
    assert result.exit_code == 2, result.output
    assert "Invalid value for --grace-hours" in result.output
    assert "use a finite number, 0 or more" in result.output
    assert not db.exists()
