"""One clock: a sandbox started without a start begins now, so with no configuration a report
shows ages of days; the same seed and start give the same data on any day; nothing a sandbox
makes is dated after its own clock."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.sandbox.helpers import FIXED_START
from workbench import reconcile
from workbench.cli import app
from workbench.report import open_store
from workbench.sandbox import SandboxSettings
from workbench.sandbox.state import PartnerState


def test_without_a_start_the_clock_starts_now_to_the_minute() -> None:
    before = datetime.now(UTC)
    start = SandboxSettings(seed=7).start
    after = datetime.now(UTC)
    assert start.tzinfo is not None and start.second == 0 and start.microsecond == 0
    assert before - timedelta(minutes=1) < start <= after


def test_the_same_seed_and_start_give_the_same_data() -> None:
    one, two = (PartnerState.create(SandboxSettings(seed=3, start=FIXED_START)) for _ in "12")
    assert one.now == two.now == FIXED_START
    assert {i: r.date for i, r in one.requests.items()} == {
        i: r.date for i, r in two.requests.items()
    }
    assert one.domestic_events == two.domestic_events


def test_the_same_seed_gives_the_same_data_relative_to_its_start() -> None:
    early = PartnerState.create(SandboxSettings(seed=3, start=FIXED_START))
    now = PartnerState.create(SandboxSettings(seed=3))
    assert list(early.requests) == list(now.requests)  # the same ids
    shift = now.now - early.now
    assert all(now.requests[i].date == r.date + shift for i, r in early.requests.items())


def test_nothing_is_dated_after_the_partners_clock() -> None:
    settings = SandboxSettings(
        seed=5, reissue_per_hour=2, resubmission_per_hour=2, cancellation_per_hour=2,
        closed_elsewhere_per_hour=1, requests_per_hour=4,
    )  # fmt: skip
    state = PartnerState.create(settings)
    for hours in (0.25, 1, 6, 0.5, 24):
        state.advance(hours)
        items = [*state.requests.values(), *state.transcripts.values()]
        assert max(i.date for i in items) <= state.now
        assert all(i.closed_at <= state.now for i in items if i.closed_at is not None)
        for event in (*state.placement_events, *state.domestic_events):
            when = datetime.fromisoformat(event["occurredAt"].replace("Z", "+00:00"))
            assert when <= state.now
    assert state.now <= datetime.now(UTC) + timedelta(hours=31.75)  # only as far as moved
    assert any(i.version > 1 for i in items) and any(i.closed_at for i in items)  # all kinds


@pytest.mark.slow
def test_with_no_configuration_a_report_shows_ages_of_days(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", "--fail-on-exceptions"])
    assert result.exit_code == 0, result.output  # no high or critical exception

    html = Path(result.stdout.strip().splitlines()[-1])
    as_of = datetime.fromisoformat(re.findall(r'data-as-of="([^"]+)"', html.read_text())[0])
    assert abs(datetime.now(UTC) - as_of) < timedelta(minutes=10)
    with open_store(tmp_path / "data" / "workbench.db") as store:
        rec = reconcile.reconcile(reconcile.load(store), now=as_of)
    ages = [*rec.requests["age_days"].dropna(), *rec.transcripts["age_days"].dropna()]
    assert ages and min(ages) >= 0 and max(ages) <= SandboxSettings().backlog_days
    assert rec.headline["exceptions_by_severity"]["high"] == 0
