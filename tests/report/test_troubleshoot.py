"""One request's story: the id is required and must be known; documents, their versions and
diffs (in troubleshoot, the explorer and the report), a bundle."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench as wb
from tests.notebook_code import notebook_code
from workbench import pesc, reconcile
from workbench.bundle import Document, make_bundle, request_documents
from workbench.errors import StoreError
from workbench.explorer import Explorer
from workbench.report import (
    documents_section,
    version_diff,
    versions_section,
)
from workbench.report.troubleshoot import (
    MAX_ERRORS_SHOWN,
    document_html,
    validation_html,
)
from workbench.store import Store

from .conftest import Scenario

STORY = notebook_code("troubleshoot")  # what notebooks/troubleshoot.ipynb defines
RECONCILE = notebook_code("reconcile")


@pytest.mark.parametrize("value", ["", "   ", None])
def test_a_request_id_is_required(value: str | None) -> None:
    with pytest.raises(ValueError, match="pass `-p request_id ID`"):
        STORY.require_request_id(value)


def test_the_id_is_stripped() -> None:
    assert STORY.require_request_id("  abc ") == "abc"


def test_an_unknown_id_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "w.db") as store, pytest.raises(StoreError, match="holds nothing"):
        store.known("nope")


def _document(number: int, text: str, *, kind: str = "sent", message_type: str = "X"):
    return Document(number, kind, message_type, text, pesc.Validation("not validated"))


def test_each_document_is_shown_escaped() -> None:
    documents = [
        _document(1, "<a>\n<b>1</b>\n</a>\n", message_type="CollegeTranscript"),
        _document(2, "<r/>\n", kind="received", message_type="Acknowledgment"),
        _document(3, "<a>\n<b>2</b>\n</a>\n", message_type="CollegeTranscript"),
    ]
    html = documents_section(documents).data
    assert "3. sent CollegeTranscript" in html and "2. received Acknowledgment" in html
    assert "&lt;b&gt;2&lt;/b&gt;" in html and "<b>2</b>" not in html


def test_without_schemas_it_says_how_to_validate(
    monkeypatch, report_scenario: Scenario, report_copy: Path
) -> None:
    monkeypatch.delenv("WORKBENCH_PESC_SCHEMAS", raising=False)
    rid = report_scenario.acted["transcript_wrong_student"][0]
    with Store(report_copy) as store:
        documents = request_documents(store, rid)
    assert len(documents) == 3
    said = [str(d.validation) for d in documents]
    assert all(s.startswith("not validated: set WORKBENCH_PESC_SCHEMAS") for s in said), said
    assert "not validated: set WORKBENCH_PESC_SCHEMAS" in documents_section(documents).data


def test_the_first_errors_are_listed_and_the_rest_counted() -> None:
    issues = [pesc.ValidationIssue(n, f"bad <thing> {n}") for n in range(1, MAX_ERRORS_SHOWN + 6)]
    document = Document(
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
        story = STORY.request_section(rec, rid).data
        timeline = STORY.timeline_section(store, rid).data
        bundle = make_bundle(store, rid, out_dir=tmp_path / "bundles")
    kinds = [(d.kind, d.message_type) for d in documents]
    assert kinds == [
        ("received", "TranscriptRequest"), ("sent", "CollegeTranscript"),
        ("received", "Acknowledgment"),
    ]  # fmt: skip
    assert [d.validation.status for d in documents] == ["valid"] * 3
    assert documents[1].validation.schema == "CollegeTranscript_v1.3.0.xsd"
    assert str(documents[1].validation).startswith(
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


@pytest.fixture
def reissued(sandbox_factory, tmp_path: Path) -> Iterator[tuple[Store, str]]:
    """A store holding a transcript in two versions (Original, then Reissue), and its id."""
    sb = sandbox_factory(initial_requests=1, initial_transcripts=1, requests_per_hour=0,
                         transcripts_per_hour=0, closed_elsewhere_per_hour=0, reissue_per_hour=0,
                         resubmission_per_hour=0, cancellation_per_hour=0)  # fmt: skip
    with wb.connect(env=sb.env, db=tmp_path / "v.db") as w:
        w.pull(progress=False)
        sb.settings.reissue_per_hour = 1
        sb.advance(1)
        w.pull(progress=False)
    with Store(tmp_path / "v.db") as store:
        yield store, sb.pending_transcript_ids()[0]


def test_versions_section_tables_every_version_and_diffs_them(reissued) -> None:
    store, transcript_id = reissued
    html = versions_section(store, transcript_id).data
    assert html.count("<tr>") == 3  # a header and two versions
    assert "Reissue" in html and "Version 1 → version 2" in html
    diff = version_diff(store, transcript_id, 1, 2)
    assert diff.startswith(f"--- {transcript_id} version 1\n+++ {transcript_id} version 2\n")
    assert "+    <TransmissionType>Reissue</TransmissionType>" in diff
    assert version_diff(store, transcript_id, 2, 2) == ""
    assert "Version 2 → version 1" in versions_section(store, transcript_id, compare=(2, 1)).data


def test_a_version_not_held_is_refused_naming_those_held(reissued) -> None:
    store, transcript_id = reissued
    with pytest.raises(StoreError, match=r"no version 9 in the store \(versions held: 1, 2\)"):
        version_diff(store, transcript_id, 1, 9)


def test_the_report_lists_the_ids_with_versions(reissued) -> None:
    store, transcript_id = reissued
    rec = reconcile.reconcile(reconcile.load(store))
    overview = RECONCILE.versions_overview(rec)
    assert overview[["id", "side", "current_version", "version_count", "transmission_type"]
                    ].values.tolist() == [[transcript_id, "consumer", 2, 2, "Reissue"]]  # fmt: skip
    assert transcript_id in RECONCILE.versions_overview_section(rec).data


def test_the_report_says_when_every_id_has_one_document(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.db") as store:
        rec = reconcile.reconcile(reconcile.load(store))
    assert "Every id has one document" in RECONCILE.versions_overview_section(rec).data


def test_the_explorer_shows_the_versions_of_a_document(reissued) -> None:
    store, transcript_id = reissued
    explorer = Explorer(store)
    try:
        explorer.show_document(transcript_id)
        html = explorer.document.value
        assert "Versions of the document received" in html
        assert "Version 1 → version 2" in html
        explorer.version_a.value, explorer.version_b.value = 2, 1
        assert "Version 2 → version 1" in explorer.document.value
    finally:
        explorer.close()


def test_the_report_and_troubleshoot_show_our_reissued_transcript_and_the_environment(
    sandbox_factory, tmp_path: Path
) -> None:
    from tests.students import of_student, request_xml
    from workbench.report import headline_section
    from workbench.sandbox import generator

    sb = sandbox_factory(process_code="TEST", initial_requests=2, initial_transcripts=1)
    item = sb.pending_request_ids()[0]
    with wb.connect(env=sb.env, db=tmp_path / "s.db") as w:
        w.pull(progress=False)
        for version, kind in ((1, "Original"), (2, "Reissue")):
            xml = generator.college_transcript_xml(
                5, 1, request_id=sb.state.requests[item].tracking, created=sb.state.now,
                version=version, transmission_type=kind, process_code="TEST",
            )  # fmt: skip
            w.supplier.send_transcript(item, of_student(xml, request_xml(sb, item)))
    with Store(tmp_path / "s.db") as store:
        rec = reconcile.reconcile(reconcile.load(store))
        html = versions_section(store, item).data
    overview = RECONCILE.versions_overview(rec)
    assert overview[["id", "side", "transcript_version"]].values.tolist() == [[item, "supplier", 2]]
    assert rec.headline["environment"] == "TEST"
    assert 'data-environment="TEST"' in headline_section(rec).data
    assert "Sent by us" in html and html.count("Reissue") == 1
