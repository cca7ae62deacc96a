"""Clean errors everywhere (issue #10): typed errors and exit codes instead of tracebacks, read
paths that write nothing, calls that could not be recorded, and partner text made safe to print.

CLI tests run the installed ``workbench`` command. Tests run as root here, and root ignores
permission bits: a "read-only folder" is made real by running the command without the
capabilities that override them (``setpriv``), so it is refused like any user's would be.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import workbench as wb
from workbench.report import open_store
from workbench.sandbox import Sandbox
from workbench.sandbox.state import Item

WORKBENCH = Path(sys.executable).parent / "workbench"
# The capabilities that let root ignore permission bits.
_OVERRIDES = "-dac_override,-dac_read_search"


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None):
    """The installed command, without the power to ignore permissions, and no WORKBENCH_*
    setting of ours."""
    command = [str(WORKBENCH), *args]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only")
        command = ["setpriv", f"--bounding-set={_OVERRIDES}", f"--inh-caps={_OVERRIDES}", *command]
    base = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    return subprocess.run(
        command, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=600
    )


@pytest.fixture
def pulled(sandbox: Sandbox, tmp_path: Path) -> tuple[Path, str]:
    """A database that pulled the sandbox, closed; and a request id it knows."""
    db = tmp_path / "store" / "wb.db"
    with wb.connect(env=sandbox.env, db=db) as w:
        w.pull(progress=False)
    return db, sandbox.pending_request_ids()[0]


@pytest.fixture
def read_only(pulled: tuple[Path, str]) -> Iterator[Path]:
    """The pulled database's folder, read-only for the duration of the test."""
    folder = pulled[0].parent
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


# -- finding 10: bundle --out, read-only databases --------------------------------------------


@pytest.mark.parametrize("where", ["a file", "/dev/null", "a read-only folder"])
def test_bundle_out_that_cannot_be_written_exits_2(
    pulled: tuple[Path, str], tmp_path: Path, where: str
) -> None:
    db, rid = pulled
    if where == "a file":
        out = tmp_path / "taken"
        out.write_text("x")
    elif where == "/dev/null":
        out = Path("/dev/null")
    else:
        out = tmp_path / "locked"
        out.mkdir(mode=0o555)
    done = _run("bundle", rid, "--db", str(db), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "--out" in done.stderr


def test_bundle_reads_a_database_in_a_read_only_folder(
    pulled: tuple[Path, str], read_only: Path, tmp_path: Path
) -> None:
    db, rid = pulled
    before = sorted(os.listdir(read_only))
    done = _run("bundle", rid, "--db", str(db), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_file()
    assert sorted(os.listdir(read_only)) == before  # no -wal, -shm or .lock left behind


def test_reading_a_store_creates_nothing_next_to_it(pulled: tuple[Path, str]) -> None:
    db, rid = pulled
    before = sorted(os.listdir(db.parent))
    with open_store(db) as store:
        assert not store.timeline(rid).empty
    assert sorted(os.listdir(db.parent)) == before


@pytest.mark.slow
def test_report_no_pull_on_a_database_in_a_read_only_folder(
    pulled: tuple[Path, str], read_only: Path, tmp_path: Path
) -> None:
    db, _ = pulled
    done = _run("report", "--no-pull", "--db", str(db), "--output-dir", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


# -- finding 10: calls that could not be recorded ----------------------------------------------


def test_calls_that_cannot_be_recorded_make_the_pull_partial(
    sandbox: Sandbox, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with wb.connect(env=sandbox.env, db=tmp_path / "wb.db") as w:
        w.pull(progress=False)
        sandbox.advance(hours=24)  # new requests: details to fetch, calls to record
        # SQLite refuses every call record (and nothing else) of this connection.
        w.store.db.execute(
            "CREATE TEMP TRIGGER calls_full BEFORE INSERT ON calls "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        with caplog.at_level(logging.WARNING, logger="workbench.http.session"):
            summary = w.pull(progress=False)
    lost = [r for r in caplog.records if r.name == "workbench.http.session"]
    assert lost and all(r.exc_info is None for r in lost)
    assert all("\n" not in r.getMessage() for r in lost)
    assert summary.status == "partial"
    entries = [f for f in summary.failures if "call records could not be written" in f["error"]]
    assert len(entries) == 1
    assert entries[0]["error"].startswith(f"{len(lost)} call records could not be written")


# -- finding 11: partner text on the terminal --------------------------------------------------

HOSTILE_ID = "R-1\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f"


def test_printable_escapes_control_characters() -> None:
    from workbench.http.masking import printable

    assert printable(HOSTILE_ID) == "R-1\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f"
    assert printable("a\nb\tc") == "a\\nb\\tc"
    assert printable("a\nb\tc\x1b", keep_newlines=True) == "a\nb\tc\\x1b"


@pytest.mark.parametrize(
    "control", ["\u202e", "\u200e", "\u200f", "\u202a", "\u202d", "\u2066", "\u2069", "\u061c"]
)
def test_printable_escapes_bidi_controls(control: str) -> None:
    from workbench.http.masking import printable

    # U+202E shows "R-1<RLO>txt.exe" as "R-1exe.txt": the id printed must be the id stored.
    assert (
        printable(f"R-1{control}txt.exe")
        == "R-1" + control.encode("unicode_escape").decode() + "txt.exe"
    )
    assert printable("Zoë, 東京 – ok") == "Zoë, 東京 – ok"


def test_a_short_issued_token_never_rewrites_a_document() -> None:
    from workbench.http.masking import MASK, Redactor

    r = Redactor()
    r.add("2026")  # an identity server may issue anything
    assert r.document('{"RequestDate": "2026-02-20"}') == '{"RequestDate": "2026-02-20"}'
    assert r.body(b'{"RequestDate": "2026-02-20"}', "application/json", document=True) == (
        '{"RequestDate": "2026-02-20"}'
    )
    assert r.headers({"Authorization": "Bearer 2026"}) == {"Authorization": MASK}
    assert MASK in r.body(b'{"access_token": "2026"}', "application/json")
    assert r.text("refused 2026") == f"refused {MASK}"  # what we say: masked whatever its length
    r.add("tok-8f3a9c2e71-long")  # long enough to be no document's text: masked everywhere
    assert r.document("echo tok-8f3a9c2e71-long") == f"echo {MASK}"


def test_a_hostile_id_on_the_list_prints_no_escape(sandbox: Sandbox, tmp_path: Path) -> None:
    state = sandbox.state
    with state.lock:
        state.requests[HOSTILE_ID] = Item(
            HOSTILE_ID, 10_000, state.now - timedelta(hours=1), escaped=False, defect=None
        )
    env = {**sandbox.env, "WORKBENCH_DB": str(tmp_path / "wb.db"), "WORKBENCH_MAX_ATTEMPTS": "1"}
    done = _run("pull", cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pwned" in done.stdout + done.stderr  # the id is shown, escaped
    for stream in (done.stdout, done.stderr):
        assert not any(ch in stream for ch in "\x1b\x07\x9b\x7f"), stream
