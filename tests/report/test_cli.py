"""`workbench report` and `workbench troubleshoot`: pull, run, print the paths, exit 0/1/2/3.

Most tests run small notebooks of a temporary folder (``WORKBENCH_NOTEBOOKS``); the end-to-end
ones at the bottom run the project's own notebooks against a sandbox.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.report.test_runner import outputs_text, remote_references, write_notebook
from workbench.cli import app
from workbench.report.job import pull_verdict
from workbench.sandbox import Sandbox
from workbench.store import Store

PROJECT = Path(__file__).resolve().parents[2]
WORKBENCH = Path(sys.executable).parent / "workbench"
ECHO = "print(f'DB={db} PULL={pull} SLA={sla_days!r} ASOF={as_of} PROFILE={profile} HIGH={high!r}')"
BUNDLE_CELL = (
    "from pathlib import Path\n"
    "Path(bundle_dir).mkdir(parents=True, exist_ok=True)\n"
    "(Path(bundle_dir) / f'{request_id}-test.zip').write_bytes(b'PK')"
)


@pytest.fixture
def folder(here: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebooks folder in WORKBENCH_NOTEBOOKS, no other WORKBENCH_* setting, cwd in tmp."""
    nbs = tmp_path / "notebooks"
    write_notebook(
        nbs,
        "reconcile",
        "db = 'data/workbench.db'\nas_of = None\nsla_days = 5.0\npull = True\nprofile = None\n"
        "high = 0",
        ECHO,
    )
    write_notebook(nbs, "plain", "db = 'x.db'", "print(f'PLAIN DB={db}')")
    write_notebook(nbs, "broken", "db = 'x.db'", "x = 1", "value = {}['missing']")
    write_notebook(
        nbs,
        "troubleshoot",
        "db = 'data/workbench.db'\nrequest_id = ''\nbundle_dir = 'data/bundles'",
        "print(f'REQUEST={request_id} DB={db} BUNDLES={bundle_dir}')",
        BUNDLE_CELL,
    )
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(nbs))
    return tmp_path


@pytest.fixture
def db(folder: Path) -> Path:
    """A workbench database that knows one request, RQ-42, dated 12 days ago and unanswered:
    one exception, ``response_overdue``, high with an SLA of 5 days (past twice it), medium
    with 7, none with 20."""
    path = folder / "data" / "existing.db"
    path.parent.mkdir()
    dated = f"{datetime.now(UTC) - timedelta(days=12):%Y-%m-%dT%H:%M:%SZ}"
    with Store(path) as store:
        run = store.begin_run()
        store.record_snapshot(run, "supplier_requests", [{"RequestID": "RQ-42",
                                                          "RequestDate": dated}])  # fmt: skip
        store.finish_run(run, status="ok")
    return path


@pytest.fixture
def partner_down(sandbox_factory: Callable[..., Sandbox], monkeypatch) -> None:
    """The environment of a sandbox that has stopped: every call is refused, at once."""
    stopped = sandbox_factory()
    stopped.stop()
    for name, value in stopped.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WORKBENCH_MAX_ATTEMPTS", "1")


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def flat(output: str) -> str:
    """Typer's boxed usage errors as one line of text."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


def printed_paths(stdout: str) -> tuple[Path, Path]:
    """The last two lines of a report's stdout: the .ipynb and the .html, absolute."""
    ipynb, html = (Path(line) for line in stdout.strip().splitlines()[-2:])
    assert ipynb.is_absolute() and ipynb.suffix == ".ipynb" and html == ipynb.with_suffix(".html")
    assert ipynb.is_file() and html.is_file()
    return ipynb, html


@pytest.mark.slow
def test_report_runs_the_notebook_on_the_database_and_prints_both_paths(folder, db):
    result = invoke(
        "report", "--no-pull", "--db", str(db), "--output-dir", "out", "--sla-days", "7",
        "--as-of", "2026-03-02T09:00Z", "-p", "high=3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ipynb, html = printed_paths(result.stdout)
    assert ipynb.parent == (folder / "out").resolve() and ipynb.name.startswith("reconcile-")
    assert (
        f"DB={db} PULL=False SLA=7.0 ASOF=2026-03-02T09:00Z PROFILE=None HIGH=3\n"
        in outputs_text(ipynb)
    )
    assert remote_references(html.read_text(encoding="utf-8")) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sla", "severity", "code", "message"),
    [
        ("5", "high", 3, "1 exception(s) at or above high (critical: 0, high: 1)."),
        ("5", "critical", 0, None),
        ("7", "high", 0, None),
        ("7", "medium", 3, "1 exception(s) at or above medium (critical: 0, high: 0, medium: 1)."),
        ("20", "low", 0, None),
    ],
)
def test_fail_on_exceptions_counts_the_stores_at_the_reports_sla(
    folder, db, sla, severity, code, message
):
    """The verdict reconciles the store with the report's own SLA, whatever the notebook
    shows (this one shows nothing of it)."""
    result = invoke(
        "report", "--no-pull", "--db", str(db), "--output-dir", "out", "--sla-days", sla,
        "--fail-on-exceptions", "--severity", severity,
    )  # fmt: skip
    assert result.exit_code == code, result.output
    printed_paths(result.stdout)  # the report is written either way
    if message:
        assert message in result.stderr
    else:
        assert "exception(s)" not in result.stderr


@pytest.mark.slow
def test_a_failing_notebook_exits_1_naming_the_cell_and_keeping_the_outputs(folder, db):
    result = invoke("report", "--notebook", "broken", "--no-pull", "--db", str(db))
    assert result.exit_code == 1
    assert (
        "Notebook broken failed in cell 4 of 4, line 1 (value = {}['missing']): KeyError: "
        "'missing'" in result.stderr
    )
    partial = [Path(p) for p in re.findall(r"Partial output: (\S+)", result.stderr)]
    assert [p.suffix for p in partial] == [".ipynb", ".html"]
    reports = (folder / "data" / "reports").resolve()
    assert all(p.is_absolute() and p.is_file() and p.parent == reports for p in partial)
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_report_pulls_first_into_the_database(folder, sandbox: Sandbox, monkeypatch):
    for name, value in sandbox.env.items():
        monkeypatch.setenv(name, value)
    db = folder / "pulled.db"
    result = invoke("report", "--notebook", "plain", "--db", str(db), "--output-dir", "out")
    assert result.exit_code == 0, result.output
    assert re.search(r"pull run \d+: ok", result.stdout)
    ipynb, _ = printed_paths(result.stdout)
    assert f"PLAIN DB={db}\n" in outputs_text(ipynb)
    runs = sqlite3.connect(db).execute("select status from runs").fetchall()
    assert runs == [("ok",)]


@pytest.mark.slow
def test_troubleshoot_passes_the_request_id_and_prints_the_bundle(folder, db):
    result = invoke(
        "troubleshoot", "RQ-42", "--no-pull", "--db", str(db), "--output-dir", "o",
        "--bundle-dir", "zips",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ipynb, _ = printed_paths(result.stdout)
    assert ipynb.name.startswith("troubleshoot-")
    bundles = (folder / "zips").resolve()
    assert f"REQUEST=RQ-42 DB={db} BUNDLES={bundles}\n" in outputs_text(ipynb)
    assert result.stdout.strip().splitlines()[-3] == str(bundles / "RQ-42-test.zip")


@pytest.mark.slow
def test_a_partner_outage_writes_the_report_and_exits_1(folder, db, partner_down):
    # every list fails: the pull failed, the report runs on what was stored before, and neither
    # the exceptions it holds (exit 3) nor --allow-partial hide the outage (exit 1)
    soon = f"{datetime.now(UTC) + timedelta(minutes=2):%Y-%m-%dT%H:%MZ}"  # within tolerance
    args = ["report", "--db", str(db), "--output-dir", "out", "--as-of", soon]
    result = invoke(*args, "--fail-on-exceptions")
    assert result.exit_code == 1, result.output
    assert re.search(r"pull run \d+: failed", result.stdout)
    ipynb, _ = printed_paths(result.stdout)  # written all the same
    assert f"ASOF={soon} " in outputs_text(ipynb)
    assert "1 exception(s) at or above high" in result.stderr  # RQ-42, stored before
    assert "Exit 1: the pull failed: no list or event feed could be read" in result.stderr
    assert "(--allow-partial does not accept it)" in result.stderr

    refused = invoke(*args, "--fail-on-exceptions", "--allow-partial")
    assert refused.exit_code == 1, refused.output
    assert invoke(*args, "--allow-partial").exit_code == 1


# Usage and configuration errors: exit 2 with a message, before anything runs or is pulled.


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["report", "-p", "colour=red"], "Unknown parameter(s) for notebook 'reconcile': colour"),
        (["report", "-p", "high=many"], "high='many' must be of type int"),
        (["report", "--notebook", "nope"], "no notebook 'nope' in"),
        (["report", "--no-pull", "--db", "missing.db"], "There is no database at missing.db"),
        (["troubleshoot", "X", "--no-pull", "--db", "gone.db"], "no database at gone.db"),
        (["report", "-p", "novalue"], "'novalue' is not key=value"),
        (["report", "--severity", "severe"], "use one of low, medium, high, critical"),
        (["report", "--as-of", "yesterday"], "use an ISO 8601 time"),
        (["report", "--as-of", "2099-01-01"], "2099-01-01 is in the future"),
        (["report", "-p", "as_of=2099-01-01T00:00Z"], "2099-01-01T00:00Z is in the future"),
        (["report", "--sla-days", "nan"], "nan is not a number of days"),
        (["report", "--sla-days", "inf"], "inf is not a number of days"),
        (["report", "--sla-days=-3"], "-3.0 is not a number of days"),
        (["report", "-p", "sla_days=-inf"], "-inf is not a number of days"),
        (["report", "--notebook", "plain", "--sla-days", "3"], "'plain' accepts: db, not sla_days"),
        (["report", "--notebook", "plain", "--as-of", "2026-01-01"], "accepts: db, not as_of"),
        (["report", "--output-dir", "afile"], "afile is a file, not a folder"),
        (["report", "--output-dir", "afile/reports"], "afile is a file, not a folder"),
        (["troubleshoot", "X", "--output-dir", "afile"], "afile is a file, not a folder"),
        (["troubleshoot", "X", "--bundle-dir", "afile/b"], "afile is a file, not a folder"),
        (["troubleshoot", ""], "A RequestID must not be empty"),
        (["troubleshoot", "a/b"], "contains a slash"),
        (["troubleshoot", " RQ-42"], "leading or trailing white space"),
        (["troubleshoot", "RQ\n42"], "contains control characters"),
        (["demo", "--output-dir", "afile"], "afile is a file, not a folder"),
        (["report", "--timeout", "0"], "--timeout"),
        (["report", "--profile", "nosuch"], "Profile 'nosuch' is not defined"),
    ],
)
def test_usage_and_configuration_errors_exit_2(folder, args, message):
    (folder / "afile").write_text("not a folder")
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)
    assert "Traceback" not in result.output
    assert not (folder / "data").exists()  # neither pulled (no database) nor reported


def test_troubleshoot_refuses_an_id_the_database_does_not_know(folder, db):
    # like `workbench bundle`: exit 1 with the store's message, before any kernel starts
    result = invoke("troubleshoot", "RQ-404", "--no-pull", "--db", str(db))
    assert result.exit_code == 1, result.output
    assert f"The store at {db} holds nothing about 'RQ-404'" in result.stderr
    assert not (folder / "data" / "reports").exists()


def test_the_help_states_the_order_of_the_exit_codes():
    text = flat(invoke("report", "--help").output)
    assert "Exit codes, the first that applies: 2 on a usage" in text
    assert "--allow-partial" in text


def test_troubleshoot_needs_its_notebook(folder, monkeypatch, db):
    (folder / "notebooks" / "troubleshoot.ipynb").unlink()
    result = invoke("troubleshoot", "X", "--no-pull", "--db", str(db))
    assert result.exit_code == 2
    assert "no notebook 'troubleshoot'" in result.stderr and "available: broken, plain" in (
        result.stderr
    )


# End to end: the project's notebooks, the installed command, a sandbox.


def _workbench(
    sandbox: Sandbox, cwd: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """The installed ``workbench`` command, pointed at ``sandbox`` and nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    return subprocess.run(
        [str(WORKBENCH), *args],
        cwd=cwd,
        env={**env, **sandbox.env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_workbench_report_end_to_end_on_a_sandbox(tmp_path, sandbox: Sandbox):
    if not (PROJECT / "notebooks" / "reconcile.ipynb").is_file():
        pytest.fail("notebooks/reconcile.ipynb is missing")
    db = tmp_path / "wb.db"
    done = _workbench(sandbox, tmp_path, "report", "--db", str(db), "--output-dir", "reports")
    assert done.returncode == 0, done.stdout + done.stderr
    ipynb, html = (tmp_path / line for line in done.stdout.strip().splitlines()[-2:])
    assert ipynb.is_file() and ipynb.suffix == ".ipynb"
    text = html.read_text(encoding="utf-8")
    assert "Headline" in text
    assert remote_references(text) == []
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    assert [p for p in written if p.parts[0] != "reports" and not p.name.startswith("wb.db")] == []


@pytest.mark.slow
def test_workbench_troubleshoot_end_to_end_on_a_sandbox(tmp_path, sandbox: Sandbox):
    if not (PROJECT / "notebooks" / "troubleshoot.ipynb").is_file():
        pytest.fail("notebooks/troubleshoot.ipynb is missing")
    db = tmp_path / "wb.db"
    pulled = _workbench(sandbox, tmp_path, "pull", "--db", str(db), timeout=300)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    (request_id,) = (
        sqlite3.connect(db)
        .execute("select request_id from transcript_requests order by request_id limit 1")
        .fetchone()
    )
    done = _workbench(sandbox, tmp_path, "troubleshoot", request_id, "--no-pull", "--db", str(db))
    assert done.returncode == 0, done.stdout + done.stderr
    zip_path, ipynb, html = (Path(line) for line in done.stdout.strip().splitlines()[-3:])
    assert ipynb.parent == tmp_path / "reports" and html.is_file()  # beside the store
    assert request_id in html.read_text(encoding="utf-8")
    assert zip_path.parent == tmp_path / "bundles" and zip_path.suffix == ".zip"
    assert list((tmp_path / "bundles").glob("*.zip")) == [zip_path]


@pytest.mark.parametrize(
    ("status", "allow_partial", "code", "says"),
    [
        ("ok", False, 0, ""),
        (None, False, 0, ""),
        ("partial", True, 0, ""),
        ("partial", False, 1, "--allow-partial accepts a partial pull"),
        ("failed", True, 1, "no list or event feed could be read"),
        ("stopped", True, 1, "the pull stopped on the error above"),
    ],
)
def test_the_pull_verdict_names_what_happened(status, allow_partial, code, says):
    verdict, reason = pull_verdict(status, allow_partial=allow_partial)
    assert verdict == code
    err = reason or ""
    assert (says in err) if says else err == ""
    if status == "stopped":  # a pull that raised (a lock, a full disk) is not the partner's fault
        assert "partner" not in err
