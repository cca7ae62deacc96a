"""One request's story: the id is required and must be known; documents, diffs, a bundle."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from workbench import pesc, reconcile
from workbench.errors import StoreError
from workbench.report import (
    documents_section,
    request_documents,
    request_section,
    require_known,
    require_request_id,
    timeline_section,
    write_bundle,
)
from workbench.report.troubleshoot import (
    MAX_ERRORS_SHOWN,
    RequestDocument,
    document_html,
    validation_html,
)
from workbench.store import Store

from .conftest import Scenario


@pytest.mark.parametrize("value", ["", "   ", None])
def test_a_request_id_is_required(value: str | None) -> None:
    with pytest.raises(ValueError, match="pass `-p request_id ID`"):
        require_request_id(value)


def test_the_id_is_stripped() -> None:
    assert require_request_id("  abc ") == "abc"


def test_an_unknown_id_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "w.db") as store, pytest.raises(StoreError, match="holds nothing"):
        require_known(store, "nope")


def _document(number: int, text: str, *, kind: str = "sent", message_type: str = "X"):
    return RequestDocument(number, kind, message_type, text, pesc.Validation("not validated"))


def test_each_document_is_shown_escaped() -> None:
    documents = [
        _document(1, "<a>\n<b>1</b>\n</a>\n", message_type="CollegeTranscript"),
        _document(2, "<r/>\n", kind="received", message_type="Acknowledgment"),
        _document(3, "<a>\n<b>2</b>\n</a>\n", message_type="CollegeTranscript"),
    ]
    html = documents_section(documents).data
    assert "3. sent CollegeTranscript" in html and "2. received Acknowledgment" in html
    assert "&lt;b&gt;2&lt;/b&gt;" in html and "<b>2</b>" not in html


def test_without_schemas_it_says_how_to_validate(monkeypatch) -> None:
    monkeypatch.delenv("WORKBENCH_PESC_SCHEMAS", raising=False)
    document = _document(1, "<x/>")
    assert document.validation_text.startswith("not validated: set WORKBENCH_PESC_SCHEMAS")
    assert "not validated: set WORKBENCH_PESC_SCHEMAS" in documents_section([document]).data


def test_the_first_errors_are_listed_and_the_rest_counted() -> None:
    issues = [pesc.ValidationIssue(n, f"bad <thing> {n}") for n in range(1, MAX_ERRORS_SHOWN + 6)]
    document = RequestDocument(
        1, "sent", "CollegeTranscript", "<x/>", pesc.Validation("invalid", issues, "T.xsd")
    )
    html = validation_html(document)
    assert 'data-validation="invalid"' in html
    assert f"Validation: invalid against T.xsd, {MAX_ERRORS_SHOWN + 5} error(s)" in html
    assert html.count("<li>line ") == MAX_ERRORS_SHOWN
    assert "line 1: bad &lt;thing&gt; 1" in html and "bad <thing>" not in html
    assert f"line {MAX_ERRORS_SHOWN + 1}:" not in html
    assert "<li>… and 5 more</li>" in html
    assert validation_html(document) in documents_section([document]).data


def test_a_long_document_is_cut_only_when_asked() -> None:
    document = _document(1, "<a>" + "é" * 500 + "</a>\n")
    whole = document_html(document)
    assert "…" not in whole and "é" * 500 in whole
    cut = document_html(document, max_chars=100)
    shown = cut.split("<pre>", 1)[1].split("</pre>", 1)[0]
    assert shown == "&lt;a&gt;" + "é" * 97
    assert f"… cut at 100 of {len(document.text):,} characters." in cut
    assert "… cut at 100" in documents_section([document], max_chars=100).data


def test_a_transcript_sent_has_its_whole_story(
    report_scenario: Scenario, report_copy: Path, tmp_path: Path, xsd_dir: Path
) -> None:
    rid = report_scenario.acted["transcript_wrong_student"][0]
    with Store(report_copy) as store:
        documents = request_documents(store, rid, schemas_dir=xsd_dir)
        rec = reconcile.reconcile(reconcile.load(store))
        story = request_section(rec, rid).data
        timeline = timeline_section(store, rid).data
        bundle = write_bundle(store, rid, out_dir=tmp_path / "bundles")
    kinds = [(d.kind, d.message_type) for d in documents]
    assert kinds == [
        ("received", "TranscriptRequest"), ("sent", "CollegeTranscript"),
        ("received", "Acknowledgment"),
    ]  # fmt: skip
    assert [d.validation.status for d in documents] == ["valid"] * 3
    assert documents[1].validation.schema == "CollegeTranscript_v1.3.0.xsd"
    assert documents[1].validation_text.startswith(
        "valid against CollegeTranscript v1.3.0 (CollegeTranscript_v1.3.0.xsd)"
    )
    assert "identity_mismatch" in story and "critical" in story
    assert "send_transcript" in timeline
    html = documents_section(documents).data
    assert html.count("<pre>") >= len(documents)
    assert 'data-validation="valid"' in html
    assert bundle.parent == tmp_path / "bundles" and bundle.suffix == ".zip"
    with zipfile.ZipFile(bundle) as z:
        assert "calls.har" in z.namelist()
        assert any(n.startswith("documents/") for n in z.namelist())
