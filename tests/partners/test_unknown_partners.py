"""The client against seeded unknown partners (DESIGN §3): doctor, pulls, the three sends and
the reports (:func:`live_a_day`), then the reports as notebooks and the sandbox command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.partners.conftest import DATA, hides_events, live_a_day
from tests.sandbox.helpers import start_cli, stop_cli
from workbench.cli import app
from workbench.sandbox import Sandbox
from workbench.sandbox.settings import unknown_partner

SEEDS = (3, 14, 15, 92, 65, 35, 89, 79)
WORKBENCH = Path(sys.executable).parent / "workbench"


@pytest.fixture(scope="module")
def day_with(tmp_path_factory) -> Iterator[Callable[[int], tuple[Sandbox, Path]]]:
    """``day_with(seed)``: the partner ``unknown_partner(seed)`` and the store of a day lived
    against it (:func:`live_a_day`), lived once for the module's tests (a day that fails is
    lived again by the next test that asks); the partners stop at the module's end."""
    lived: dict[int, tuple[Sandbox, Path]] = {}

    def day(seed: int) -> tuple[Sandbox, Path]:
        if seed not in lived:
            sb = Sandbox(unknown_partner(seed, **DATA)).start()
            db = tmp_path_factory.mktemp(f"partner-{seed}") / "wb.db"
            try:
                live_a_day(sb, db)
            except BaseException:
                sb.stop()
                raise
            lived[seed] = sb, db
        return lived[seed]

    yield day
    for sb, _ in lived.values():
        sb.stop()


@pytest.mark.parametrize("seed", SEEDS)
def test_an_unknown_partner(day_with, seed):
    day_with(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_an_unknown_partners_reports_run_as_notebooks(day_with, tmp_path, seed):
    sb, lived = day_with(seed)
    db, out = str(lived), str(tmp_path / "reports")
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
