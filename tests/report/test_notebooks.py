"""The three notebooks, executed with papermill on a real kernel against a populated store."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from workbench import reconcile
from workbench.report import find_summary, summary_payload
from workbench.store import Store

from .conftest import Scenario, figures

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"

pytestmark = pytest.mark.slow


def _run(name: str, out: Path, **parameters) -> nbformat.NotebookNode:
    pm.execute_notebook(
        str(NOTEBOOKS / f"{name}.ipynb"),
        str(out),
        kernel_name="python3",
        progress_bar=False,
        parameters=parameters,
        cwd=str(out.parent),
    )
    return nbformat.read(out, as_version=4)


def _html(nb: nbformat.NotebookNode) -> str:
    return "".join(
        o.get("data", {}).get("text/html", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def _text(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_reconcile_shows_the_figures_and_publishes_the_summary(
    report_copy: Path, tmp_path: Path
) -> None:
    as_of = datetime.now(UTC).isoformat()
    nb = _run("reconcile", tmp_path / "reconcile.ipynb", db=str(report_copy), as_of=as_of)
    with Store(report_copy) as store:
        rec = reconcile.reconcile(reconcile.load(store, as_of=as_of), sla_days=5.0)
    html = _html(nb)
    found = figures(html)
    for key in ("open_requests", "open_over_sla", "transcripts_awaiting_ack", "ack_mismatches",
                "uncertain_sends", "exceptions"):  # fmt: skip
        assert found[key] == str(rec.headline[key]), key
    assert int(found["responses"]) == 4  # act_out's four responses
    charts = re.findall(r'<img class="wb-chart" alt="([^"]*)" src="data:image/png;base64,', html)
    assert len(charts) == 3 and charts[1] == "Ageing (SLA 5 days)"
    assert "Critical (" in html and "identity_mismatch" in html
    assert "Requests, by the organisation that sent them" in html
    assert "Comparing run 2 (ok" in html
    assert find_summary(nb) == summary_payload(rec)
    assert [c.source for c in nb.cells if c.cell_type == "markdown"][1:] == [
        "## Headline", "## Lifecycle", "## Exceptions by severity", "## By organisation",
        "## Changes since the previous run",
    ]  # fmt: skip


def test_reconcile_can_pull_first(tmp_path: Path) -> None:
    db = tmp_path / "pulled.db"
    nb = _run("reconcile", tmp_path / "out.ipynb", db=str(db), pull=True, profile="sandbox")
    summary = find_summary(nb)
    assert db.is_file()
    assert summary is not None and summary["headline"]["requests"] > 0
    assert "Only one pull run so far" in _html(nb)


def test_troubleshoot_tells_the_story_and_writes_a_bundle(
    report_scenario: Scenario, report_copy: Path, tmp_path: Path
) -> None:
    rid = report_scenario.acted["transcript_wrong_student"][0]
    bundles = tmp_path / "bundles"
    nb = _run("troubleshoot", tmp_path / "t.ipynb", db=str(report_copy), request_id=rid,
              bundle_dir=str(bundles))  # fmt: skip
    written = list(bundles.glob(f"{rid}-*.zip"))
    assert len(written) == 1
    assert f"Support bundle: {written[0]}" in _text(nb)
    html = _html(nb)
    assert "identity_mismatch" in html and "send_transcript" in html
    assert "CollegeTranscript" in html and "<pre>" in html


def test_troubleshoot_without_a_request_id_fails_clearly(report_copy: Path, tmp_path: Path) -> None:
    bundles = tmp_path / "bundles"
    with pytest.raises(pm.PapermillExecutionError) as caught:
        _run("troubleshoot", tmp_path / "t.ipynb", db=str(report_copy), bundle_dir=str(bundles))
    assert caught.value.ename == "ValueError"
    assert "pass `-p request_id ID`" in caught.value.evalue
    assert caught.value.cell_index == 3  # title, parameters, injected parameters, then this
    assert not bundles.exists()


def test_events_shows_both_feeds(report_copy: Path, tmp_path: Path) -> None:
    nb = _run("events", tmp_path / "e.ipynb", db=str(report_copy))
    html = _html(nb)
    assert html.count("data:image/png;base64,") == 1
    assert "Per pull run" in html and "placement" in html and "domestic" in html
    assert "raw_json" in html
