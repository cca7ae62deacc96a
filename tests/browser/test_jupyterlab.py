"""JupyterLab, headless, runs notebooks/explore.ipynb in Chromium and renders the explorer."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.browser.conftest import Lab, chromium

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


def test_the_explorer_renders_and_reacts_in_jupyterlab(
    chromium_path: str, jupyter_lab: Lab, artifacts: Path
) -> None:
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
        page.screenshot(path=str(shot), full_page=True)

    assert shot.stat().st_size > 20_000
    outside = [
        url
        for url in requested
        if not url.startswith(("data:", "blob:")) and urlparse(url).hostname != "127.0.0.1"
    ]
    assert outside == []
