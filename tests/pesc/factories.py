"""Test inputs: where the shared PESC files live, and generators of valid requests and transcripts.

The generators write documents the way the schemas want them (element order, qualification),
valid in every family we have schemas for (AcademicRecord 1.6.0, 1.7.0 and 1.9.0), so that what
a builder makes from them can be held to validating too. Hypothesis strategies draw their
field values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import pytest
from hypothesis import strategies as st
from lxml import etree

from workbench.pesc.builders import namespace_for

PESC_DIR = (Path(__file__).resolve().parents[2] / ".." / "shared" / "pesc").resolve()
SAMPLES_DIR = PESC_DIR / "samples"
XSD_DIR = PESC_DIR / "xsd"

needs_samples = pytest.mark.skipif(
    not SAMPLES_DIR.is_dir(), reason=f"PESC samples not found at {SAMPLES_DIR} (shared/pesc absent)"
)
needs_xsd = pytest.mark.skipif(
    not XSD_DIR.is_dir(), reason=f"PESC schemas not found at {XSD_DIR} (shared/pesc absent)"
)


def sample_files() -> list[Path]:
    return sorted(SAMPLES_DIR.glob("*/*.xml")) if SAMPLES_DIR.is_dir() else []


def sample(name: str) -> bytes:
    """The bytes of a sample, by its path under samples/ (``canpesc/Ontario_...xml``)."""
    return (SAMPLES_DIR / name).read_bytes()


@dataclass
class Student:
    first_name: str = "Test"
    last_name: str = "Learner"
    middle_name: str | None = None
    school_assigned_id: str | None = "1111111111"
    birth_date: str | None = "2001-02-03"
    gender: str | None = "Female"
    oen: str | None = "123456789"
    ocas_account: str | None = None
    ocas_application: str | None = None


@dataclass
class Request:
    version: str = "1.2.0"
    document_id: str = "DOC-1"
    tracking_id: str = "C20150729002337"
    created: str = "2024-05-01T10:00:00-04:00"
    process_code: str = "TEST"
    source_id: tuple[str, str] = ("MutuallyDefined", "OCAS")
    source_name: str = "OCAS Application Services Inc."
    destination_id: tuple[str, str] = ("CSIS", "555555")
    destination_name: str = "Demo College"
    hold_type: str = "Now"
    student: Student = field(default_factory=Student)


@dataclass
class Transcript:
    version: str = "1.3.0"
    document_id: str = "CT-1"
    tracking_id: str | None = "C20150729002337"
    created: str = "2024-05-02T10:00:00Z"
    process_code: str = "PRODUCTION"
    record_awards: int = 1
    record_courses: int = 1
    sessions: list[tuple[int, int]] = field(default_factory=lambda: [(0, 3), (1, 2)])
    student: Student = field(default_factory=Student)

    @property
    def award_total(self) -> int:
        return self.record_awards + sum(awards for awards, _courses in self.sessions)

    @property
    def course_total(self) -> int:
        return self.record_courses + sum(courses for _awards, courses in self.sessions)


def _sub(parent: etree._Element, tag: str, text: str | None = None) -> etree._Element:
    node = etree.SubElement(parent, tag)
    if text is not None:
        node.text = text
    return node


def _organization(parent: etree._Element, id_pair: tuple[str, str], name: str) -> None:
    organization = _sub(parent, "Organization")
    _sub(organization, id_pair[0], id_pair[1])
    _sub(organization, "OrganizationName", name)


def _transmission(
    parent: etree._Element, doc: Request | Transcript, type_code: str, source, destination
) -> None:
    _sub(parent, "DocumentID", doc.document_id)
    _sub(parent, "CreatedDateTime", doc.created)
    _sub(parent, "DocumentTypeCode", type_code)
    _sub(parent, "TransmissionType", "Original")
    _organization(_sub(parent, "Source"), *source)
    _organization(_sub(parent, "Destination"), *destination)
    _sub(parent, "DocumentProcessCode", doc.process_code)
    if doc.tracking_id:
        _sub(parent, "RequestTrackingID", doc.tracking_id)


def _person(parent: etree._Element, student: Student) -> None:
    person = _sub(parent, "Person")
    if student.school_assigned_id:
        _sub(person, "SchoolAssignedPersonID", student.school_assigned_id)
    for value, agency in (
        (student.ocas_account, "OCAS Account Number"),
        (student.ocas_application, "OCAS Application Number"),
        (student.oen, "Ontario Education Number"),
    ):
        if value:
            identifier = _sub(person, "AgencyIdentifier")
            _sub(identifier, "AgencyAssignedID", value)
            _sub(identifier, "AgencyCode", "MutuallyDefined")
            _sub(identifier, "AgencyName", agency)
    if student.birth_date:
        _sub(_sub(person, "Birth"), "BirthDate", student.birth_date)
    name = _sub(person, "Name")
    _sub(name, "FirstName", student.first_name)
    if student.middle_name:
        _sub(name, "MiddleName", student.middle_name)
    _sub(name, "LastName", student.last_name)
    if student.gender:
        _sub(_sub(person, "Gender"), "GenderCode", student.gender)


def make_request(request: Request | None = None) -> str:
    """A TranscriptRequest (TransmissionData and Request qualified, the rest not)."""
    request = request or Request()
    namespace = namespace_for("TranscriptRequest", request.version)
    q = f"{{{namespace}}}"
    root = etree.Element(q + "TranscriptRequest", nsmap={"TrnReq": namespace})
    _transmission(
        _sub(root, q + "TransmissionData"),
        request,
        "Request",
        (request.source_id, request.source_name),
        (request.destination_id, request.destination_name),
    )
    body = _sub(root, q + "Request")
    _sub(body, "CreatedDateTime", request.created)
    requested = _sub(body, "RequestedStudent")
    _person(requested, request.student)
    school = _sub(_sub(requested, "Attendance"), "School")
    _sub(school, "OrganizationName", request.destination_name)
    _sub(school, request.destination_id[0], request.destination_id[1])
    _sub(requested, "ReleaseAuthorizedIndicator", "true")
    recipient = _sub(body, "Recipient")
    _sub(recipient, "RequestTrackingID", request.tracking_id)
    receiver = _sub(_sub(recipient, "Receiver"), "RequestorReceiverOrganization")
    _sub(receiver, "OrganizationName", request.source_name)
    _sub(receiver, request.source_id[0], request.source_id[1])
    _sub(_sub(recipient, "TranscriptHold"), "HoldType", request.hold_type)
    _sub(recipient, "TranscriptType", "Complete")
    _sub(recipient, "TranscriptPurpose", "Admission")
    _sub(recipient, "DeliveryMethod", "Electronic")
    return etree.tostring(root, encoding="unicode")


def _course(parent: etree._Element, number: int) -> None:
    course = _sub(parent, "Course")
    _sub(course, "CourseCreditBasis", "Regular")
    _sub(course, "CourseCreditUnits", "Semester")
    _sub(course, "CourseCreditValue", "3.0")
    _sub(course, "CourseAcademicGrade", "A")
    _sub(course, "CourseSubjectAbbreviation", "MATH")
    _sub(course, "CourseNumber", str(100 + number))
    _sub(course, "CourseTitle", f"Course {number}")


def _award(parent: etree._Element, number: int) -> None:
    award = _sub(parent, "AcademicAward")
    _sub(award, "AcademicAwardDate", "2020-06-01")
    _sub(award, "AcademicAwardTitle", f"Diploma {number}")


def make_transcript(transcript: Transcript | None = None) -> str:
    """A CollegeTranscript (only the root namespaced): awards and courses at record level and
    in each session, as ``transcript.sessions`` [(awards, courses), ...] says."""
    transcript = transcript or Transcript()
    namespace = namespace_for("CollegeTranscript", transcript.version)
    root = etree.Element(f"{{{namespace}}}CollegeTranscript", nsmap={"ColTrn": namespace})
    _transmission(
        _sub(root, "TransmissionData"),
        transcript,
        "RequestedRecord",
        (("CSIS", "555555"), "Demo College"),
        (("MutuallyDefined", "OCAS"), "OCAS Application Services Inc."),
    )
    student = _sub(root, "Student")
    _person(student, transcript.student)
    record = _sub(student, "AcademicRecord")
    school = _sub(record, "School")
    _sub(school, "OrganizationName", "Demo College")
    _sub(school, "CSIS", "555555")
    number = 0
    for _ in range(transcript.record_awards):
        number += 1
        _award(record, number)
    for index, (awards, courses) in enumerate(transcript.sessions):
        session = _sub(record, "AcademicSession")
        detail = _sub(session, "AcademicSessionDetail")
        _sub(detail, "SessionDesignator", f"2020-{index % 12 + 1:02d}")
        _sub(detail, "SessionName", f"Term {index + 1}")
        for _ in range(awards):
            number += 1
            _award(session, number)
        for _ in range(courses):
            number += 1
            _course(session, number)
    for _ in range(transcript.record_courses):
        number += 1
        _course(record, number)
    return etree.tostring(root, encoding="unicode")


# --- hypothesis strategies -------------------------------------------------------------------

# Names with the characters XML must escape; no leading/trailing or doubled whitespace, since
# the workbench strips element text.
_name_chars = st.sampled_from("abcdefghijklmnopqrstuvwxyzÉéèçñøßØ'&<>\"-")
names = st.text(_name_chars, min_size=1, max_size=35)
ids = st.text(st.sampled_from("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789-"), min_size=1, max_size=35)
digits = st.text(st.sampled_from("0123456789"), min_size=9, max_size=9)
dates = st.dates(date(1900, 1, 1), date(2100, 12, 31)).map(date.isoformat)

students = st.builds(
    Student,
    first_name=names,
    last_name=names,
    middle_name=st.none() | names,
    school_assigned_id=st.none() | st.text(st.sampled_from("0123456789"), min_size=1, max_size=20),
    birth_date=st.none() | dates,
    gender=st.none() | st.sampled_from(("Female", "Male", "Unreported")),
    oen=st.none() | digits,
    ocas_account=st.none() | digits,
    ocas_application=st.none() | digits,
)
requests = st.builds(
    Request,
    version=st.sampled_from(("1.0.0", "1.1.0", "1.2.0", "1.4.0")),
    document_id=ids,
    tracking_id=ids,
    process_code=st.sampled_from(("TEST", "PRODUCTION")),
    hold_type=st.sampled_from(("Now", "AfterGradesPosted", "AfterSpecifiedTerm")),
    student=students,
)
transcripts = st.builds(
    Transcript,
    version=st.sampled_from(("1.0.0", "1.3.0", "1.4.0", "1.6.0")),
    document_id=ids,
    tracking_id=st.none() | ids,
    process_code=st.sampled_from(("TEST", "PRODUCTION")),
    record_awards=st.integers(0, 3),
    record_courses=st.integers(0, 4),
    sessions=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 8)), max_size=6),
    student=students,
)
# Notes as words (at most 80 characters each, so splitting into NoteMessages happens at spaces)
# joined by any whitespace; a note of only whitespace means no note.
_words = st.lists(st.text(st.sampled_from("abcxyzé&<>'\".,"), min_size=1, max_size=12), max_size=30)
notes = st.none() | st.tuples(_words, st.sampled_from((" ", "  ", "\n", "\t "))).map(
    lambda parts: parts[1].join(parts[0])
)
