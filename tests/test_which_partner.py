"""Every command says which profile, which partner and which store it uses, so that a job
started in the wrong folder, or on the sandbox, says so on its first line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import FAST
from workbench.cli import app
from workbench.sandbox import Sandbox


@pytest.fixture
def pulled(sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    db = Path("stores") / "x.db"  # relative: printed absolute
    result = CliRunner().invoke(app, ["pull", "--db", str(db)], env={**sandbox.env, **FAST})
    assert result.exit_code == 0, result.output
    first = result.stderr.splitlines()[0]
    assert first == (
        f"Profile 'env' (environment); partner: {sandbox.gateway_url}, {sandbox.exchange_url}; "
        f"store: {(tmp_path / db).resolve()}"
    )
    assert result.stdout.splitlines()[-1] == f"Stored in {(tmp_path / db).resolve()}"
    return tmp_path / db


def test_reading_commands_say_whose_data_the_store_holds(pulled: Path, sandbox: Sandbox) -> None:
    result = CliRunner().invoke(app, ["export", "runs", "--db", str(pulled)], env={})
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (
        f"Store: {pulled.resolve()} (data of {sandbox.exchange_url}, {sandbox.gateway_url})"
    )


def test_the_sandbox_says_it_is_the_sandbox(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["pull", "--db", "s.db"], env={})
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(
        f"Profile 'sandbox' (embedded sandbox); partner: embedded sandbox; store: "
        f"{(tmp_path / 's.db').resolve()}"
    )
    result = CliRunner().invoke(app, ["export", "runs", "--db", "s.db"], env={})
    assert "(data of the embedded sandbox)" in result.stderr.splitlines()[0]


def test_exports_and_bundles_of_sandbox_data_say_so(tmp_path: Path, monkeypatch) -> None:
    import json
    import zipfile

    import openpyxl

    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(app, ["pull", "--db", "s.db"], env={}).exit_code == 0
    result = CliRunner().invoke(
        app, ["export", "transcript_requests", "--db", "s.db", "--format", "xlsx"], env={}
    )
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip())
    assert path.name.startswith("sandbox-transcript_requests-")
    assert "the embedded sandbox's data, made up" in result.stderr
    title = openpyxl.load_workbook(path).properties.title
    assert title == "Embedded sandbox data (made up, not a partner's): transcript_requests"
    import sqlite3

    with sqlite3.connect("s.db") as conn:
        (rid,) = conn.execute("SELECT request_id FROM transcript_requests LIMIT 1").fetchone()
    conn.close()
    result = CliRunner().invoke(app, ["bundle", rid, "--db", "s.db", "--out", "b"], env={})
    assert result.exit_code == 0, result.output
    zipped = Path(result.stdout.strip())
    assert zipped.name.startswith(f"sandbox-{rid}-")
    about = json.loads(zipfile.ZipFile(zipped).read("calls.har"))["log"]["comment"]
    assert about.startswith("Embedded sandbox data (made up, not a partner's): Recorded calls")


@pytest.mark.slow
def test_a_report_of_sandbox_data_says_so_in_its_title_and_first_line(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(app, ["pull", "--db", "s.db"], env={}).exit_code == 0
    result = CliRunner().invoke(app, ["report", "--db", "s.db", "--no-pull"], env={})
    assert result.exit_code == 0, result.output
    html = Path(result.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
    assert "<title>Embedded sandbox data (made up, not a partner&#x27;s): reconcile" in html or (
        "<title>Embedded sandbox data (made up, not a partner's): reconcile" in html
    )
    assert html.index('data-banner="sandbox"') < html.index("wb-meta")
