"""records(): every table always there, every row with its table's columns, pinned contents."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.pesc.factories import needs_samples, sample, sample_files
from tests.pesc.test_fields import RESPONSE
from workbench import pesc
from workbench.pesc.tables import TABLES


@needs_samples
@pytest.mark.parametrize("path", sample_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_gives_every_table_with_exact_columns(path: Path) -> None:
    doc = pesc.parse(path.read_bytes())
    tables = pesc.records(doc)
    assert list(tables) == list(TABLES)
    for name, rows in tables.items():
        for row in rows:
            assert tuple(row) == TABLES[name], name
    row = pesc.flatten(doc)
    if "course_count" in row:  # the counts in flatten are the rows here
        assert len(tables["courses"]) == row["course_count"]
        assert len(tables["awards"]) == row["award_count"]
        assert len(tables["sessions"]) == row["session_count"]


@needs_samples
def test_college_transcript_tables() -> None:
    tables = pesc.records(sample("canpesc/Ontario_College_CollegeTranscript.xml"))
    courses = tables["courses"]
    assert len(courses) == 58
    first, last = courses[0], courses[-1]
    assert (first["subject"], first["number"], first["title"]) == (
        "CANS",
        "100",
        "Canadian Studies",
    )
    assert (first["credit_units"], first["credit_value"], first["grade"]) == (
        "Semester",
        "0.0",
        "C",
    )
    assert (first["session_index"], first["session_designator"], first["session_name"]) == (
        0,
        "2014-09",
        "2014 Fall Term",
    )
    # the one course listed under the AcademicRecord itself, with its note
    assert (last["subject"], last["number"], last["credit_basis"], last["note"]) == (
        "NUTR",
        "3001",
        "Exemption",
        "EC",
    )
    assert last["session_index"] is None
    assert [course["course_index"] for course in courses] == list(range(58))
    assert courses[3]["title"] == "Reading & Study Skills 350"  # &amp; decoded

    sessions = tables["sessions"]
    assert len(sessions) == 9
    assert sum(session["course_count"] for session in sessions) == 57
    assert Counter(c["session_index"] for c in courses)[0] == sessions[0]["course_count"]
    assert sessions[1]["session_designator"] == "2015-01"
    assert sessions[1]["program_name"] == "Business - Marketing"
    assert sessions[0]["gpa"] == "0.00"

    awards = tables["awards"]
    assert [award["award_title"] for award in awards] == [
        "Diploma",
        "Diploma",
        "Ontario College Certificate",
    ]
    assert awards[2]["program_name"] == "Personal Support Worker"
    assert awards[0]["award_date"] == "2018-04-24"

    (record,) = tables["academic_records"]
    assert (record["session_count"], record["award_count"], record["course_count"]) == (9, 3, 58)
    assert tables["agency_ids"] == [
        {
            "document_id": "123456789123456789",
            "agency_assigned_id": "999999999",
            "agency_code": "State",
            "agency_name": None,
            "country_code": None,
            "state_province_code": "ON",
            "kind": "oen",
        }
    ]
    notes = tables["notes"]
    assert notes[0]["context"] == "Student/AcademicRecord/AcademicSession/AcademicSummary"
    assert notes[-1] == {
        "document_id": "123456789123456789",
        "context": "Student/AcademicRecord/Course",
        "note": "EC",
    }
    assert tables["recipients"] == tables["responses"] == []


@needs_samples
def test_agency_kinds() -> None:
    tables = pesc.records(sample("canpesc/Ontario_University_UniversityTranscript2.xml"))
    assert [(a["agency_assigned_id"], a["kind"]) for a in tables["agency_ids"]] == [
        ("20218453870", "ouac"),
        ("999999999", "oen"),
    ]


@needs_samples
def test_request_tables() -> None:
    tables = pesc.records(sample("pesccds/v1_4_basic_002.xml"))
    (recipient,) = tables["recipients"]
    assert recipient["request_tracking_id"] == "a"
    assert recipient["receiver_name"] == "a"
    assert recipient["hold_type"] == "AfterSpecifiedCourseGrade"
    assert recipient["hold_session_designator"] == "2001-12"
    assert recipient["hold_release_date"] == "1957-08-13"
    assert recipient["delivery_method"] == "Mail"
    assert recipient["electronic_format"] == "PDF"
    assert recipient["transcript_copies"] == 1
    (attendance,) = tables["attendance"]
    assert attendance["enroll_date"] == "1957-08-13"
    assert attendance["current_enrollment"] is True
    assert attendance["award_title"] == "a"
    assert len(tables["notes"]) == 64
    assert tables["courses"] == []


def test_response_tables() -> None:
    tables = pesc.records(RESPONSE)
    (response,) = tables["responses"]
    assert response["response_status"] == "Hold"
    assert response["hold_count"] == 2
    assert response["hold_reason"] == "Financial"
    assert [hold["hold_reason"] for hold in tables["holds"]] == ["Financial", "Other"]
    assert tables["holds"][0]["note"] == "Fees owing"
    assert [a["kind"] for a in tables["agency_ids"]] == [
        "ocas_account",
        "ocas_application",
        "oen",
    ]


def test_a_receiver_person_is_named() -> None:
    text = (
        "<TranscriptRequest><Request><Recipient><RequestTrackingID>T</RequestTrackingID>"
        "<Receiver><Person><Name><FirstName>Ann</FirstName><LastName>Lee</LastName></Name>"
        "</Person></Receiver><DeliveryMethod>Mail</DeliveryMethod>"
        "<DeliveryMethod>Fax</DeliveryMethod></Recipient></Request></TranscriptRequest>"
    )
    (recipient,) = pesc.records(text)["recipients"]
    assert recipient["receiver_name"] == "Ann Lee"
    assert recipient["receiver_id"] is None
    assert recipient["delivery_method"] == "Mail, Fax"
