"""``workbench browse`` in headless Chromium: Datasette serves a store pulled from the sandbox,
read-only on 127.0.0.1, for whoever holds the key it printed, with the store's titles,
descriptions and canned queries; the overdue requests it shows are those the store holds."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pandas as pd
import pytest

from tests.browser.conftest import chromium, free_port
from workbench import reconcile
from workbench.cli.browse import TRUNCATE_CELLS
from workbench.store import Store

pytestmark = pytest.mark.slow

START_S = 60.0
WAIT_MS = 30_000
SLA_DAYS = 5  # the overdue query's default


@dataclass(frozen=True)
class Served:
    url: str
    key: str  # the printed URL, which sets the key as a cookie
    db: Path
    log: Path


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the command shuts Datasette down and removes its metadata file), then kill."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        with suppress(ProcessLookupError):
            os.kill(process.pid, sig)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)


def _up(url: str, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline and process.poll() is None:
        with suppress(httpx.HTTPError):
            if httpx.get(f"{url}/-/versions.json", timeout=2).status_code == 401:  # keyed
                return True
        time.sleep(0.25)
    return False


def _printed_url(log: Path) -> str:
    found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=[\w-]+)", log.read_text())
    assert found, log.read_text()
    return found.group(1)


@pytest.fixture(scope="module")  # its tests only read
def served(browser_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``workbench browse --no-open`` on a copy of the sandbox store, on a free loopback port
    (another port when one was taken meanwhile)."""
    tmp_path = tmp_path_factory.mktemp("served")
    db, log = tmp_path / "workbench.db", tmp_path / "browse.log"
    with closing(sqlite3.connect(browser_db)) as source, closing(sqlite3.connect(db)) as target:
        source.backup(target)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    for _attempt in range(3):
        port = free_port()
        command = [sys.executable, "-m", "workbench.cli", "browse", "--db", str(db),
                   "--port", str(port), "--no-open"]  # fmt: skip
        with log.open("ab") as out:
            process = subprocess.Popen(
                command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            if _up(url, process):
                yield Served(url, _printed_url(log), db, log)
                return
        finally:
            _stop(process)
        if "address already in use" not in log.read_text(errors="replace"):
            break
    pytest.fail(f"workbench browse did not answer:\n{log.read_text(errors='replace')[-3000:]}")


def overdue_ids(db: Path) -> list[str]:
    """Open requests (as reconcile tells them) older than the SLA, computed with pandas."""
    with Store(db, read_only=True) as store:
        requests = reconcile.reconcile(reconcile.load(store)).requests
    open_ = requests["state"] == reconcile.OPEN_STATES["supplier"]
    now = pd.Timestamp.now(tz="UTC")
    age = (now - requests["request_date"]).dt.total_seconds() / 86400
    overdue = requests[open_ & (age.round(1) > SLA_DAYS)]
    return overdue.sort_values("request_date")["request_id"].astype(str).tolist()


def test_browse_serves_the_store_with_its_canned_queries(
    chromium_path: str, served: Served, artifacts: Path
) -> None:
    expected = overdue_ids(served.db)
    assert expected, "the sandbox store should hold overdue requests"
    shot = artifacts / "browse.png"
    shot.unlink(missing_ok=True)
    requested: list[str] = []
    with chromium(chromium_path) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda request: requested.append(request.url))

        page.goto(served.key)  # the key becomes a cookie
        page.goto(f"{served.url}/workbench")
        page.wait_for_selector("h1", timeout=WAIT_MS)
        assert page.get_by_role("link", name="Overdue requests").count() == 1
        page.get_by_role("link", name="Overdue requests").click()

        page.wait_for_selector("table.rows-and-columns tbody tr", timeout=WAIT_MS)
        assert page.locator("h1").inner_text().strip() == "Overdue requests"
        assert "longer than the SLA" in page.locator(".metadata-description").inner_text()
        shown = page.locator("table.rows-and-columns tbody tr td.col-request_id")
        assert shown.all_inner_texts() == expected
        assert f"returning {len(expected)} row" in page.content()
        page.screenshot(path=str(shot), full_page=True)

        # one request's story, the id pasted in upper case
        page.goto(f"{served.url}/workbench/request_story?request_id={expected[0].upper()}")
        page.wait_for_selector("table.rows-and-columns tbody tr", timeout=WAIT_MS)
        kinds = page.locator("table.rows-and-columns tbody td.col-kind").all_inner_texts()
        assert {"listed", "call", "document"} <= set(kinds)

        # a table's columns are described; its CSV links (refused) are not shown
        page.goto(f"{served.url}/workbench/calls")
        page.wait_for_selector("table.rows-and-columns", timeout=WAIT_MS)
        assert "How long it took." in page.content()
        csv_links = page.locator('a[href*=".csv"]')
        assert csv_links.count() > 0 and not any(
            csv_links.nth(i).is_visible() for i in range(csv_links.count())
        )

        # a document's XML is cut short in its table (a row is a line), whole on the row's page
        page.goto(f"{served.url}/workbench/documents")
        page.wait_for_selector("table.rows-and-columns tbody tr", timeout=WAIT_MS)
        cell = page.locator("table.rows-and-columns tbody td.col-pescxml").first.inner_text()
        assert len(cell) <= TRUNCATE_CELLS + 1 and cell.endswith("\u2026")
        page.goto(f"{served.url}/workbench/documents/1")
        page.wait_for_selector("table.rows-and-columns", timeout=WAIT_MS)
        whole = page.locator("td.col-pescxml").first.inner_text()
        assert len(whole) > 10 * TRUNCATE_CELLS and "\u2026" not in whole

    assert shot.stat().st_size > 10_000
    assert {urlparse(url).hostname for url in requested} == {"127.0.0.1"}
    # read-only: Datasette refuses a write, and the file is unchanged
    with httpx.Client(base_url=served.url, follow_redirects=True) as keyed:
        keyed.get(served.key)
        refused = keyed.get("/workbench.json", params={"sql": "DELETE FROM meta"})
    assert refused.status_code == 400
    with closing(sqlite3.connect(served.db)) as conn:
        assert conn.execute("SELECT count(*) FROM meta").fetchone()[0] > 0


def test_browse_serves_only_whoever_holds_its_key(served: Served) -> None:
    """Another user of the machine, a page rebinding its own name to 127.0.0.1, and a
    spreadsheet download are all refused; the key's holder reads."""
    story = "/workbench/transcript_requests.json"
    assert httpx.get(served.url + story).status_code == 401
    assert httpx.get(served.url + story, params={"sql": "select * from meta"}).status_code == 401
    with httpx.Client(base_url=served.url, follow_redirects=True) as keyed:
        assert keyed.get(served.key).status_code == 200
        assert keyed.get(story).status_code == 200
        rebound = keyed.get(story, headers={"Host": "rebind.attacker.example"})
        assert rebound.status_code == 421 and b"student" not in rebound.content
        for csv in (
            "/workbench/transcript_requests.csv",
            "/workbench/transcript_requests?_format=csv",
        ):
            refused = keyed.get(csv)
            assert refused.status_code == 403 and "workbench export" in refused.text
    for wrong_key in ("not-the-key", "%C3%A9", "%FF"):
        wrong = httpx.get(served.url + f"/?token={wrong_key}", follow_redirects=True)
        assert wrong.status_code == 401, wrong_key


def test_browse_on_a_taken_port_says_so_and_exits_2(served: Served, tmp_path: Path) -> None:
    port = urlparse(served.url).port
    result = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "browse", "--db", str(served.db), "--port",
         str(port), "--no-open"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"Port {port} on 127.0.0.1 is taken" in result.stderr
    assert "Traceback" not in result.stderr and "http://" not in result.stdout


def test_browse_opens_the_store_through_a_private_page(browser_db: Path, tmp_path: Path) -> None:
    """``--open`` hands the browser a private page that forwards to the keyed URL: the key stays
    out of the browser's command line, which every local user can read (``ps``)."""
    seen, fake, log = tmp_path / "browser.txt", tmp_path / "browser.py", tmp_path / "browse.log"
    fake.write_text(
        "import stat, sys\nfrom pathlib import Path\n"
        "page = Path(sys.argv[1].removeprefix('file://'))\n"
        "mode = oct(stat.S_IMODE(page.stat().st_mode))\n"
        f"Path({str(seen)!r}).write_text(sys.argv[1] + '\\n' + mode + '\\n' + page.read_text())\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    env["BROWSER"] = f"{sys.executable} {fake} %s"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "workbench.cli", "browse", "--db", str(browser_db), "--port",
             "0", "--open"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_S
        while not seen.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.25)
        assert seen.exists(), log.read_text(errors="replace")
    finally:
        _stop(process)
    argument, mode, page = seen.read_text().split("\n", 2)
    key = _printed_url(log).split("token=", 1)[1]
    assert argument.startswith("file://") and key not in argument
    assert mode == "0o600"
    assert f"?token={key}" in page
