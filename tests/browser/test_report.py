"""The reconcile report's HTML, opened from disk in Chromium: the headline figures are the
reconciliation's, the charts render, and nothing is fetched from anywhere."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.browser.conftest import ROOT, chromium
from workbench import reconcile
from workbench.store import Store

pytestmark = pytest.mark.slow

REQUIRED = ("open_requests", "transcripts_awaiting_ack", "ack_mismatches")
FIGURES = """() => Array.from(document.querySelectorAll('[data-figure]')).map(e => ({
  key: e.dataset.figure, value: e.dataset.value,
  shown: (e.querySelector('.wb-value') || e).innerText.trim(),
}))"""
IMAGES = """() => Array.from(document.images).map(i => ({
  complete: i.complete, width: i.naturalWidth, src: i.src.slice(0, 30),
}))"""


def expected_figures(headline: dict) -> dict[str, int]:
    """The headline's figures under the keys the report marks them with."""
    figures = {k: int(v) for k, v in headline.items() if isinstance(v, int)}
    figures["responses"] = sum(headline["responses_by_status"].values())
    for severity, count in headline["exceptions_by_severity"].items():
        figures[f"exceptions_{severity}"] = int(count)
    return figures


@pytest.fixture
def report_html(browser_db: Path, tmp_path: Path) -> Path:
    for needed in ("workbench/report/runner.py", "notebooks/reconcile.ipynb"):
        if not (ROOT / needed).is_file():
            pytest.skip(f"{needed} is not there yet")
    from workbench.report.runner import run_notebook

    run = run_notebook(
        "reconcile", {"db": str(browser_db), "pull": False}, output_dir=tmp_path, timeout_s=120
    )
    return Path(run.html_path)


def test_the_report_shows_the_reconciliation_in_chromium(
    chromium_path: str, report_html: Path, browser_db: Path, artifacts: Path
) -> None:
    shot = artifacts / "report.png"
    shot.unlink(missing_ok=True)
    requested: list[str] = []
    with chromium(chromium_path) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.on("request", lambda request: requested.append(request.url))
        page.goto(report_html.as_uri(), wait_until="load")
        meta = page.locator("[data-as-of]").first
        as_of, sla_days = meta.get_attribute("data-as-of"), meta.get_attribute("data-sla-days")
        shown = page.evaluate(FIGURES)
        images = page.evaluate(IMAGES)
        page.screenshot(path=str(shot), full_page=True)

    with Store(browser_db) as store:
        rec = reconcile.reconcile(
            reconcile.load(store), now=pd.Timestamp(as_of), sla_days=float(sla_days or 5)
        )
    expected = expected_figures(rec.headline)
    by_key = {f["key"]: f for f in shown}
    assert set(REQUIRED) <= set(by_key)
    compared = sorted(set(by_key) & set(expected))
    assert len(compared) >= 10
    for key in compared:
        assert (key, int(by_key[key]["value"])) == (key, expected[key])
        assert str(expected[key]) in by_key[key]["shown"], (key, by_key[key]["shown"])
    buckets = [int(f["value"]) for k, f in by_key.items() if k.startswith("open_age_")]
    assert sum(buckets) == expected["open_requests"]

    assert len(images) >= 3
    assert all(i["complete"] and i["width"] > 0 for i in images), images
    assert [u for u in requested if not u.startswith(("file://", "data:"))] == []
    assert shot.stat().st_size > 20_000
