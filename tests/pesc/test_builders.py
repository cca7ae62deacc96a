"""build_response() and build_acknowledgment(): examples, errors, and properties.

The properties (hypothesis): whatever valid request or transcript comes in, in any family, the
builder's output parses back to the values it was given and validates against the XSDs.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.pesc.factories import (
    XSD_DIR,
    Request,
    Transcript,
    make_request,
    make_transcript,
    needs_samples,
    needs_xsd,
    notes,
    requests,
    sample,
    transcripts,
)
from workbench import pesc
from workbench.errors import PescError
from workbench.pesc.builders import HOLD_REASONS, RESPONSE_STATUSES
from workbench.pesc.fields import STUDENT_KEYS
from workbench.spec import NS_V1_0_0, NS_V1_1_0

PROPERTIES = settings(max_examples=30, deadline=None, database=None)


def _validate(xml: str) -> pesc.Validation:
    result = pesc.validate(xml, schemas_dir=XSD_DIR)
    assert result.status == "valid", [str(error) for error in result.errors]
    return result


# --- responses -------------------------------------------------------------------------------


@needs_xsd
def test_response_to_an_ocas_style_request() -> None:
    request = make_request(Request(version="1.1.0"))
    xml = pesc.build_response(
        request,
        status="Hold",
        hold_reason="Financial",
        planned_release_date=date(2024, 6, 30),
        note="Fees owing",
        created=datetime(2024, 5, 2, 12, 0, tzinfo=UTC),
    )
    doc = pesc.parse(xml)
    assert doc.namespace == NS_V1_1_0["TranscriptResponse"]
    row = pesc.flatten(doc)
    assert row["document_type_code"] == "Response"
    assert row["created_at"] == row["response_created_at"] == "2024-05-02T12:00:00+00:00"
    assert row["response_status"] == "Hold"
    assert (row["hold_reason"], row["planned_release_date"]) == ("Financial", "2024-06-30")
    assert row["request_tracking_id"] == row["response_request_tracking_id"] == "C20150729002337"
    # we answer: the request's destination is our source
    assert (row["source_org_id_type"], row["source_org_id"]) == ("CSIS", "555555")
    assert (row["destination_org_id"], row["destination_org_name"]) == (
        "OCAS",
        "OCAS Application Services Inc.",
    )
    assert row["process_code"] == "TEST"
    assert row["student_oen"] == "123456789"
    assert row["note"] == "Fees owing"
    result = _validate(xml)
    assert result.schema == "TranscriptResponse_v1.1.0.xsd"


@needs_xsd
def test_response_in_the_spec_family_shares_the_request_namespace() -> None:
    xml = pesc.build_response(make_request(Request(version="1.0.0")), status="NoRecord")
    doc = pesc.parse(xml)
    assert doc.message_type == "TranscriptResponse"
    assert doc.namespace == NS_V1_0_0["TranscriptResponse"] == NS_V1_0_0["TranscriptRequest"]
    result = _validate(xml)
    assert "nearest version to v1.0.0" in (result.note or "")


@needs_samples
@needs_xsd
@pytest.mark.parametrize(
    "name",
    [
        "pesccds/v1_4_basic_002.xml",
        "pesccds/v1_4_RequiredAndRecommended_001.xml",
        "pesccds-tr120/basic_001.xml",
        "pesccds-tr120/xmlTranscript_request.xml",
    ],
)
def test_responses_to_valid_samples_validate(name: str) -> None:
    request = pesc.parse(sample(name))
    xml = pesc.build_response(request, status="TranscriptSent")
    doc = pesc.parse(xml)
    assert doc.version == request.version
    _validate(xml)
    before, after = pesc.flatten(request), pesc.flatten(doc)
    assert {k: after[k] for k in STUDENT_KEYS} == {k: before[k] for k in STUDENT_KEYS}


def test_response_document_id_defaults_to_the_request_id_without_dashes() -> None:
    guid = "0f8fad5b-d9cb-469f-a165-70867728950e"  # 36 characters: too long for DocumentID
    xml = pesc.build_response(make_request(Request(document_id=guid)))
    assert pesc.flatten(xml)["document_id"] == guid.replace("-", "")
    xml = pesc.build_response(make_request(), document_id="MINE-1")
    assert pesc.flatten(xml)["document_id"] == "MINE-1"


@pytest.mark.parametrize("stated", ["TEST", "PRODUCTION", None])
def test_the_process_code_is_copied_else_the_one_given(stated: str | None) -> None:
    request, transcript = make_request(Request()), make_transcript(Transcript())
    if stated is None:  # the document states none: the one given is written
        request, transcript = (
            x.replace(f"<DocumentProcessCode>{c}</DocumentProcessCode>", "")
            for x, c in ((request, "TEST"), (transcript, "PRODUCTION"))
        )
    else:
        request = request.replace(">TEST</DocumentProcessCode>", f">{stated}</DocumentProcessCode>")
        transcript = transcript.replace(
            ">PRODUCTION</DocumentProcessCode>", f">{stated}</DocumentProcessCode>"
        )
    for code in ("TEST", "PRODUCTION", None):
        built = (
            pesc.build_response(request, process_code=code),
            pesc.build_acknowledgment(transcript, process_code=code),
        )
        assert [pesc.flatten(x)["process_code"] for x in built] == [stated or code] * 2
    with pytest.raises(ValueError, match="process_code"):
        pesc.build_response(make_request(Request(process_code="")), process_code="UAT")


def test_one_response_per_request_with_its_own_tracking_id() -> None:
    text = (
        '<r:TranscriptRequest xmlns:r="urn:org:pesc:message:TranscriptRequest:v1.0.0">'
        "<r:TransmissionData><DocumentID>D</DocumentID></r:TransmissionData>"
        + "".join(
            f"<r:Request><RequestedStudent><Person><Name/></Person></RequestedStudent>"
            f"<Recipient><RequestTrackingID>{tracking}</RequestTrackingID></Recipient></r:Request>"
            for tracking in ("T-1", "T-2")
        )
        + "</r:TranscriptRequest>"
    )
    xml = pesc.build_response(text)
    assert [r["request_tracking_id"] for r in pesc.records(xml)["responses"]] == ["T-1", "T-2"]
    assert pesc.flatten(xml)["request_tracking_id"] == "T-1"


def test_join_keys_are_echoed_whole() -> None:
    long_id = "C" * 40  # over the schema's 35: echoed, not cut, so joins still work
    xml = pesc.build_response(make_request(Request(tracking_id=long_id)))
    assert pesc.flatten(xml)["response_request_tracking_id"] == long_id
    ack = pesc.build_acknowledgment(make_transcript(Transcript(document_id="G" * 36)))
    assert pesc.flatten(ack)["document_id"] == "G" * 36


def test_a_release_date_alone_holds_for_other_reasons() -> None:
    xml = pesc.build_response(make_request(), planned_release_date="2024-12-20")
    row = pesc.flatten(xml)
    assert row["response_status"] == "TranscriptRequestReceived"
    assert (row["hold_reason"], row["planned_release_date"]) == ("Other", "2024-12-20")


def test_long_notes_are_split_into_schema_sized_pieces() -> None:
    note = " ".join(f"word{n}" for n in range(60))  # about 400 characters
    xml = pesc.build_response(make_request(), note=note)
    pieces = [record["note"] for record in pesc.records(xml)["notes"]]
    assert len(pieces) > 1
    assert all(len(piece) <= 80 for piece in pieces)
    assert pesc.flatten(xml)["note"] == note


def test_times_are_written_with_an_offset() -> None:
    naive = pesc.build_response(make_request(), created=datetime(2024, 1, 2, 3, 4, 5))
    assert pesc.flatten(naive)["created_at"] == "2024-01-02T03:04:05+00:00"
    eastern = timezone(timedelta(hours=-5))
    aware = pesc.build_response(
        make_request(), created=datetime(2024, 1, 2, 3, 4, 5, tzinfo=eastern)
    )
    assert pesc.flatten(aware)["created_at"] == "2024-01-02T03:04:05-05:00"
    now = pesc.flatten(pesc.build_response(make_request()))["created_at"]
    assert datetime.fromisoformat(now).tzinfo is not None


@pytest.mark.parametrize(
    "options",
    [
        {"status": "Sent"},
        {"hold_reason": "Money"},
        {"planned_release_date": "30/06/2024"},
    ],
)
def test_bad_arguments_are_value_errors(options: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        pesc.build_response(make_request(), **options)


def test_builders_answer_only_their_message() -> None:
    with pytest.raises(PescError) as wrong:
        pesc.build_response(make_transcript())
    assert wrong.value.reason == "wrong-message"
    with pytest.raises(PescError) as wrong:
        pesc.build_acknowledgment(make_request())
    assert wrong.value.reason == "wrong-message"
    with pytest.raises(PescError) as incomplete:
        pesc.build_response("<TranscriptRequest><TransmissionData/></TranscriptRequest>")
    assert incomplete.value.reason == "incomplete"


# --- acknowledgments -------------------------------------------------------------------------


@needs_samples
@needs_xsd
def test_acknowledgment_of_the_ontario_sample() -> None:
    transcript = sample("canpesc/Ontario_College_CollegeTranscript.xml")
    xml = pesc.build_acknowledgment(transcript, created="2024-05-03T08:00:00Z", note="Received")
    doc = pesc.parse(xml)
    assert doc.namespace == NS_V1_1_0["Acknowledgment"]
    row = pesc.flatten(doc)
    assert (row["academic_award_total"], row["course_total"]) == (3, 58)
    assert row["document_id"] == "123456789123456789"  # the transcript's, echoed
    assert row["request_tracking_id"] == "REF-85858585"
    assert row["document_type_code"] == "Acknowledgment"
    assert (row["source_org_id"], row["destination_org_id"]) == ("OCAS", "555555")
    assert (row["student_first_name"], row["student_last_name"]) == ("Test", "Learner")
    assert row["student_oen"] == "999999999"
    assert row["note"] == "Received"
    assert _validate(xml).schema == "TranscriptAcknowledgement_v1.1.0.xsd"


@needs_samples
def test_acknowledgment_takes_an_organizations_first_non_blank_name() -> None:
    transcript = sample("canpesc/Ontario_College_CollegeTranscript.xml").decode()
    blanks = transcript.replace("<OrganizationName>", "<OrganizationName/><OrganizationName>")
    fields = ("source_org_id", "source_org_name", "destination_org_id", "destination_org_name")
    rows = [pesc.flatten(pesc.parse(pesc.build_acknowledgment(t))) for t in (transcript, blanks)]
    assert [rows[1][f] for f in fields] == [rows[0][f] for f in fields]
    assert rows[0]["destination_org_name"] or rows[0]["source_org_name"]


@needs_samples
@needs_xsd
@pytest.mark.parametrize(
    ("name", "schema"),
    [
        ("pesccds/x_college-transcript.xml", "TranscriptAcknowledgement_v1.3.0.xsd"),
        ("pesccds/x_SampleCollegeTranscript.xml", "TranscriptAcknowledgement_v1.3.0.xsd"),
        (
            "canpesc/Ontario_University_UniversityTranscript2.xml",
            "TranscriptAcknowledgement_v1.3.0.xsd",
        ),
        (
            "canpesc/Nova_Scotia_University_UniversityTranscript1.xml",
            "TranscriptAcknowledgement_v1.1.0.xsd",
        ),
        (
            "canpesc/Nova_Scotia_University_UniversityTranscript2.xml",
            "TranscriptAcknowledgement_v1.1.0.xsd",
        ),
    ],
)
def test_acknowledgments_of_every_college_transcript_sample_validate(
    name: str, schema: str
) -> None:
    transcript = pesc.flatten(sample(name))
    xml = pesc.build_acknowledgment(sample(name))
    row = pesc.flatten(xml)
    assert row["course_total"] == transcript["course_count"]
    assert row["academic_award_total"] == transcript["award_count"]
    assert row["document_id"] == transcript["document_id"]
    assert _validate(xml).schema == schema


@needs_samples
def test_acknowledgment_mends_identity_defects() -> None:
    # Birthday "08-31", <Birthdate>, <Gender><Gender>Female</Gender></Gender> in the transcript
    row = pesc.flatten(
        pesc.build_acknowledgment(
            sample("canpesc/Nova_Scotia_University_UniversityTranscript1.xml")
        )
    )
    assert row["student_birthday"] == "--08-31"
    assert row["student_birth_date"] == "1978-08-31"
    assert row["student_gender"] == "Female"


@needs_xsd
def test_acknowledgment_of_a_default_namespaced_transcript_is_unqualified() -> None:
    namespaced = make_transcript().replace(
        'xmlns:ColTrn="urn:org:pesc:message:CollegeTranscript:v1.3.0"',
        'xmlns:ColTrn="urn:org:pesc:message:CollegeTranscript:v1.3.0" '
        'xmlns="urn:org:pesc:message:CollegeTranscript:v1.3.0"',
    )
    assert pesc.validate(namespaced, schemas_dir=XSD_DIR).status == "invalid"
    xml = pesc.build_acknowledgment(namespaced)
    _validate(xml)
    assert pesc.flatten(xml)["course_total"] == Transcript().course_total


@pytest.mark.parametrize(("stated", "expected"), [("T-1", "T-1"), (None, "GIVEN")])
def test_acknowledgment_takes_the_given_tracking_id_when_the_transcript_states_none(
    stated: str | None, expected: str
) -> None:
    xml = pesc.build_acknowledgment(
        make_transcript(Transcript(tracking_id=stated)), tracking_id="GIVEN"
    )
    assert pesc.flatten(xml)["request_tracking_id"] == expected


def test_acknowledgment_of_a_nameless_student_has_an_empty_name() -> None:
    xml = pesc.build_acknowledgment(
        "<CollegeTranscript><Student><Person/></Student></CollegeTranscript>"
    )
    assert "<Name/>" in xml
    row = pesc.flatten(xml)
    assert (row["academic_award_total"], row["course_total"]) == (0, 0)
    assert row["document_id"]  # a new id when the transcript has none


# --- properties ------------------------------------------------------------------------------


@needs_xsd
@PROPERTIES
@given(
    request=requests,
    status=st.sampled_from(RESPONSE_STATUSES),
    hold_reason=st.none() | st.sampled_from(HOLD_REASONS),
    release=st.none() | st.dates(date(2000, 1, 1), date(2100, 1, 1)),
    note=notes,
)
def test_response_round_trip(
    request: Request, status: str, hold_reason: str | None, release: date | None, note: str | None
) -> None:
    source = make_request(request)
    assert pesc.validate(source, schemas_dir=XSD_DIR).status == "valid"
    xml = pesc.build_response(
        source, status=status, hold_reason=hold_reason, planned_release_date=release, note=note
    )
    doc = pesc.parse(xml)
    row = pesc.flatten(doc)
    asked = pesc.flatten(source)
    assert doc.message_type == "TranscriptResponse"
    assert doc.version == request.version
    assert row["response_status"] == status
    assert row["hold_reason"] == (hold_reason or ("Other" if release else None))
    assert row["planned_release_date"] == (release.isoformat() if release else None)
    assert row["note"] == ((" ".join(note.split()) or None) if note else None)
    assert row["request_tracking_id"] == row["response_request_tracking_id"] == request.tracking_id
    assert row["process_code"] == request.process_code
    assert row["source_org_id"] == asked["destination_org_id"]
    assert row["destination_org_id"] == asked["source_org_id"]
    assert {k: row[k] for k in STUDENT_KEYS} == {k: asked[k] for k in STUDENT_KEYS}
    _validate(xml)


@needs_xsd
@PROPERTIES
@given(transcript=transcripts, note=notes)
def test_acknowledgment_round_trip(transcript: Transcript, note: str | None) -> None:
    source = make_transcript(transcript)
    assert pesc.validate(source, schemas_dir=XSD_DIR).status == "valid"
    xml = pesc.build_acknowledgment(source, note=note)
    row = pesc.flatten(xml)
    sent = pesc.flatten(source)
    assert row["academic_award_total"] == transcript.award_total == sent["award_count"]
    assert row["course_total"] == transcript.course_total == sent["course_count"]
    assert row["document_id"] == transcript.document_id
    assert row["request_tracking_id"] == transcript.tracking_id
    assert row["source_org_id"] == sent["destination_org_id"]
    assert row["destination_org_id"] == sent["source_org_id"]
    assert {k: row[k] for k in STUDENT_KEYS} == {k: sent[k] for k in STUDENT_KEYS}
    assert row["note"] == ((" ".join(note.split()) or None) if note else None)
    _validate(xml)
