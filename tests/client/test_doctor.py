"""``workbench doctor`` and ``workbench demo``: library checks and the thin CLI over them."""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.report.test_runner import write_notebook
from workbench.cli import app, demo
from workbench.cli.doctor import FAILED, OK, SKIPPED, passed, render, run_checks
from workbench.sandbox import Sandbox


def test_every_interface_passes_on_the_sandbox(sandbox: Sandbox, w: wb.Workbench) -> None:
    checks = run_checks(w)
    assert set(checks["status"]) == {OK}
    assert set(checks["interface"]) == {"international", "domestic", "supplier", "consumer"}
    tokens = checks[checks["check"] == "token"].set_index("interface")["detail"]
    assert tokens["international"].startswith("password grant, scope intl_api.public")
    assert tokens["supplier"].startswith("client_credentials grant, scope transcript_api")
    assert "lifetime 3" in tokens["domestic"]
    assert passed(checks)
    assert "pending placement events" in render(checks)


def test_failures_say_what_to_fix(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(
        sandbox,
        WORKBENCH_CONSUMER_CLIENT_SECRET="wrong-secret",
        WORKBENCH_SUBSCRIPTION_KEY="wrong-key",
        WORKBENCH_DOMESTIC_CLIENT_ID="",
        WORKBENCH_DOMESTIC_CLIENT_SECRET="",
    )
    checks = run_checks(w).set_index(["interface", "check"])
    assert checks.loc[("consumer", "token"), "status"] == FAILED
    assert "invalid_client" in checks.loc[("consumer", "token"), "fix"]
    assert checks.loc[("international", "token"), "status"] == OK
    assert checks.loc[("international", "diagnostics"), "status"] == FAILED
    assert "WORKBENCH_SUBSCRIPTION_KEY" in checks.loc[("international", "diagnostics"), "fix"]
    assert checks.loc[("domestic", "configuration"), "status"] == SKIPPED
    assert checks.loc[("supplier", "pending requests"), "status"] == OK
    assert not passed(run_checks(w))
    assert "What to do:" in render(run_checks(w))


def test_incomplete_role_is_a_failed_check(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_INTL_USERNAME="")
    checks = run_checks(w).set_index(["interface", "check"])
    assert checks.loc[("international", "configuration"), "status"] == FAILED
    assert "WORKBENCH_INTL_USERNAME" in checks.loc[("international", "configuration"), "fix"]


def test_doctor_says_the_environment_declared_and_the_stored_documents(
    sandbox_factory, connect_to, tmp_path: Path
) -> None:
    sb = sandbox_factory(process_code="TEST")
    db = tmp_path / "w.db"
    w = connect_to(sb, db=db)
    about = run_checks(w).attrs["about"]
    assert about[0].startswith("Environment: not declared")
    assert about[0].endswith("the stored documents: no documents stored yet")

    w.pull(progress=False)
    assert (
        wb.pesc.flatten(w.store.document(sb.pending_request_ids()[0]) or "")["process_code"]
        == "TEST"
    )
    checks = run_checks(connect_to(sb, db=db, WORKBENCH_ENVIRONMENT="test"))
    assert checks.attrs["about"] == [
        "Environment: test (every document sent must say so); the stored documents: TEST"
    ]
    assert passed(checks)
    assert render(checks).startswith("Environment: test")


@pytest.fixture
def cli_env(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    for name, value in sandbox.env.items():
        monkeypatch.setenv(name, value)
    return sandbox


def test_cli_doctor_exit_codes(cli_env: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "supplier" in result.output and "ok" in result.output

    monkeypatch.setenv("WORKBENCH_SUPPLIER_CLIENT_SECRET", "wrong-secret-zz9")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    assert "invalid_client" in result.output
    assert "wrong-secret-zz9" not in result.output

    result = runner.invoke(app, ["doctor", "--profile", "nope"])
    assert result.exit_code == 2
    assert "Configuration error" in result.output and "nope" in result.output


def test_cli_help_lists_the_commands() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "doctor" in result.output and "demo" in result.output


@pytest.mark.slow
def test_cli_demo_prints_every_list_and_removes_only_its_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "data"
    (data / "demo.db.d").mkdir(parents=True)
    (data / "demo.db.d" / "notes.txt").write_text("mine")
    (data / "demo.db.keepme").write_text("mine")
    for stale in ("demo.db", "demo.db-wal", "demo.db-shm", "demo.db-journal"):
        (data / stale).write_bytes(b"not a database")  # left open, it would fail the demo
    (data / "demo.db.lock").touch()
    monkeypatch.setattr(demo, "run_demo", partial(demo.run_demo, report=False))  # lists only
    with (data / "demo.db.lock").open("rb") as held:  # as another process may hold it
        result = CliRunner().invoke(app, ["demo"])
        still_linked = os.fstat(held.fileno()).st_nlink == 1
    assert result.exit_code == 0, result.output
    for title in (
        "Diagnostics",
        "Pending placement events",
        "Peek events",
        "Transcript requests without a response",
        "Transcripts without a response",
        "Details of 3 transcript request(s)",
        "Details of 3 transcript(s)",
        "Pull into data/demo.db",
        "pull again (incremental)",
    ):
        assert title in result.output
    assert "pull run 2: ok" in result.output
    assert (data / "demo.db").read_bytes().startswith(b"SQLite format 3")
    assert still_linked
    assert (data / "demo.db.keepme").read_text() == "mine"
    assert (data / "demo.db.d" / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_cli_demo_with_a_failing_report_exits_1_and_prints_the_partial_outputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    notebooks = tmp_path / "notebooks"
    write_notebook(notebooks, "reconcile", "db = None\npull = False", "x = 1\nrec = {}['missing']")
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(notebooks))
    result = CliRunner().invoke(app, ["demo", "--output-dir", "out"])
    assert result.exit_code == 1, result.output
    assert "failed in cell 3 of 3, line 2 (rec = {}['missing']): KeyError" in result.output
    partial = [Path(p) for p in re.findall(r"Partial output: (\S+)", result.output)]
    assert [p.suffix for p in partial] == [".ipynb", ".html"]
    assert all(p.is_absolute() and p.parent == tmp_path / "out" for p in partial)
    assert all(p.is_file() for p in partial)
    assert "Demo FAILED" in result.output and "Traceback" not in result.output


def test_doctor_answers_a_refused_connection_after_one_retry(tmp_path: Path) -> None:
    """A pull is patient with a partner that refuses connections (it may be restarting); a
    doctor answers at once what it found."""
    env = {"WORKBENCH_GATEWAY_URL": "http://127.0.0.1:9", "WORKBENCH_SUBSCRIPTION_KEY": "k",
           "WORKBENCH_DOMESTIC_TOKEN": "t"}  # fmt: skip
    result = CliRunner().invoke(app, ["doctor"], env=env)
    assert result.exit_code == 1
    assert "after 2 attempt(s) (ConnectError" in result.output
    assert "Connection refused" in result.output  # a short secret never garbles a word


def test_an_interface_left_out_by_the_profile_is_skipped_saying_why(
    sandbox: Sandbox, connect_to
) -> None:
    w = connect_to(sandbox, WORKBENCH_INTERFACES="supplier,consumer")
    checks = run_checks(w).set_index("interface")
    for role in ("international", "domestic"):  # credentials set, but not in its interfaces
        assert checks.loc[role, "status"] == SKIPPED
        assert checks.loc[role, "detail"] == "skipped: not in the profile's interfaces"


def test_doctor_reaches_a_feed_whose_peek_removes_events_and_takes_none(
    sandbox_factory, connect_to
) -> None:
    sb = sandbox_factory(peek_removes=True)
    before = len(sb.state.domestic_events)
    checks = run_checks(connect_to(sb)).set_index(["interface", "check"])
    assert checks.loc[("domestic", "peek events"), "status"] == OK
    assert "nothing read" in checks.loc[("domestic", "peek events"), "detail"]
    assert len(sb.state.domestic_events) == before  # no event taken off the feed
    wrong = connect_to(sb, WORKBENCH_SUBSCRIPTION_KEY="not-the-key")
    assert (
        run_checks(wrong)
        .set_index(["interface", "check"])
        .loc[("domestic", "peek events"), "status"]
        == FAILED
    )  # a refusal of the key is no count's
