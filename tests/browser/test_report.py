"""The reconcile report's HTML, opened from disk in Chromium: the headline figures are the
reconciliation's, the charts render, and nothing is fetched from anywhere."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.browser.conftest import chromium
from workbench import reconcile
from workbench.report import freshness
from workbench.store import Store

pytestmark = pytest.mark.slow

REQUIRED = ("open_requests", "transcripts_awaiting_ack", "ack_mismatches")
FIGURES = """() => Array.from(document.querySelectorAll('[data-figure]')).map(e => ({
  key: e.dataset.figure, value: e.dataset.value,
  shown: (e.querySelector('.wb-value') || e).innerText.trim(),
}))"""
FRESHNESS = """() => {
  const banner = document.querySelector('[data-freshness]');
  return {state: banner.dataset.freshness, age: banner.dataset.ageHours,
    limit: banner.dataset.maxAgeHours, said: banner.innerText.trim(),
    height: banner.getBoundingClientRect().height,
    first: document.querySelector('h2').innerText.trim(),
    last_pull: document.querySelector('[data-last-pull]').dataset.lastPull};
}"""
IMAGES = """() => Array.from(document.images).map(i => ({
  complete: i.complete, width: i.naturalWidth, src: i.src.slice(0, 30),
}))"""
TRENDS = """() => {
  const block = document.querySelector('[data-trend-points]');
  const chart = block.querySelector('img.wb-chart');
  return {points: Number(block.dataset.trendPoints), days: Number(block.dataset.trendDays),
    chart: chart.complete ? chart.naturalWidth : 0,
    rows: Array.from(block.querySelectorAll('tbody tr')).map(
      r => Array.from(r.cells).map(c => c.innerText.trim()))};
}"""


def expected_figures(headline: dict) -> dict[str, int]:
    """The headline's figures under the keys the report marks them with."""
    figures = {k: int(v) for k, v in headline.items() if isinstance(v, int)}
    figures["responses"] = sum(headline["responses_by_status"].values())
    for severity, count in headline["exceptions_by_severity"].items():
        figures[f"exceptions_{severity}"] = int(count)
    return figures


@pytest.fixture
def report_html(browser_db: Path, tmp_path: Path) -> Path:
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
        fresh_shown = page.evaluate(FRESHNESS)
        trends_shown = page.evaluate(TRENDS)
        page.screenshot(path=str(shot), full_page=True)

    with Store(browser_db) as store:
        rec = reconcile.reconcile(
            reconcile.load(store), now=pd.Timestamp(as_of), sla_days=float(sla_days or 5)
        )
        fresh = freshness(store, pd.Timestamp(as_of))
        runs = store.table("runs", where="kind = 'pull' AND status IN ('ok', 'partial')")
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

    # the report opens with how old its data is, measured at the same moment as its figures
    assert fresh_shown["first"] == "Freshness" and fresh_shown["height"] > 0
    assert fresh_shown["last_pull"] == fresh.last_pull_status
    assert fresh.age_hours is not None
    assert float(fresh_shown["age"]) == pytest.approx(fresh.age_hours, abs=0.051)
    stale = fresh.is_stale(float(fresh_shown["limit"]))
    assert fresh_shown["state"] == ("stale" if stale else "fresh")
    assert fresh_shown["said"].startswith("Stale data" if stale else "Fresh data")

    # trends: a point per pull run of the window, newest first, the newest as the headline
    since = pd.Timestamp(as_of) - pd.Timedelta(days=trends_shown["days"])
    in_window = runs[(runs["finished_at"] > since) & (runs["finished_at"] <= pd.Timestamp(as_of))]
    assert trends_shown["points"] == len(trends_shown["rows"]) == len(in_window) >= 2
    assert trends_shown["chart"] > 0
    newest = [int(cell) for cell in trends_shown["rows"][0][2:4]]
    assert newest == [expected["open_requests"], expected["transcripts_awaiting_ack"]]

    assert len(images) >= 3
    assert all(i["complete"] and i["width"] > 0 for i in images), images
    assert [u for u in requested if not u.startswith(("file://", "data:"))] == []
    assert shot.stat().st_size > 20_000
