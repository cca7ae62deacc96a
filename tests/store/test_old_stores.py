"""Any older store opens for reading without the partner and without being changed: it is read
from a private copy, migrated there (report, export, browse, troubleshoot, bundle, w.store)."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from contextlib import closing, suppress
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.store.old_stores import OLD_VERSIONS, old_store
from workbench.cli import app
from workbench.errors import StoreError
from workbench.store import SCHEMA_VERSION, Store

# No WORKBENCH_* setting of the machine running the tests, and no partner anywhere.
UNSET: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}


def _free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_an_older_store_is_read_from_a_private_migrated_copy_and_left_as_it_was(
    tmp_path: Path, version: int
) -> None:
    folder = tmp_path / "archive"
    folder.mkdir()
    path = old_store(folder / "old.db", version)
    before = _files(folder)
    with Store(path, read_only=True) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.meta("schema_version") == str(SCHEMA_VERSION)  # the copy's
        copy = store.file
        assert copy != path and copy.name == path.name
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
        assert not store.table("transcript_requests").empty
        store.table("open_requests")  # the views of this workbench
        store.table("answered_still_listed")
    assert not copy.parent.exists()  # removed on close
    assert _files(folder) == before  # not migrated, nothing beside it


def test_an_older_store_whose_copy_cannot_be_made_says_where_and_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = old_store(tmp_path / "old.db", 2)
    before = path.read_bytes()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    with pytest.raises(StoreError, match=r"could not be made in .*no-such-folder.*TMPDIR"):
        Store(path, read_only=True)
    assert path.read_bytes() == before


@pytest.mark.parametrize("version", OLD_VERSIONS)
def test_export_reads_an_older_store_offline(tmp_path: Path, version: int) -> None:
    path = old_store(tmp_path / "old.db", version)
    before = path.read_bytes()
    out = tmp_path / "out" / "open.csv"
    out.parent.mkdir()
    done = CliRunner().invoke(
        app, ["export", "open_requests", "--db", str(path), "--out", str(out)], env=UNSET
    )
    assert done.exit_code == 0, done.output
    assert out.read_text(encoding="utf-8").startswith("request_id,")
    assert path.read_bytes() == before


def test_w_store_reads_another_partners_older_store_as_it_was(tmp_path: Path) -> None:
    path = old_store(tmp_path / "old.db", 3)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO meta VALUES ('partner_exchange_url', 'https://etms.example')")
    before = path.read_bytes()
    with wb.connect("sandbox", db=path, env={}) as w:
        assert w.store.schema_version == SCHEMA_VERSION
        assert not w.store.table("transcript_requests").empty
    assert path.read_bytes() == before


@pytest.mark.slow  # a notebook run
def test_report_no_pull_reads_an_older_store_offline(tmp_path: Path) -> None:
    path = old_store(tmp_path / "old.db", 2)
    before = path.read_bytes()
    done = CliRunner().invoke(
        app,
        ["report", "--no-pull", "--db", str(path), "--output-dir", str(tmp_path / "reports")],
        env=UNSET,
    )
    assert done.exit_code == 0, done.output
    assert list((tmp_path / "reports").glob("*.html"))
    assert path.read_bytes() == before


@pytest.mark.slow  # a notebook run
def test_troubleshoot_reads_an_older_store_offline(tmp_path: Path) -> None:
    path = old_store(tmp_path / "old.db", 1)
    before = path.read_bytes()
    done = CliRunner().invoke(
        app,
        ["troubleshoot", "R-1", "--no-pull", "--db", str(path),
         "--output-dir", str(tmp_path / "reports"),
         "--bundle-dir", str(tmp_path / "bundles")],
        env=UNSET,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert path.read_bytes() == before


@pytest.mark.slow  # a Datasette server
def test_browse_serves_an_older_store_with_this_workbenchs_views(tmp_path: Path) -> None:
    pytest.importorskip("datasette")
    path = old_store(tmp_path / "old.db", 1)
    before = path.read_bytes()
    log = tmp_path / "browse.log"
    port = _free_port()
    command = [sys.executable, "-m", "workbench.cli", "browse", "--db", str(path),
               "--port", str(port), "--no-open"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/old"
    try:
        deadline = time.monotonic() + 60
        key = None
        while time.monotonic() < deadline and process.poll() is None and key is None:
            key = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", log.read_text())
            time.sleep(0.25)
        assert key is not None, log.read_text(errors="replace")
        with httpx.Client(follow_redirects=True, timeout=10) as keyed:
            while time.monotonic() < deadline and process.poll() is None:
                with suppress(httpx.HTTPError):
                    if keyed.get(key.group(0)).status_code == 200:
                        break
                time.sleep(0.25)
            rows = keyed.get(f"{url}/open_requests.json?_shape=array")
            assert rows.status_code == 200, log.read_text(errors="replace")
            assert [r["request_id"] for r in rows.json()] == ["R-1"]
            still = keyed.get(f"{url}/answered_still_listed.json?_shape=array")
            assert still.status_code == 200 and still.json() == []
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    assert path.read_bytes() == before
