"""The three notebooks, executed by the report runner (papermill on this Python's kernel, never
a ``python3`` kernelspec someone installed) against a populated store."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest

from workbench import reconcile
from workbench.errors import NotebookFailed
from workbench.report.runner import run_notebook
from workbench.store import Store

from .conftest import Scenario, figures

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel starts in the current folder: a temporary one, so nothing lands elsewhere."""
    monkeypatch.chdir(tmp_path)


def _run(name: str, out: Path, **parameters) -> nbformat.NotebookNode:
    """Run ``notebooks/<name>.ipynb``, its outputs in the folder ``out``; the executed notebook."""
    run = run_notebook(name, parameters, notebooks_dir=NOTEBOOKS, output_dir=out, timeout_s=300)
    return nbformat.read(run.ipynb_path, as_version=4)


def _html(nb: nbformat.NotebookNode) -> str:
    return "".join(
        o.get("data", {}).get("text/html", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def _text(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_reconcile_shows_the_figures_and_the_freshness(report_copy: Path, tmp_path: Path) -> None:
    as_of = datetime.now(UTC).isoformat()
    nb = _run("reconcile", tmp_path / "out", db=str(report_copy), as_of=as_of)
    with Store(report_copy) as store:
        rec = reconcile.reconcile(reconcile.load(store, as_of=as_of), sla_days=5.0)
    html = _html(nb)
    found = figures(html)
    for key in ("open_requests", "open_over_sla", "transcripts_awaiting_ack", "ack_mismatches",
                "uncertain_sends", "exceptions"):  # fmt: skip
        assert found[key] == str(rec.headline[key]), key
    assert int(found["responses"]) == 4  # act_out's four responses
    charts = re.findall(r'<img class="wb-chart" alt="([^"]*)" src="data:image/png;base64,', html)
    assert len(charts) == 4 and charts[1] == "Ageing (SLA 5 days)"
    assert charts[3].startswith("Trends over the pulls of the last 14 days")
    assert "Critical (" in html and "identity_mismatch" in html
    assert "Requests, by the organisation that sent them" in html
    assert "Comparing run 2 (ok" in html
    assert html.index("data-freshness") < html.index('data-figure="requests"')
    assert [c.source for c in nb.cells if c.cell_type == "markdown"][1:] == [
        "## Headline", "## Lifecycle", "## Exceptions by severity",
        "## Resubmitted, re-issued and cancelled", "## By organisation",
        "## Changes since the previous run",
        "## Trends\n\nThe figures as of each pull run: the store keeps every pull.",
    ]  # fmt: skip


def test_reconcile_can_pull_first(tmp_path: Path) -> None:
    db = tmp_path / "pulled.db"
    nb = _run("reconcile", tmp_path / "out", db=str(db), pull=True, profile="sandbox")
    assert db.is_file()
    assert int(figures(_html(nb))["requests"]) > 0
    assert "Nothing to compare: 1 pull run had finished" in _html(nb)


def test_troubleshoot_tells_the_story_and_writes_a_bundle(
    report_scenario: Scenario, report_copy: Path, tmp_path: Path
) -> None:
    rid = report_scenario.acted["transcript_wrong_student"][0]
    bundles = tmp_path / "bundles"
    nb = _run("troubleshoot", tmp_path / "out", db=str(report_copy), request_id=rid,
              bundle_dir=str(bundles))  # fmt: skip
    written = list(bundles.glob(f"*{rid}-*.zip"))  # sandbox-<id>-...: the sandbox's data
    assert len(written) == 1
    assert f"Support bundle: {written[0]}" in _text(nb)
    html = _html(nb)
    assert "identity_mismatch" in html and "send_transcript" in html
    assert "CollegeTranscript" in html and "<pre>" in html


def test_troubleshoot_without_a_request_id_fails_clearly(report_copy: Path, tmp_path: Path) -> None:
    bundles = tmp_path / "bundles"
    with pytest.raises(NotebookFailed) as caught:
        _run("troubleshoot", tmp_path / "out", db=str(report_copy), bundle_dir=str(bundles))
    assert caught.value.ename == "ValueError"
    assert "pass `-p request_id ID`" in caught.value.evalue
    assert caught.value.cell_index == 3  # title, parameters, its functions, then this
    assert caught.value.cell_line == "rid = require_request_id(request_id)"
    assert not bundles.exists()


def test_events_shows_both_feeds(report_copy: Path, tmp_path: Path) -> None:
    nb = _run("events", tmp_path / "out", db=str(report_copy))
    html = _html(nb)
    assert html.count("data:image/png;base64,") == 2  # per day, breakdowns
    assert "Per pull run" in html and "placement" in html and "domestic" in html
    assert "raw_json" not in html  # events as readable tables (tests/report/test_events*.py)
