"""JupyterLab, headless, runs notebooks/explore.ipynb in Chromium and renders the explorer: a
click on a header sorts, a filter typed without accents finds accented names, and a sent
transcript's document opens as a record with its course table."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.browser.conftest import Lab, chromium
from workbench import pesc
from workbench.explorer import fold
from workbench.store import Store

pytestmark = pytest.mark.slow

WAIT_MS = 60_000
RUN_ALL = """async () => {
  const app = window.jupyterapp;
  const panel = app.shell.currentWidget;
  await panel.context.ready;
  await panel.sessionContext.ready;
  await app.commands.execute('notebook:run-all-cells');
}"""
NOTEBOOK_READY = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  return Boolean(panel && panel.sessionContext && panel.context);
}"""


def wait_for_kernel(lab: Lab, notebook: str) -> None:
    """Until the server has an idle kernel in a session for ``notebook`` (the front end starts
    it once the notebook is open; asked to run before that, JupyterLab offers a kernel picker)."""
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline:
        sessions = httpx.get(
            f"{lab.url}/api/sessions", headers={"Authorization": f"token {lab.token}"}, timeout=5
        ).json()
        for session in sessions:
            kernel = session.get("kernel") or {}
            if session.get("path") == notebook and kernel.get("execution_state") == "idle":
                return
        time.sleep(0.25)
    raise AssertionError(f"no idle kernel for {notebook}:\n{lab.log_tail()}")


def run_all_cells(page: Any, lab: Lab, notebook: str) -> None:
    """Run every cell: by command when the app is exposed to the page (the server is started
    with ``expose_app_in_browser``), else through the Run menu. Call once the notebook shows."""
    wait_for_kernel(lab, notebook)
    if page.evaluate("() => Boolean(window.jupyterapp)"):
        page.wait_for_function(NOTEBOOK_READY, timeout=WAIT_MS)
        page.evaluate(RUN_ALL)
        return
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()


def column_texts(table: Any, name: str) -> list[str]:
    """The texts of column ``name`` of the HTML ``table`` shown (headers may carry ▲ or ▼)."""
    heads = [h.split(" ")[0].strip() for h in table.locator("thead th").all_inner_texts()]
    n = heads.index(name) + 1
    return [t.strip() for t in table.locator(f"tbody tr td:nth-child({n})").all_inner_texts()]


def labelled_input(explorer: Any, label: str) -> Any:
    """The text box of the explorer whose description is ``label``."""
    box = explorer.locator(".widget-text", has=explorer.page.get_by_text(label, exact=True))
    return box.locator("input").first


def test_the_explorer_renders_and_reacts_in_jupyterlab(
    chromium_path: str, jupyter_lab: Lab, artifacts: Path, browser_db: Path
) -> None:
    with Store(browser_db) as store:
        people = store.table("open_requests")
        sent = store.table("outbox", where="operation = 'send_transcript'")
        sent_id = str(sent["request_id"].iloc[0])

    courses = len(pesc.to_frames(str(sent["payload"].iloc[0]))["courses"])
    accented = next(n for n in people["student_last_name"].dropna() if fold(n) != n.casefold())
    typed = fold(accented)  # what an analyst without the accent on the keyboard types
    matching = people[people.apply(lambda r: typed in fold(" ".join(map(str, r.values))), 1)]
    shot = artifacts / "explore.png"
    shot.unlink(missing_ok=True)
    requested: list[str] = []
    with chromium(chromium_path) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda request: requested.append(request.url))
        page.goto(f"{jupyter_lab.url}/lab/tree/explore.ipynb?token={jupyter_lab.token}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=WAIT_MS)
        run_all_cells(page, jupyter_lab, "explore.ipynb")

        explorer = page.locator(".jp-OutputArea-output .workbench-explorer")
        try:
            explorer.wait_for(timeout=WAIT_MS)
        except Exception as exc:
            page.screenshot(path=str(shot), full_page=True)
            log = jupyter_lab.log_tail()
            raise AssertionError(f"no explorer rendered; server log:\n{log}") from exc
        rows = explorer.locator("table.workbench-rows").first
        rows.wait_for(timeout=WAIT_MS)
        assert explorer.locator(".widget-dropdown select").count() >= 2
        assert "request_id" in rows.locator("th").all_inner_texts()
        status = explorer.locator(".workbench-status").first
        assert re.search(r"showing \d+ of \d+ rows of view: open_requests", status.inner_text())
        assert rows.locator("tbody tr").count() > 0
        errors = page.locator('.jp-OutputArea-output[data-mime-type*="stderr"]')
        assert errors.count() == 0

        explorer.locator(".widget-dropdown select").first.select_option(label="table: runs")
        explorer.locator("table.workbench-rows th", has_text=re.compile(r"^kind$")).first.wait_for(
            timeout=WAIT_MS
        )
        assert re.search(r"showing 2 of 2 rows of table: runs", status.inner_text())
        assert "request_id" not in rows.locator("th").all_inner_texts()

        # the controls stay in view above a table that scrolls on its own
        controls = explorer.locator(".workbench-controls").first
        assert controls.evaluate("e => getComputedStyle(e).position") == "sticky"

        # a click on a header sorts by it, a second click reverses
        explorer.locator(".widget-dropdown select").first.select_option(label="view: open_requests")
        header = explorer.locator("button.workbench-sort-header", has_text="student_last_name")
        header.first.wait_for(timeout=WAIT_MS)
        header.first.click()
        explorer.get_by_text("student_last_name ▲").wait_for(timeout=WAIT_MS)
        names = column_texts(rows, "student_last_name")
        assert len(names) == min(len(people), 50) and names == sorted(names, key=fold)
        header.first.click()
        explorer.get_by_text("student_last_name ▼").wait_for(timeout=WAIT_MS)
        assert column_texts(rows, "student_last_name") == sorted(names, key=fold, reverse=True)

        # a filter typed without accents finds the accented name
        search = labelled_input(explorer, "filter")
        search.fill(typed)
        search.press("Enter")
        wanted = f"showing {len(matching)} of {len(matching)} rows of view: open_requests"
        explorer.get_by_text(wanted).wait_for(timeout=WAIT_MS)
        assert accented in column_texts(rows, "student_last_name")
        assert set(column_texts(rows, "request_id")) == set(matching["request_id"])

        # a sent transcript's document reads as a record: its course table, raw XML a click away
        explorer.locator(".lm-TabBar-tab", has_text="Document").first.click()
        document_id = labelled_input(explorer, "id")
        document_id.fill(sent_id)
        document_id.press("Enter")
        course_table = explorer.locator('[data-document="2"] [data-table="courses"] table')
        course_table.wait_for(timeout=WAIT_MS)
        assert course_table.locator("tbody tr").count() == courses > 0
        raw = explorer.locator("details.workbench-raw").first
        assert not raw.locator("pre").first.is_visible()
        raw.locator("summary").click()
        assert raw.locator("pre").first.is_visible()
        assert "CollegeTranscript" in raw.inner_text()
        page.screenshot(path=str(shot), full_page=True)

    assert shot.stat().st_size > 20_000
    outside = [
        url
        for url in requested
        if not url.startswith(("data:", "blob:")) and urlparse(url).hostname != "127.0.0.1"
    ]
    assert outside == []
