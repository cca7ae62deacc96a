"""Versions in troubleshoot, the explorer and the report: a table per id, a diff between any two."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench as wb
from workbench import reconcile
from workbench.errors import StoreError
from workbench.explorer import Explorer
from workbench.report import (
    version_diff,
    versions_overview,
    versions_overview_section,
    versions_section,
)
from workbench.store import Store


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
    overview = versions_overview(rec)
    assert overview[["id", "side", "current_version", "version_count", "transmission_type"]
                    ].values.tolist() == [[transcript_id, "consumer", 2, 2, "Reissue"]]  # fmt: skip
    assert transcript_id in versions_overview_section(rec).data


def test_the_report_says_when_every_id_has_one_document(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.db") as store:
        rec = reconcile.reconcile(reconcile.load(store))
    assert "Every id has one document" in versions_overview_section(rec).data


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
    overview = versions_overview(rec)
    assert overview[["id", "side", "transcript_version"]].values.tolist() == [[item, "supplier", 2]]
    assert rec.headline["environment"] == "TEST"
    assert 'data-environment="TEST"' in headline_section(rec).data
    assert "Sent by us" in html and html.count("Reissue") == 1
