"""The explorer driven from Python: set widget values, read the panes' HTML and frames."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from tests.explorer.conftest import HOSTILE
from workbench.bundle import request_documents
from workbench.errors import StoreError
from workbench.explorer import Explorer, Source
from workbench.report import documents_section


def _choose(ex: Explorer, kind: str, name: str) -> None:
    ex.source.value = Source(kind, name)


def test_open_refuses_a_missing_database_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "data" / "workbench.db"
    with pytest.raises(StoreError, match=r"No workbench database at .*run `workbench pull` first"):
        Explorer.open(missing)
    assert not missing.exists()
    assert not missing.parent.exists()


def test_it_opens_on_the_open_requests(explorer: Explorer) -> None:
    expected = explorer.store.table("open_requests")
    assert explorer.source.value == Source("view", "open_requests")
    assert f"showing {len(expected)} of {len(expected)} rows" in explorer.status.value
    assert list(explorer.frame["request_id"]) == list(expected["request_id"])
    assert 'class="dataframe workbench-rows"' in explorer.rows.value
    assert all(rid in explorer.rows.value for rid in expected["request_id"])


def test_every_table_view_and_list_is_offered(explorer: Explorer) -> None:
    labels = [label for label, _ in explorer.source.options]
    for name in ("open_requests", "latest_snapshots"):
        assert f"view: {name}" in labels
    for name in ("calls", "runs", "outbox", "transcript_requests", "events", "documents"):
        assert f"table: {name}" in labels
    for name in ("supplier_requests", "consumer_transcripts", "placement_events"):
        assert f"list: {name}" in labels


def test_free_text_matches_any_column_in_any_case(explorer: Explorer) -> None:
    everyone = explorer.store.table("open_requests")
    names = everyone["student_last_name"].dropna()
    # a name outside ASCII when there is one: SQLite's own LIKE would not fold its case
    name = next((n for n in names if not n.isascii()), names.iloc[0])
    explorer.search.value = f"  {name.upper()} "
    expected = everyone[everyone.apply(lambda r: name.casefold() in str(r.values).casefold(), 1)]
    assert len(explorer.frame) == len(expected) > 0
    assert f"showing {len(expected)} of {len(expected)} rows" in explorer.status.value
    assert set(explorer.frame["request_id"]) == set(expected["request_id"])


def test_the_limit_caps_the_rows_sent_to_the_browser(explorer: Explorer) -> None:
    _choose(explorer, "table", "calls")
    explorer.limit.value = 3
    total = len(explorer.store.table("calls"))
    assert total > 3
    assert len(explorer.frame) == 3
    assert f"showing 3 of {total} rows of table: calls" in explorer.status.value
    assert explorer.rows.value.count("<tr") == 3 + 1  # the header row and three rows
    explorer.limit.value = 10**6  # clamped to the maximum, never the whole table by mistake
    assert explorer.limit.value == 1000


def test_long_cells_are_cut(explorer: Explorer) -> None:
    _choose(explorer, "table", "calls")
    explorer.limit.value = 5
    bodies = explorer.frame["response_body"].dropna()
    assert (bodies.str.len() > 200).any()
    assert "…" in explorer.rows.value
    assert max(len(line) for line in explorer.rows.value.splitlines()) < 400


def test_a_list_as_of_each_pull_run(explorer: Explorer) -> None:
    store = explorer.store
    _choose(explorer, "list", "supplier_requests")
    assert not explorer.run.disabled
    runs = store.table("runs", where="kind = 'pull'").sort_values("id")
    first, last = int(runs["id"].iloc[0]), int(runs["id"].iloc[-1])
    explorer.limit.value = 1000
    for run_id in (first, last):
        explorer.run.value = run_id
        snapshot = store.table(
            "snapshots", where="run_id = ? AND list_name = 'supplier_requests'", params=[run_id]
        )["id"].iloc[-1]
        items = store.table("snapshot_items", where="snapshot_id = ?", params=[snapshot])
        assert list(explorer.frame["item_key"]) == list(items["item_key"])
        assert f"#{run_id} ·" in explorer.status.value
    explorer.run.value = first
    at_first = set(explorer.frame["item_key"])
    explorer.run.value = "latest"
    assert set(explorer.frame["item_key"]) != at_first  # the partner moved on in between


def test_tables_ignore_the_run(explorer: Explorer) -> None:
    _choose(explorer, "table", "runs")
    assert explorer.run.disabled
    assert len(explorer.frame) == len(explorer.store.table("runs"))


def test_a_document_pretty_printed_with_its_validation(
    explorer: Explorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WORKBENCH_PESC_SCHEMAS", raising=False)
    shown = list(explorer.frame["request_id"])
    assert list(explorer.document_id.options) == shown  # ids offered from the rows shown
    explorer.document_id.value = shown[0]
    html = explorer.document.value
    # the troubleshooting report's rendering (the same titles, validation and provenance),
    # one click away after the record and the versions of the document received
    expected = documents_section(request_documents(explorer.store, shown[0]), max_chars=500_000)
    assert html.startswith('<section class="workbench-record" data-document="1">')
    assert "<h4>Versions of the document received</h4>" in html
    raw = '<details class="workbench-raw"><summary>Raw XML and validation</summary>'
    assert html.endswith(f"{raw}{expected.data}</details>")
    html = expected.data
    assert "<h4>1. received TranscriptRequest</h4>" in html
    assert "stored detail" in html  # the detail we received
    assert 'data-validation="not validated"' in html
    assert "not validated: set WORKBENCH_PESC_SCHEMAS" in html
    pre = html.split("<pre>", 1)[1]
    assert pre.startswith("&lt;") and "<Trn" not in pre  # escaped
    assert "\n  &lt;" in pre  # indented, one element per line


def test_a_document_validated_against_the_schemas(
    explorer: Explorer, monkeypatch: pytest.MonkeyPatch, xsd_dir: Path
) -> None:
    monkeypatch.setenv("WORKBENCH_PESC_SCHEMAS", str(xsd_dir))
    explorer.show_document(str(explorer.frame["request_id"].iloc[0]))
    assert 'data-validation="valid"' in explorer.document.value
    assert "Validation: valid against TranscriptRequest" in explorer.document.value


def test_what_we_sent_and_the_partners_answer_are_shown_too(explorer: Explorer) -> None:
    sent = explorer.store.table("outbox", where="operation = 'send_transcript'")
    assert not sent.empty
    explorer.show_document(str(sent["request_id"].iloc[0]))
    html = explorer.document.value
    titles = re.findall(r"<h4>(\d+\. [^<]*)</h4>", html)
    assert titles == 2 * [
        "1. received TranscriptRequest",
        "2. sent CollegeTranscript",
        "3. received Acknowledgment",
    ]  # fmt: skip  (each as a record, then its raw XML)
    assert "outbox send_transcript payload" in html  # what we sent
    assert "Seen in: outbox send_transcript answer" in html  # the partner's acknowledgment


def test_an_unknown_id_says_so(explorer: Explorer) -> None:
    explorer.show_document("no-such-id")
    assert "No stored document for &#x27;no-such-id&#x27;" in explorer.document.value
    explorer.document_id.value = ""
    assert "Pick or type an id" in explorer.document.value


def test_compare_two_pull_runs(explorer: Explorer) -> None:
    runs = sorted(v for _, v in explorer.run_a.options)
    assert len(runs) >= 2
    assert (explorer.run_a.value, explorer.run_b.value) == (runs[-2], runs[-1])
    expected = explorer.store.diff(runs[-2], runs[-1])
    assert not expected.empty
    pd.testing.assert_frame_equal(explorer.diff_frame, expected, check_like=True)
    assert f"of {len(expected)} rows of the differences" in explorer.diff.value
    for change in set(expected["change"]):
        assert f"<td>{change}</td>" in explorer.diff.value
    explorer.run_a.value = explorer.run_b.value
    assert "Pick two different runs" in explorer.diff.value


def test_partner_text_is_escaped(explorer: Explorer) -> None:
    _choose(explorer, "table", "events")
    explorer.search.value = "<script>"
    assert len(explorer.frame) == 1
    assert "<script>" not in explorer.rows.value
    assert "&lt;script&gt;alert(" in explorer.rows.value
    assert HOSTILE not in explorer.rows.value


def test_reload_keeps_the_choices_that_still_exist(explorer: Explorer) -> None:
    _choose(explorer, "table", "outbox")
    explorer.search.value = "send_"
    before = explorer.frame.copy()
    explorer.reload()
    assert explorer.source.value == Source("table", "outbox")
    pd.testing.assert_frame_equal(explorer.frame, before, check_dtype=False)


def test_a_store_error_is_shown_not_raised(db: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.db"
    with closing(sqlite3.connect(db)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    with Explorer.open(copy) as ex:
        with closing(sqlite3.connect(copy)) as other:  # dropped while the explorer is open
            other.execute("DROP VIEW latest_snapshots")
        _choose(ex, "view", "latest_snapshots")
        assert "workbench-error" in ex.status.value
        assert "There is no table or view &#x27;latest_snapshots&#x27;" in ex.status.value
        ex.reload()
        assert "view: latest_snapshots" not in [label for label, _ in ex.source.options]
