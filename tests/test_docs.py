"""The docs say what the code does: every command has help and a README entry; the README opens
with the two commands, and .ci/run runs the test one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMANDS = sorted(c.name or c.callback.__name__ for c in app.registered_commands)


def test_the_readme_opens_with_the_main_job_then_the_tests():
    first_block = re.search(r"```\n(.*?)```", README, re.S)
    assert first_block is not None
    assert first_block[1].split("\n")[:2] == ["make demo", "make test"]


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test\n" in script
    assert "-eq 5" in script  # pytest's "no tests ran" is a failure


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_and_a_readme_entry(command):
    result = CliRunner().invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert len(result.output.strip().splitlines()) > 3
    assert f"`workbench {command}" in README


def test_the_commands_are_the_design_ones():
    assert {"sandbox", "doctor", "pull", "demo"} <= set(COMMANDS)
