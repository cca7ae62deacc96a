"""flatten(): pinned values read from the sample files, stable keys, nulls for what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.pesc.factories import needs_samples, sample, sample_files
from workbench import pesc
from workbench.pesc.fields import KEYS

# Values read from the sample files themselves (grep / iconv), not from this code's output.
PINNED: dict[str, dict[str, Any]] = {
    "canpesc/Ontario_College_CollegeTranscript.xml": {
        "message_type": "CollegeTranscript",
        "version": "1.3.0",
        "namespace": "urn:org:pesc:message:CollegeTranscript:v1.3.0",
        "document_id": "123456789123456789",
        "created_at": "2019-01-01T10:09:29-05:00",
        "document_type_code": "RequestedRecord",
        "transmission_type": "Original",
        "source_org_id_type": "CSIS",
        "source_org_id": "555555",
        "source_org_name": "Demo College",
        "destination_org_id_type": "MutuallyDefined",
        "destination_org_id": "OCAS",
        "destination_org_name": "OCAS Application Services Inc.",
        "process_code": "PRODUCTION",
        "official_code": "Official",
        "complete_code": "Complete",
        "request_tracking_id": "REF-85858585",
        "student_school_assigned_id": "1111111111",
        "student_oen": "999999999",  # AgencyCode State + StateProvinceCode ON
        "student_first_name": "Test",
        "student_last_name": "Learner",
        "student_birth_date": "2019-01-01",
        "student_gender": None,
        "academic_record_count": 1,
        "session_count": 9,
        "award_count": 3,
        "course_count": 58,
        "school_name": None,  # this AcademicRecord has no School
    },
    "canpesc/Ontario_University_UniversityTranscript2.xml": {
        "version": "1.4.0",
        "document_id": "O2241161",
        "request_tracking_id": "2021012264726",
        "source_org_id_type": "USIS",
        "source_org_id": "350711",
        "source_org_name": "University of Ottawa",
        "destination_org_id": "OUAC",
        "student_school_assigned_id": "999999999",
        "student_oen": "999999999",
        "student_first_name": "Hermione",
        "student_last_name": "Granger",
        "student_birth_date": None,
        "student_birthday": "--03-09",
        "award_count": 0,
        "course_count": 40,
        "session_count": 9,
    },
    "canpesc/Ontario_HighSchool_HighSchoolTranscript.xml": {
        "message_type": "HighSchoolTranscript",
        "version": "1.2.0",
        "document_id": "987654321987654321",
        "request_tracking_id": "REF-45454545",
        "source_org_id_type": "ESIS",
        "source_org_id": "00099999",
        "student_school_assigned_id": "000309945335",
        "student_agency_assigned_id": "000000000",
        "student_oen": "999999999",
        "student_first_name": "Senior",
        "student_last_name": "Student",
        "student_birth_date": "1987-05-16",
        "student_gender": "Male",
        "award_count": 1,
        "course_count": 54,
    },
    "canpesc/Nova_Scotia_HighSchool_HighSchoolTranscript.xml": {  # UTF-16 BE declaring UTF-8
        "message_type": "HighSchoolTranscript",
        "version": "1.5.0",
        "document_id": "TNSEECD2017100400004",
        "request_tracking_id": "RNS12001000123456012117100300003",
        "source_org_id_type": "PSIS",
        "source_org_id": "EECD",
        "student_gender": "Female",
        "award_count": 1,
        "course_count": 23,
    },
    "canpesc/Nova_Scotia_HighSchool_HighSchoolTranscript3.xml": {
        "document_id": "TNSEECD2018060600006",
        "request_tracking_id": "RNS120040002018031600028",
        "destination_org_id": "12022000",
        "destination_org_name": "Nova Scotia Community College",
        "student_first_name": "James",
        "student_last_name": "Ackles",
        "student_birth_date": "1999-05-11",
        "course_count": 22,
    },
    "canpesc/Nova_Scotia_University_UniversityTranscript1.xml": {  # no namespace, defects
        "message_type": "CollegeTranscript",
        "version": None,
        "namespace": None,
        "document_id": "CNS120020002018091100001",
        "request_tracking_id": None,
        "process_code": "TEST",
        "source_org_id_type": "GeoCode",  # not a PESC identifier, but the only one it has
        "source_org_id": "CS1200",
        "student_first_name": "Sarah",
        "student_middle_name": "Emma",
        "student_last_name": "Abman",
        "student_birth_date": "1978-08-31",  # written <Birthdate>
        "student_birthday": "08-31",
        "student_gender": "Female",  # written <Gender><Gender>Female</Gender></Gender>
        "academic_record_count": 3,
        "session_count": 8,
        "award_count": 1,
        "course_count": 18,
    },
    "canpesc/Nova_Scotia_University_UniversityTranscript2.xml": {  # UTF-8 with a BOM
        "document_id": "CNS120060002019071114005",
        "source_org_id_type": "PSIS",
        "source_org_id": "12006000",
        "destination_org_id": "12001000",
        "student_school_assigned_id": "0455739",
        "student_first_name": "Bradley",
        "student_middle_name": "James",
        "student_last_name": "White",
        "student_birth_date": "1974-01-18",
        "student_gender": "Male",
        "session_count": 2,
        "award_count": 1,
        "course_count": 16,
    },
    "canpesc/Ontario_University_UniversityTranscript.xml": {
        "message_type": "AcademicRecordBatch",
        "version": "2.0.0",
        "document_id": None,  # a batch envelope: its transcripts are not read
    },
    "pesccds/x_SampleCollegeTranscript.xml": {  # UTF-16 BE
        "version": "1.4.0",
        "document_id": "050330001",
        "request_tracking_id": "23456778009",
        "source_org_id_type": "ATP",
        "source_org_id": "006882",
        "destination_org_id_type": "FICE",
        "destination_org_id": "001506",
        "student_first_name": "Test",
        "student_last_name": "Speede",
        "student_birth_date": "1967-07-14",
        "student_gender": "Female",
        "academic_record_count": 4,
        "session_count": 12,
        "award_count": 1,
        "course_count": 24,
    },
    "pesccds/x_college-transcript.xml": {  # UTF-16 LE, no declaration
        "version": "1.6.0",
        "document_id": "156",
        "created_at": "2017-04-11T16:13:04.928Z",
        "request_tracking_id": "156",
        "student_school_assigned_id": "0",
        "student_first_name": "John",
        "student_last_name": "Doe",
        "student_birth_date": "1995-01-01Z",
        "student_gender": "Male",
        "award_count": 1,
        "course_count": 1,
        "school_name": "Butte College",
        "school_id_type": "FICE",
        "school_id": "008073",
    },
    "pesccds/v1_4_basic_002.xml": {
        "message_type": "TranscriptRequest",
        "version": "1.4.0",
        "document_id": "a",
        "document_type_code": "Cancel",
        "transmission_type": "MutuallyDefined",
        "source_org_id_type": "OPEID",
        "source_org_id": "String",
        "process_code": "PRODUCTION",
        "official_code": "Unofficial",
        "complete_code": "Partial",
        "request_tracking_id": "a",
        "student_school_assigned_id": "a",
        "student_agency_assigned_id": "a",
        "student_birth_date": "1957-08-13",
        "student_birthday": "--12-17",
        "student_gender": "Male",
        "request_count": 1,
        "recipient_count": 1,
        "release_authorized": True,
        "hold_type": "AfterSpecifiedCourseGrade",
        "transcript_type": "Management",
        "transcript_purpose": "GraduateAdmissions",
        "delivery_method": "Mail",
    },
    "pesccds/v1_4_RequiredAndRecommended_001.xml": {
        "document_id": "a",
        "document_type_code": "Response",
        "transmission_type": "Duplicate",
        "request_tracking_id": "123456789",
        "source_org_id_type": "CEEBACT",
        "source_org_id": "aaaaaa",
        "student_first_name": "a",
        "student_middle_name": "b",
        "student_last_name": "a",
        "student_birth_date": "1957-08-13",
        "recipient_count": 0,
        "attendance_school_name": "a",
        "attendance_school_id_type": "CEEBACT",
        "attendance_school_id": "aaaaaa",
        "release_authorized": True,
        "hold_type": None,
    },
    "pesccds/v1_4_modified_requiredAndRecommended_0fd6ad111a83487c9536ea71602ecd7d_request.xml": {
        "document_id": "0000ad00999999999999000000000005",
        "document_type_code": "Application",
        "request_tracking_id": "0fd6ad111a83487c9536ea71602ecd7d",
        "request_created_at": "2014-05-14T15:51:52-05:00",
        "student_first_name": "firstName5",
        "student_middle_name": "middleName",
        "student_last_name": "lastName5",
        "student_birth_date": "2014-05-08",
        "release_authorized": False,
    },
    "pesccds-tr120/basic_001.xml": {  # the bare minimum: empty organizations, empty Name
        "version": "1.2.0",
        "document_id": "a",
        "document_type_code": "CertificationRequest",
        "transmission_type": "Reissue",
        "source_org_id": None,
        "source_org_name": None,
        "request_tracking_id": None,
        "student_first_name": None,
        "student_last_name": None,
        "attendance_school_name": "a",
        "recipient_count": 0,
    },
}


@needs_samples
@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_values(name: str) -> None:
    row = pesc.flatten(sample(name))
    for key, expected in PINNED[name].items():
        assert row[key] == expected, key


def test_at_least_a_dozen_samples_are_pinned() -> None:
    assert len(PINNED) >= 12


@needs_samples
@pytest.mark.parametrize("path", sample_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_flattens_to_the_keys_of_its_kind(path: Path) -> None:
    doc = pesc.parse(path.read_bytes())
    row = pesc.flatten(doc)
    assert tuple(row) in set(KEYS.values())
    assert row["message_type"] == doc.message_type


def test_an_empty_message_gives_nulls_not_errors() -> None:
    for root, kind in (
        ("TranscriptRequest", "request"),
        ("TranscriptResponse", "response"),
        ("Acknowledgment", "acknowledgment"),
        ("HighSchoolTranscript", "other"),
    ):
        row = pesc.flatten(f"<{root}/>")
        assert tuple(row) == KEYS[kind]
        assert row["message_type"] == root
        assert all(value in (None, 0) for key, value in row.items() if key != "message_type"), row
    row = pesc.flatten("<CollegeTranscript><Student/></CollegeTranscript>")
    assert tuple(row) == KEYS["transcript"]
    assert row["course_count"] == 0


RESPONSE = """<TrnResp:TranscriptResponse
    xmlns:TrnResp="urn:org:pesc:message:TranscriptResponse:v1.1.0">
  <TrnResp:TransmissionData>
    <DocumentID>R1</DocumentID>
    <CreatedDateTime>2024-03-01T09:00:00-05:00</CreatedDateTime>
    <DocumentTypeCode>Response</DocumentTypeCode>
    <TransmissionType>Original</TransmissionType>
    <Source>
      <Organization><CSIS>353900</CSIS><OrganizationName>Georgian</OrganizationName></Organization>
    </Source>
    <Destination><Organization><MutuallyDefined>OCAS</MutuallyDefined></Organization></Destination>
  </TrnResp:TransmissionData>
  <TrnResp:Response>
    <CreatedDateTime>2024-03-01T09:00:00-05:00</CreatedDateTime>
    <RequestTrackingID>C20240301000001</RequestTrackingID>
    <RecipientTrackingID>RT-9</RecipientTrackingID>
    <ResponseStatus>Hold</ResponseStatus>
    <ResponseHold>
      <HoldReason>Financial</HoldReason>
      <PlannedReleaseDate>2024-06-30</PlannedReleaseDate>
      <NoteMessage>Fees owing</NoteMessage>
    </ResponseHold>
    <ResponseHold><HoldReason>Other</HoldReason></ResponseHold>
    <RequestedStudent>
      <Person>
        <AgencyIdentifier>
          <AgencyAssignedID>A1</AgencyAssignedID>
          <AgencyCode>MutuallyDefined</AgencyCode>
          <AgencyName>OCAS Account Number</AgencyName>
        </AgencyIdentifier>
        <AgencyIdentifier>
          <AgencyAssignedID>A2</AgencyAssignedID>
          <AgencyCode>MutuallyDefined</AgencyCode>
          <AgencyName>OCAS Application Number</AgencyName>
        </AgencyIdentifier>
        <AgencyIdentifier>
          <AgencyAssignedID>123456789</AgencyAssignedID>
          <AgencyCode>MutuallyDefined</AgencyCode>
          <AgencyName>Ontario Education Number</AgencyName>
        </AgencyIdentifier>
        <Name>
          <FirstName>Ann</FirstName><MiddleName>B</MiddleName><MiddleName>C</MiddleName>
          <LastName>Doe</LastName>
        </Name>
      </Person>
      <Attendance><School><OrganizationName>Georgian</OrganizationName></School></Attendance>
      <ReleaseAuthorizedIndicator>true</ReleaseAuthorizedIndicator>
    </RequestedStudent>
  </TrnResp:Response>
  <TrnResp:NoteMessage>See hold</TrnResp:NoteMessage>
</TrnResp:TranscriptResponse>"""


def test_response_fields_and_the_tracking_id_fallback() -> None:
    row = pesc.flatten(RESPONSE)
    assert row["response_status"] == "Hold"
    assert row["hold_reason"] == "Financial"
    assert row["planned_release_date"] == "2024-06-30"
    assert row["response_request_tracking_id"] == "C20240301000001"
    assert row["request_tracking_id"] == "C20240301000001"  # none in TransmissionData
    assert row["recipient_tracking_id"] == "RT-9"
    assert row["response_count"] == 1
    assert row["student_ocas_account"] == "A1"
    assert row["student_ocas_application"] == "A2"
    assert row["student_oen"] == "123456789"
    assert row["student_middle_name"] == "B C"
    assert row["destination_org_id"] == "OCAS"
    assert row["destination_org_name"] is None
    assert row["note"] == "See hold Fees owing"


def test_request_tracking_id_falls_back_to_the_first_recipient() -> None:
    text = (
        '<r:TranscriptRequest xmlns:r="urn:org:pesc:message:TranscriptRequest:v1.0.0">'
        "<r:TransmissionData><DocumentID>X</DocumentID></r:TransmissionData>"
        "<r:Request><Recipient><RequestTrackingID>T-1</RequestTrackingID></Recipient>"
        "<Recipient><RequestTrackingID>T-2</RequestTrackingID></Recipient></r:Request>"
        "</r:TranscriptRequest>"
    )
    row = pesc.flatten(text)
    assert row["request_tracking_id"] == "T-1"
    assert row["recipient_count"] == 2


def test_a_default_namespace_is_read_all_the_same() -> None:
    # Georgian's acknowledgmentExample.xml: xmlns= on the root namespaces every child.
    text = (
        '<Acknowledgment xmlns="urn:org:pesc:message:TranscriptAcknowledgment:v1.1.0">'
        "<TransmissionData><DocumentID>CT-9</DocumentID><RequestTrackingID>C1</RequestTrackingID>"
        "</TransmissionData><Person><Name><FirstName>Ann</FirstName></Name></Person>"
        "<AcademicAwardTotal>2</AcademicAwardTotal><CourseTotal>x</CourseTotal>"
        "<NoteMessage>one</NoteMessage><NoteMessage>two</NoteMessage></Acknowledgment>"
    )
    row = pesc.flatten(text)
    assert row["document_id"] == "CT-9"
    assert row["request_tracking_id"] == "C1"
    assert row["student_first_name"] == "Ann"
    assert row["academic_award_total"] == 2
    assert row["course_total"] is None  # not a number
    assert row["note"] == "one two"


@pytest.mark.parametrize(
    ("transmission", "kind"),
    [
        ("<TransmissionType>Reissue</TransmissionType>", "Reissue"),
        ("<TransmissionType>Cancellation</TransmissionType>", "Cancellation"),
        ("<DocumentTypeCode>Cancel</DocumentTypeCode><TransmissionType>Original</TransmissionType>",
         "Cancellation"),
        ("<TransmissionType>MutuallyDefined</TransmissionType><NoteMessage> cancellation "
         "</NoteMessage>", "Cancellation"),
        ("<TransmissionType>MutuallyDefined</TransmissionType><NoteMessage>Other</NoteMessage>",
         "MutuallyDefined"),
        ("", None),
    ],
)  # fmt: skip
def test_transmission_kind_names_a_cancellation_however_it_is_written(
    transmission: str, kind: str | None
) -> None:
    from workbench.pesc.fields import transmission_kind

    xml = (
        '<TranscriptRequest xmlns="urn:org:pesc:message:TranscriptRequest:v1.1.0">'
        f"<TransmissionData><DocumentID>D1</DocumentID>{transmission}</TransmissionData>"
        "</TranscriptRequest>"
    )
    assert transmission_kind(xml) == kind
