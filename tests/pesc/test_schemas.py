"""validate(): the samples' known results, nearest versions, settings, and never raising."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from lxml import etree

from tests.pesc.conftest import Recorder
from tests.pesc.factories import (
    SAMPLES_DIR,
    XSD_DIR,
    Transcript,
    make_request,
    make_transcript,
    needs_samples,
    needs_xsd,
    sample,
)
from workbench import pesc
from workbench.pesc.schemas import MAX_ERRORS


def _expected() -> list[tuple[str, str, str]]:
    path = SAMPLES_DIR / "VALIDATION.tsv"
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as table:
        return [
            (row["file"], row["result"], row["first_errors"] or "")
            for row in csv.DictReader(table, delimiter="\t")
        ]


@needs_samples
@needs_xsd
@pytest.mark.parametrize(("name", "result", "first_errors"), _expected(), ids=lambda v: str(v)[:60])
def test_samples_validate_as_recorded(name: str, result: str, first_errors: str) -> None:
    outcome = pesc.validate(sample(name), schemas_dir=XSD_DIR)
    if result == "VALID":
        assert outcome.status == "valid", [str(e) for e in outcome.errors]
        assert outcome.errors == []
    elif result.startswith("INVALID"):
        count = int(result[len("INVALID(") : -1])
        assert outcome.status == "invalid"
        assert len(outcome.errors) == count
        recorded = [part.strip() for part in first_errors.split(" | ")]
        assert [f"L{e.line}: {e.message}" for e in outcome.errors[: len(recorded)]] == recorded
    elif name.startswith("canpesc/Nova_Scotia_University"):
        # no namespace at all: read as the newest CollegeTranscript, and said so
        assert outcome.status == "invalid"
        assert outcome.schema == "CollegeTranscript_v1.6.0.xsd"
        assert "namespace has no version" in (outcome.note or "")
    else:  # HighSchoolTranscript, AcademicRecordBatch: no schema in the set
        assert outcome.status == "not validated"
        assert outcome.schema is None
        assert "no schema for" in (outcome.note or "")


@needs_xsd
def test_a_version_without_schema_uses_the_nearest_and_says_so() -> None:
    result = pesc.validate(make_transcript(Transcript(version="1.0.0")), schemas_dir=XSD_DIR)
    assert result.status == "valid"
    assert result.schema == "CollegeTranscript_v1.3.0.xsd"
    assert result.note == (
        "validated against CollegeTranscript v1.3.0 (CollegeTranscript_v1.3.0.xsd), "
        "the nearest version to v1.0.0, which has no schema here"
    )


@needs_xsd
def test_errors_carry_lines() -> None:
    text = make_transcript().replace(
        "<DocumentID>CT-1</DocumentID>", "<DocumentID>" + "x" * 36 + "</DocumentID>"
    )
    result = pesc.validate(text, schemas_dir=XSD_DIR)
    assert result.status == "invalid"
    (error,) = result.errors
    assert error.line == 1
    assert "DocumentID" in error.message
    assert str(error).startswith("line 1: ")
    assert not result.valid


@needs_xsd
def test_the_error_list_is_capped() -> None:
    bad = "<Course><Bogus/></Course>" * (MAX_ERRORS + 20)
    text = make_transcript(Transcript(sessions=[], record_courses=0)).replace(
        "</AcademicRecord>", bad + "</AcademicRecord>"
    )
    result = pesc.validate(text, schemas_dir=XSD_DIR)
    assert result.status == "invalid"
    assert len(result.errors) == MAX_ERRORS
    assert "only the first 100" in (result.note or "")
    assert result.error_count > MAX_ERRORS
    # one line that does not contradict itself: the note gives both counts
    assert str(result).endswith(
        f"only the first {MAX_ERRORS} of {result.error_count} errors are listed"
    )
    assert f"{MAX_ERRORS} error(s)" not in str(result)


def test_not_validated_without_a_schema_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_PESC_SCHEMAS", raising=False)
    result = pesc.validate(make_request())
    assert result.status == "not validated"
    assert "WORKBENCH_PESC_SCHEMAS" in (result.note or "")


@needs_xsd
def test_the_folder_comes_from_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PESC_SCHEMAS", str(XSD_DIR))
    assert pesc.validate(make_request()).status == "valid"


def test_a_missing_folder_is_reported(tmp_path: Path) -> None:
    result = pesc.validate(make_request(), schemas_dir=tmp_path / "nowhere")
    assert result.status == "not validated"
    assert "does not exist" in (result.note or "")


@pytest.mark.parametrize("document", ["<TranscriptRequest>", "<html/>", "", b"\xff\xfe\x00"])
def test_bad_documents_are_reported_not_raised(document: str | bytes) -> None:
    result = pesc.validate(document, schemas_dir=XSD_DIR)
    assert result.status == "invalid"
    assert result.errors and result.errors[0].line is None
    assert (result.note or "").startswith("not parsed")


@needs_xsd
def test_a_spec_response_is_read_as_the_nearest_response_schema() -> None:
    # TranscriptResponse in the *request's* v1.0.0 namespace, as the spec has it.
    xml = pesc.build_response(
        make_request().replace("TranscriptRequest:v1.2.0", "TranscriptRequest:v1.0.0")
    )
    result = pesc.validate(xml, schemas_dir=XSD_DIR)
    assert result.status == "valid"
    assert result.schema == "TranscriptResponse_v1.1.0.xsd"


@needs_xsd
def test_schemas_compile_once_and_never_over_the_network(
    recorder: Recorder, no_sockets: list[object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "xsd"  # a folder no earlier test compiled from
    shutil.copytree(XSD_DIR, folder)
    compiled: list[object] = []
    compile_schema = etree.XMLSchema
    monkeypatch.setattr(
        etree, "XMLSchema", lambda *a, **k: compiled.append(a) or compile_schema(*a, **k)
    )
    for text in (make_request(), make_transcript(), pesc.build_acknowledgment(make_transcript())):
        assert pesc.validate(text, schemas_dir=folder).status == "valid"
    assert len(compiled) == 3
    for text in (make_request(), make_transcript()):
        assert pesc.validate(text, schemas_dir=folder).status == "valid"
    assert len(compiled) == 3  # the second time, both came compiled
    assert recorder.connections == []
    assert no_sockets == []


def test_a_schema_importing_from_the_network_is_not_fetched(
    tmp_path: Path, recorder: Recorder, no_sockets: list[object]
) -> None:
    (tmp_path / "CollegeTranscript_v9.0.0.xsd").write_text(
        '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" '
        'targetNamespace="urn:org:pesc:message:CollegeTranscript:v9.0.0">'
        f'<xs:import namespace="urn:x" schemaLocation="{recorder.url}/core.xsd"/>'
        '<xs:element name="CollegeTranscript"/></xs:schema>',
        encoding="utf-8",
    )
    result = pesc.validate(make_transcript(), schemas_dir=tmp_path)
    assert result.status == "not validated"
    assert "does not compile" in (result.note or "")
    assert recorder.connections == []
    assert no_sockets == []


@needs_xsd
def test_a_validation_reads_as_one_line_naming_its_schema_once(tmp_path: Path) -> None:
    valid = pesc.validate(make_transcript(), schemas_dir=XSD_DIR)
    assert str(valid) == ("valid against CollegeTranscript v1.3.0 (CollegeTranscript_v1.3.0.xsd)")
    broken = make_transcript().replace("<DocumentID>CT-1</DocumentID>", "<DocumentID/>")
    invalid = pesc.validate(broken, schemas_dir=XSD_DIR)
    assert str(invalid).startswith("invalid against CollegeTranscript v1.3.0 (")
    assert str(invalid).endswith(f", {len(invalid.errors)} error(s)") and invalid.errors
    older = pesc.validate(make_transcript(Transcript(version="1.0.0")), schemas_dir=XSD_DIR)
    assert str(older).count("CollegeTranscript_v1.3.0.xsd") == 1
    assert "the nearest version to v1.0.0" in str(older)
    missing = pesc.validate(make_transcript(), schemas_dir=tmp_path / "absent")
    assert str(missing) == f"not validated: {missing.note}"
    assert str(pesc.Validation("not validated")) == "not validated"
