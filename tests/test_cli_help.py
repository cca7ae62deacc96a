"""The command line reads well: Typer's help at ``COLUMNS``, messages that name what to fix,
absolute paths and pasted GUIDs matched."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from tests.conftest import FAST
from workbench.cli import app
from workbench.errors import InvalidParameter
from workbench.http.answers import resolve_id
from workbench.sandbox import Sandbox


def help_texts(width: int = 100) -> dict[str, str]:
    """Each command's help as printed at ``width`` columns, groups before their commands."""
    import typer
    from typer import Context
    from typer.core import TyperGroup

    texts: dict[str, str] = {}

    def walk(command: Any, parent: Context | None, name: str) -> None:
        # Click keeps 2 columns of margin from the terminal's width (COLUMNS).
        ctx = Context(command, info_name=name.split()[-1], parent=parent, terminal_width=width - 2)
        texts[name] = command.get_help(ctx)
        if isinstance(command, TyperGroup):
            for sub in command.list_commands(ctx):
                child = command.get_command(ctx, sub)
                if child is not None and not child.hidden:
                    walk(child, ctx, f"{name} {sub}")

    walk(typer.main.get_command(app), None, "workbench")
    return texts


HELP = help_texts()


def run(*args: str, columns: int = 100, **env: str) -> Result:
    """``workbench ARGS`` with no WORKBENCH_* variable but ``env``, at ``columns`` columns."""
    environ: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    environ.update({"COLUMNS": str(columns), **env})
    return CliRunner().invoke(app, list(args), env=environ)


@pytest.mark.parametrize("command", sorted(HELP))
def test_help_reads_as_plain_click_help(command: str) -> None:
    text = HELP[command]
    usage = text.splitlines()[0]
    assert usage.startswith(f"Usage: {command} ")
    assert "[default: no-" not in text  # a flag's default, cut across lines


def test_values_are_named_and_defaults_shown() -> None:
    assert "Usage: workbench bundle [OPTIONS] {REQUEST_ID}" in HELP["workbench bundle"]
    assert "Usage: workbench send ack [OPTIONS] {REQUEST_ID} [FILE]" in HELP["workbench send ack"]
    pull = HELP["workbench pull"]
    assert re.search(r"--wait SECONDS .*\[default: 60\.0\]", " ".join(pull.split()))
    assert "--db PATH" in pull and "--profile NAME" in pull
    sandbox = " ".join(HELP["workbench sandbox"].split())
    assert "--port PORT Port to listen on (0: any free port). [default: 8765]" in sandbox


def printed_help(*args: str, columns: int) -> str:
    """``workbench ARGS --help`` as the console script prints it (Click's test runner would
    force 80 columns)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("workbench")), *args, "--help"],
        env={**os.environ, "COLUMNS": str(columns)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_help_as_tested_is_what_a_terminal_of_100_columns_shows() -> None:
    printed = printed_help("send", "ack", columns=100)
    assert printed == HELP["workbench send ack"] + "\n"


@pytest.mark.parametrize("columns", [60, 100])
def test_help_wraps_at_columns(columns: int) -> None:
    lines = printed_help("report", columns=columns).splitlines()
    assert max(map(len, lines)) <= columns
    assert max(map(len, lines)) > columns - 10  # the room is used, not a fixed 80


def test_a_missing_profiles_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("doctor", "--profile", "prod", columns=60)
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert f"there is no profiles file (looked for {tmp_path / 'workbench.toml'}" in message
    assert "[profiles.prod]" in message and "--config PATH" in message
    lines = result.stderr.splitlines()
    assert len(lines) > 2  # wrapped at COLUMNS, a path never cut: it may be a line of its own
    assert all(len(line) <= 60 or len(line.split()) == 1 for line in lines), lines


def test_doctor_points_at_what_it_prints(sandbox: Sandbox) -> None:
    env = {**sandbox.env, **FAST, "WORKBENCH_SUPPLIER_CLIENT_SECRET": "not-the-issued-secret"}
    result = run("doctor", columns=80, **env)
    assert result.exit_code == 1
    hint = re.search(r'see "([^"]+)" above', result.stderr)
    assert hint is not None, result.stderr
    assert f"\n{hint.group(1)}:\n- supplier / token: " in result.stdout
    assert max(map(len, result.stdout.splitlines())) <= 80  # the detail column wraps


@pytest.mark.slow
def test_pull_bundle_and_troubleshoot_with_a_pasted_guid(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = sandbox_factory(id_scheme="guid", initial_requests=3, initial_transcripts=2)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "wb.db"
    env = {**sb.env, **FAST, "WORKBENCH_DB": str(db)}
    pulled = run("pull", **env)
    assert pulled.exit_code == 0, pulled.output
    assert db.exists()

    stored = sb.pending_request_ids()[0]
    assert "-" in stored and stored == stored.lower()
    pasted = stored.replace("-", "").upper()
    bundled = run("bundle", pasted, **env)
    assert bundled.exit_code == 0, bundled.output
    zip_path = Path(bundled.stdout.strip())
    assert zip_path.is_absolute() and zip_path.is_file()
    assert zip_path.parent == tmp_path / "bundles"  # beside the store
    assert zip_path.name.startswith(stored)
    with zipfile.ZipFile(zip_path) as archive:
        assert stored in json.loads(archive.read("calls.har"))["log"]["comment"]

    shot = run("troubleshoot", pasted.lower(), "--no-pull", "--output-dir", "reports", **env)
    assert shot.exit_code == 0, shot.output
    bundle_line, ipynb, html = shot.stdout.strip().splitlines()[-3:]
    assert all(Path(p).is_absolute() for p in (bundle_line, ipynb, html))
    assert Path(bundle_line).name.startswith(stored)


def test_a_pasted_guid_matching_two_stored_spellings_is_refused() -> None:
    one, two = "7c1d0b5200004000800000000000000a", "7C1D0B52-0000-4000-8000-00000000000A"
    pasted = "7c1d0b52-0000-4000-8000-00000000000a"
    with pytest.raises(InvalidParameter) as refused:
        resolve_id(pasted, [one, two, "R-1"])
    message = str(refused.value)
    assert one in message and two in message and "paste one of them exactly" in message
    assert refused.value.parameter == "request_id"
    assert resolve_id(two, [one, two]) == two  # pasted exactly: no doubt
    assert resolve_id(pasted.upper(), [one, "R-1"]) == one  # one match: its spelling
    assert resolve_id(pasted, ["R-1"]) == pasted  # none: as typed
