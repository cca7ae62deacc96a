"""The client against every answer to an open point alone, and against seeded unknown partners
(DESIGN §3): doctor, pulls, the three sends and the reports (:func:`live_a_day`)."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.partners.conftest import DATA, hides_events, live_a_day
from tests.sandbox.helpers import open_points, start_cli, stop_cli
from workbench.cli import app
from workbench.sandbox import Sandbox
from workbench.sandbox.settings import unknown_partner

SEEDS = (3, 14, 15, 92, 65, 35, 89, 79)
WORKBENCH = Path(sys.executable).parent / "workbench"


@pytest.mark.parametrize(
    ("name", "value"), open_points(), ids=[f"{name}={value}" for name, value in open_points()]
)
def test_each_open_point_alone(sandbox_factory, tmp_path, name, value):
    live_a_day(sandbox_factory(**DATA, **{name: value}), tmp_path / "wb.db")


@pytest.mark.parametrize("seed", SEEDS)
def test_an_unknown_partner(tmp_path, seed):
    with Sandbox(unknown_partner(seed, **DATA)) as sb:
        live_a_day(sb, tmp_path / "wb.db")


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_an_unknown_partners_reports_run_as_notebooks(tmp_path, seed):
    db, out = str(tmp_path / "wb.db"), str(tmp_path / "reports")
    with Sandbox(unknown_partner(seed, **DATA)) as sb:
        live_a_day(sb, Path(db))
        sb.advance(hours=1)
        # As a scheduler runs it: pull, then the notebook (a partner that hides events from
        # every reader makes a partial pull, which the job accepts only when told to).
        hides = hides_events(sb.settings, len(sb.state.domestic_events))
        args = ["report", "--db", db, "--output-dir", out, *(["--allow-partial"] if hides else [])]
        runs = [CliRunner().invoke(app, args, env=sb.env)]
    runs.append(
        CliRunner().invoke(
            app, ["report", "--notebook", "events", "--no-pull", "--db", db, "--output-dir", out]
        )
    )
    for result in runs:
        assert result.exit_code == 0, result.output
        html = Path(result.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
        assert "Traceback" not in html


@pytest.mark.slow
def test_the_sandbox_command_serves_an_unknown_partner_the_cli_can_use(tmp_path):
    seed = 2718
    proc, env = start_cli("--unknown-partner", str(seed))
    try:
        ours = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
        run = partial(subprocess.run, cwd=tmp_path, env={**ours, **env}, capture_output=True,
                      text=True, timeout=300)  # fmt: skip
        doctor = run([str(WORKBENCH), "doctor"])
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        pulled = run([str(WORKBENCH), "pull", "--db", str(tmp_path / "wb.db")])
    finally:
        _, err = stop_cli(proc)
    assert proc.returncode == 0, err
    drawn = unknown_partner(seed)
    if hides_events(drawn, drawn.initial_domestic_events):
        assert pulled.returncode == 1 and "may be unseen" in pulled.stdout, pulled.stdout
    else:
        assert pulled.returncode == 0, pulled.stdout + pulled.stderr
