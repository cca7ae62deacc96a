"""The sandbox's data generator: deterministic, realistic, and valid against the PESC schemas.

Schema choice (there are no public v1.0.0 message schemas, nor a v1.1.0 TranscriptRequest):

- CollegeTranscript and Acknowledgment validate against ``xsd/v1.1.0-ocas`` (CT v1.3.0,
  Ack v1.1.0), the family OCAS exchanges.
- TranscriptRequest validates against ``xsd/v1.2.0/TranscriptRequest_v1.2.0.xsd``. Its root
  element is the same as v1.1.0's; only the imported CoreMain/AcademicRecord moved (1.10.0/1.6.0
  to 1.12.0/1.7.0, per its change log). As a second check, requests also validate against that
  schema re-pointed at CoreMain 1.10.0 / AcRec 1.6.0, which is what v1.1.0 is (xsd/SOURCES.md).
- Documents are moved into the schema's namespace before validating: for v1.0.0 documents, the
  nearest schema of the same message. Only message namespaces move; nothing below is qualified.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from tests.sandbox.schemas import local, retarget, schema_errors
from workbench import pesc
from workbench.errors import PescError
from workbench.sandbox import generator as g
from workbench.spec import NAMESPACE_FAMILIES

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
XSD_DIR = SHARED / "pesc" / "xsd"
SAMPLES_DIR = SHARED / "pesc" / "samples"
FAMILIES = sorted(NAMESPACE_FAMILIES)  # ["v1.0.0", "v1.1.0"]
INDEXES = range(60)
SEED = 7

TR_V1_1_0 = "urn:org:pesc:message:TranscriptRequest:v1.1.0"
# Real CollegeTranscripts of several versions (v1.3.0, v1.4.0, v1.6.0, none) from samples/.
SAMPLE_TRANSCRIPTS = [
    "canpesc/Ontario_College_CollegeTranscript.xml",
    "canpesc/Ontario_University_UniversityTranscript2.xml",
    "canpesc/Nova_Scotia_University_UniversityTranscript1.xml",
    "canpesc/Nova_Scotia_University_UniversityTranscript2.xml",
    "pesccds/x_SampleCollegeTranscript.xml",
    "pesccds/x_college-transcript.xml",
]

Builder = Callable[..., str]
BUILDERS: dict[str, Builder] = {
    "TranscriptRequest": g.transcript_request_xml,
    "CollegeTranscript": g.college_transcript_xml,
}


def created_at(index: int) -> datetime:
    """Creation times that walk through more than a year, so every term boundary is crossed."""
    return datetime(2026, 1, 1, 9, tzinfo=UTC) + timedelta(days=7 * index, hours=index)


def build(message: str, index: int, family: str = "v1.0.0", **kwargs: object) -> str:
    rid = (
        g.item_id(SEED, "request", index)
        if message == "TranscriptRequest"
        else g.item_id(SEED, "transcript", index)
    )
    return BUILDERS[message](
        SEED, index, request_id=rid, created=created_at(index), namespaces=family, **kwargs
    )


def parse(xml: str) -> etree._Element:
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    return etree.fromstring(xml.encode(), parser)


def find_all(root: etree._Element, name: str) -> list[etree._Element]:
    found = root.xpath(f"//*[local-name()='{name}']")
    assert isinstance(found, list)
    return [e for e in found if isinstance(e, etree._Element)]


def text_of(root: etree._Element, path: str) -> str | None:
    """Text at a ``/``-separated local-name path below the root (first match)."""
    steps = "/".join(f"*[local-name()='{s}']" for s in path.split("/"))
    found = root.xpath(f"./{steps}")
    assert isinstance(found, list)
    return found[0].text if found else None  # type: ignore[union-attr]


def content(element: etree._Element) -> list[tuple[str, str]]:
    return [(local(e), (e.text or "").strip()) for e in element.iter()]


def find_org(root: etree._Element, side: str) -> etree._Element:
    found = root.xpath(
        f"./*[local-name()='TransmissionData']/*[local-name()='{side}']/*[local-name()='Organization']"
    )
    assert isinstance(found, list) and len(found) == 1
    return found[0]  # type: ignore[return-value]


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES_DIR.is_dir():
        pytest.skip(f"PESC samples not found at {SAMPLES_DIR} (shared/pesc/samples is absent)")
    return SAMPLES_DIR


# -- identifiers and determinism ------------------------------------------------------------


def test_ids_are_deterministic_unique_guids_that_fit_request_tracking_id() -> None:
    requests = [g.item_id(SEED, "request", i) for i in range(1000)]
    transcripts = [g.item_id(SEED, "transcript", i) for i in range(1000)]
    assert requests == [g.item_id(SEED, "request", i) for i in range(1000)]
    assert len(set(requests)) == len(set(transcripts)) == 1000
    assert not set(requests) & set(transcripts)
    assert g.item_id(SEED, "request", 0) != g.item_id(SEED + 1, "request", 0)
    for value in requests + transcripts:
        # 32 hex digits (a GUID without dashes): RequestTrackingID allows 35 characters at most.
        assert re.fullmatch(r"[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}", value)


@pytest.mark.parametrize("message", BUILDERS)
@pytest.mark.parametrize("defect", [None, "malformed", "invalid"])
def test_same_arguments_give_the_same_bytes_and_new_indexes_new_data(
    message: str, defect: str | None
) -> None:
    first = [build(message, i, defect=defect) for i in range(10)]
    assert first == [build(message, i, defect=defect) for i in range(10)]
    assert len(set(first)) == 10
    rid, when = g.item_id(SEED, "request", 0), created_at(0)
    other_seed = BUILDERS[message](SEED + 1, 0, request_id=rid, created=when, defect=defect)
    assert other_seed != BUILDERS[message](SEED, 0, request_id=rid, created=when, defect=defect)


def test_the_defect_does_not_change_the_data_around_it() -> None:
    valid, invalid = build("CollegeTranscript", 3), build("CollegeTranscript", 3, defect="invalid")
    assert text_of(parse(valid), "Student/Person/Name/LastName") == text_of(
        parse(invalid), "Student/Person/Name/LastName"
    )


def acknowledgment(transcript: etree._Element | bytes | str, tracking: str, **options) -> str:
    """The sandbox's answer to a transcript (``PartnerState.acknowledgment_for``)."""
    if isinstance(transcript, etree._Element):
        transcript = etree.tostring(transcript)
    made = {"created": created_at(1), "process_code": "PRODUCTION", **options}
    return pesc.build_acknowledgment(transcript, tracking_id=tracking, **made)


def test_acknowledgment_is_deterministic() -> None:
    root = parse(build("CollegeTranscript", 5))
    assert acknowledgment(root, "C20260302000001") == acknowledgment(root, "C20260302000001")


# -- schema validity ------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("message", BUILDERS)
def test_every_generated_document_validates(
    schemas: dict[str, etree.XMLSchema], message: str, family: str
) -> None:
    failures = {}
    for index in INDEXES:
        root = parse(build(message, index, family))
        assert etree.QName(root).namespace == NAMESPACE_FAMILIES[family][message]
        if errors := schema_errors(schemas, root):
            failures[index] = errors
    assert not failures


@pytest.mark.parametrize("family", FAMILIES)
def test_requests_also_validate_against_a_v1_1_0_request_schema(
    schemas: dict[str, etree.XMLSchema], family: str
) -> None:
    schema = schemas["TranscriptRequest v1.1.0"]
    for index in INDEXES:
        root = retarget(parse(build("TranscriptRequest", index, family)), TR_V1_1_0)
        assert schema.validate(root), (index, [e.message for e in schema.error_log])


@pytest.mark.parametrize("family", FAMILIES)
def test_acknowledgments_of_generated_transcripts_validate_and_count(
    schemas: dict[str, etree.XMLSchema], family: str
) -> None:
    awards, courses = Counter[int](), Counter[int]()
    for index in INDEXES:
        xml = build("CollegeTranscript", index, family)
        transcript = parse(xml)
        rid = g.item_id(SEED, "transcript", index)
        ack = parse(acknowledgment(transcript, rid))
        assert etree.QName(ack).namespace == NAMESPACE_FAMILIES[family]["Acknowledgment"]
        assert schema_errors(schemas, ack) == [], index
        # Independent counts: the serialized text, not a tree walk.
        award_total = len(re.findall(r"<AcademicAward>", xml))
        course_total = len(re.findall(r"<Course>", xml))
        assert text_of(ack, "AcademicAwardTotal") == str(award_total)
        assert text_of(ack, "CourseTotal") == str(course_total)
        awards[award_total] += 1
        courses[course_total] += 1
        assert text_of(ack, "TransmissionData/DocumentID") == text_of(
            transcript, "TransmissionData/DocumentID"
        )
        assert text_of(ack, "TransmissionData/DocumentTypeCode") == "Acknowledgment"
        assert text_of(ack, "TransmissionData/RequestTrackingID") == rid
        for ours, theirs in (("Source", "Destination"), ("Destination", "Source")):
            assert content(find_org(ack, ours)) == content(find_org(transcript, theirs))
        assert text_of(ack, "Person/Name/LastName") == text_of(
            transcript, "Student/Person/Name/LastName"
        )
        assert not find_all(ack, "HighSchool")  # allowed in a transcript's Person, not here
    assert {0, 1, 2} <= set(awards)
    assert min(courses) >= 5 and max(courses) <= 40 and len(courses) >= 15


@pytest.mark.parametrize("sample", SAMPLE_TRANSCRIPTS)
def test_real_transcripts_get_a_valid_acknowledgment(
    schemas: dict[str, etree.XMLSchema], samples: Path, sample: str
) -> None:
    raw = (samples / sample).read_bytes()
    transcript = etree.fromstring(raw, etree.XMLParser(resolve_entities=False, no_network=True))
    ack = parse(acknowledgment(raw, "REF-85858585"))
    assert schema_errors(schemas, ack) == []
    text = raw.decode("utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig")
    assert text_of(ack, "AcademicAwardTotal") == str(
        len(re.findall(r"<(?:\w+:)?AcademicAward[\s>]", text))
    )
    assert text_of(ack, "CourseTotal") == str(len(re.findall(r"<(?:\w+:)?Course[\s>]", text)))
    assert text_of(ack, "Person/Name/LastName") == text_of(
        transcript, "Student/Person/Name/LastName"
    )


def test_the_ontario_sample_counts(samples: Path) -> None:
    """Counted in the file: 3 credentials, 58 courses (one an exemption at record level)."""
    ack = parse(acknowledgment((samples / SAMPLE_TRANSCRIPTS[0]).read_bytes(), "REF-85858585"))
    assert (text_of(ack, "AcademicAwardTotal"), text_of(ack, "CourseTotal")) == ("3", "58")
    assert text_of(ack, "TransmissionData/DocumentID") == "123456789123456789"
    assert text_of(ack, "TransmissionData/Source/Organization/MutuallyDefined") == "OCAS"
    assert text_of(ack, "TransmissionData/Destination/Organization/CSIS") == "555555"


# -- acknowledgments of awkward transcripts -------------------------------------------------


def acknowledge(transcript: etree._Element) -> etree._Element:
    return parse(acknowledgment(transcript, "C20260302000001"))


def remove(root: etree._Element, name: str) -> None:
    for element in find_all(root, name):
        element.getparent().remove(element)  # type: ignore[union-attr]


def sample_transcript() -> etree._Element:
    """A generated transcript with a former name and a high school, to edit in the cases below."""
    for index in INDEXES:
        root = parse(build("CollegeTranscript", index))
        if find_all(root, "AlternateName") and find_all(root, "HighSchool"):
            return root
    raise AssertionError("no generated transcript has both AlternateName and HighSchool")


@pytest.mark.parametrize(
    "missing", ["Name", "Person", "Student", "TransmissionData", "Source", "Destination"]
)
def test_missing_parts_do_not_crash_and_still_validate(
    schemas: dict[str, etree.XMLSchema], missing: str
) -> None:
    transcript = sample_transcript()
    remove(transcript, missing)
    ack = acknowledge(transcript)
    assert schema_errors(schemas, ack) == []
    assert text_of(ack, "TransmissionData/RequestTrackingID") in (
        "C20260302000001",  # the request's, when the transcript states none
        text_of(transcript, "TransmissionData/RequestTrackingID"),
    )


def test_real_world_defects_are_repaired_in_the_acknowledgment_but_its_keys_echoed(
    schemas: dict[str, etree.XMLSchema],
) -> None:
    transcript = sample_transcript()
    guid = "6F9619FF-8B86-D011-B42D-00C04FC964FF"  # 36 characters, as OCAS sends
    transcript.xpath("//*[local-name()='DocumentID']")[0].text = guid  # type: ignore[index,union-attr]
    birth = find_all(transcript, "Birth")[0]
    etree.SubElement(birth, "Birthday").text = "1210"  # allowed by CoreMain 1.10, not by the Ack
    etree.SubElement(birth, "BirthYear").text = "1999"  # a core:BirthType element AcRec's lacks
    ack = acknowledge(transcript)
    (error,) = schema_errors(schemas, ack)  # the join key is echoed as sent, never rewritten
    assert "DocumentID" in error and "36" in error
    assert text_of(ack, "TransmissionData/DocumentID") == guid
    assert text_of(ack, "Person/Birth/Birthday") == "--12-10"
    assert not find_all(ack, "HighSchool") and not find_all(ack, "BirthYear")


def test_a_default_namespace_transcript_is_read_and_answered_unqualified(
    schemas: dict[str, etree.XMLSchema],
) -> None:
    transcript = sample_transcript()
    namespace = etree.QName(transcript).namespace
    for element in transcript.iter():
        element.tag = f"{{{namespace}}}{local(element)}"
    ack = acknowledge(etree.fromstring(etree.tostring(transcript)))
    assert schema_errors(schemas, ack) == []
    assert text_of(ack, "CourseTotal") == str(len(find_all(transcript, "Course")))


def test_acknowledging_anything_but_a_college_transcript_is_refused() -> None:
    with pytest.raises(PescError, match="CollegeTranscript"):
        acknowledge(parse(build("TranscriptRequest", 0)))


# -- defects and bad arguments --------------------------------------------------------------


@pytest.mark.parametrize("message", BUILDERS)
def test_malformed_documents_do_not_parse(message: str) -> None:
    for index in range(40):
        xml = build(message, index, defect="malformed")
        with pytest.raises(etree.XMLSyntaxError):
            parse(xml)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize(
    ("message", "realistic_defects"),
    [
        ("TranscriptRequest", {"36-char DocumentID", "Birthday 1210"}),
        ("CollegeTranscript", {"36-char DocumentID", "ProgramUSISCode"}),
    ],
)
def test_invalid_documents_parse_but_fail_the_schema(
    schemas: dict[str, etree.XMLSchema], message: str, realistic_defects: set[str], family: str
) -> None:
    seen = set()
    for index in range(30):
        root = parse(build(message, index, family, defect="invalid"))
        assert schema_errors(schemas, root), index
        if len(text_of(root, "TransmissionData/DocumentID") or "") == 36:
            seen.add("36-char DocumentID")
        if [b.text for b in find_all(root, "Birthday")] and re.fullmatch(
            r"\d{4}", find_all(root, "Birthday")[0].text or ""
        ):
            seen.add("Birthday 1210")
        if find_all(root, "ProgramUSISCode"):
            seen.add("ProgramUSISCode")
        assert text_of(root, "TransmissionData/RequestTrackingID") is not None
    assert seen == realistic_defects


@pytest.mark.parametrize("message", BUILDERS)
@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"created": datetime(2026, 3, 2, 9)}, "timezone-aware"),
    ],
)
def test_bad_arguments_are_value_errors(
    message: str, change: dict[str, object], match: str
) -> None:
    arguments: dict[str, object] = {"request_id": "C1", "created": created_at(0), **change}
    with pytest.raises(ValueError, match=match):
        BUILDERS[message](SEED, 0, **arguments)


def test_created_becomes_utc_created_date_time() -> None:
    toronto = timezone(timedelta(hours=-5))
    moment = datetime(2026, 3, 2, 4, 0, 0, 123456, tzinfo=toronto)
    root = parse(g.transcript_request_xml(1, 0, request_id="C1", created=moment))
    assert text_of(root, "TransmissionData/CreatedDateTime") == "2026-03-02T09:00:00.123Z"
    assert text_of(root, "Request/CreatedDateTime") == "2026-03-02T09:00:00.123Z"


# -- namespaces and content -----------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_qualification_follows_each_schema(family: str) -> None:
    names = NAMESPACE_FAMILIES[family]
    request = parse(build("TranscriptRequest", 0, family))
    # elementFormDefault="qualified": the root and its children; below them, nothing.
    assert {etree.QName(e).namespace for e in request} == {names["TranscriptRequest"]}
    assert {
        etree.QName(e).namespace for e in request.iterdescendants() if e.getparent() is not request
    } == {None}
    transcript = parse(build("CollegeTranscript", 0, family))
    ack = acknowledge(transcript)
    for root, message in ((transcript, "CollegeTranscript"), (ack, "Acknowledgment")):
        # "unqualified": only the root.
        assert etree.QName(root).namespace == names[message]
        assert {etree.QName(e).namespace for e in root.iterdescendants()} == {None}


def test_requests_look_like_ocas_requests() -> None:
    recipients, holds = Counter[int](), Counter[str]()
    for index in INDEXES:
        rid = g.item_id(SEED, "request", index)
        root = parse(build("TranscriptRequest", index))
        assert len(text_of(root, "TransmissionData/DocumentID") or "") <= 35
        assert text_of(root, "TransmissionData/DocumentTypeCode") == "Request"
        assert text_of(root, "TransmissionData/TransmissionType") == "Original"
        assert text_of(root, "TransmissionData/Source/Organization/MutuallyDefined") == "OCAS"
        assert (
            text_of(root, "TransmissionData/Source/Organization/OrganizationName")
            == "OCAS Application Services Inc."
        )
        assert re.fullmatch(
            r"\d{6}", text_of(root, "TransmissionData/Destination/Organization/CSIS") or ""
        )
        assert text_of(root, "TransmissionData/RequestTrackingID") == rid
        assert [e.text for e in find_all(root, "AgencyName")] == [
            "OCAS Account Number",
            "OCAS Application Number",
            "Ontario Education Number",
        ]
        assert text_of(root, "Request/RequestedStudent/Person/Birth/BirthDate")
        assert text_of(root, "Request/RequestedStudent/ReleaseAuthorizedIndicator") == "true"
        assert find_all(root, "Attendance")
        found = find_all(root, "Recipient")
        recipients[len(found)] += 1
        for recipient in found:
            assert text_of(recipient, "RequestTrackingID") == rid
            hold = text_of(recipient, "TranscriptHold/HoldType") or ""
            holds[hold] += 1
            if hold in ("AfterSpecifiedTerm", "AfterGradesPosted"):
                assert re.fullmatch(
                    r"\d{4}-(01|05|09)",
                    text_of(recipient, "TranscriptHold/SessionDesignator") or "",
                )
                assert text_of(recipient, "TranscriptHold/SessionName")
            assert text_of(recipient, "DeliveryMethod") == "Electronic"
    assert set(recipients) == {1, 2, 3}
    assert {"Now", "AfterGradesPosted", "AfterSpecifiedTerm", "AfterDegreeAwarded"} <= set(holds)


def test_transcripts_look_like_college_transcripts() -> None:
    records, session_awards = Counter[int](), 0
    for index in INDEXES:
        root = parse(build("CollegeTranscript", index))
        assert text_of(root, "TransmissionData/DocumentTypeCode") == "RequestedRecord"
        assert text_of(root, "TransmissionData/RequestTrackingID") == g.item_id(
            SEED, "transcript", index
        )
        records[len(find_all(root, "AcademicRecord"))] += 1
        session_awards += len(
            root.xpath("//*[local-name()='AcademicSession']/*[local-name()='AcademicAward']")
        )
        for record in find_all(root, "AcademicRecord"):
            assert text_of(record, "School/OrganizationName")
            sessions = record.xpath("./*[local-name()='AcademicSession']")
            assert sessions
            for session in sessions:
                assert re.fullmatch(
                    r"\d{4}-(01|05|09)",
                    text_of(session, "AcademicSessionDetail/SessionDesignator") or "",
                )
                assert text_of(session, "AcademicSessionDetail/SessionName")
            # The cumulative GPA agrees with the courses: quality points over GPA credits.
            graded = [c for c in record.iter("Course") if text_of(c, "CourseQualityPointsEarned")]
            points = sum(float(text_of(c, "CourseQualityPointsEarned") or 0) for c in graded)
            credits = sum(float(text_of(c, "CourseCreditValue") or 0) for c in graded)
            expected = f"{points / credits:.2f}" if credits else "0.00"
            assert text_of(record, "AcademicSummary/GPA/GradePointAverage") == expected
    assert set(records) == {1, 2}
    assert session_awards > 0


def test_names_carry_accents_apostrophes_hyphens_and_escaped_ampersands() -> None:
    names: set[str] = set()
    raw_with_ampersand = 0
    for index in INDEXES:
        for message in BUILDERS:
            xml = build(message, index)
            root = parse(xml)
            names |= {
                e.text or "" for e in find_all(root, "FirstName") + find_all(root, "LastName")
            }
            # Every & in the text is the start of an entity reference.
            assert not re.search(r"&(?!amp;|lt;|gt;|quot;|apos;|#)", xml)
            if "&amp;" in xml:
                raw_with_ampersand += 1
                assert any("&" in (e.text or "") for e in root.iter())
    assert any(re.search(r"[^\x00-\x7f]", n) for n in names)  # é, ü, ç, ñ, ...
    assert any("'" in n for n in names)  # O'Brien, D'Angelo
    assert any("-" in n for n in names)  # Smith-Jones, Jean-Luc
    assert raw_with_ampersand >= 5  # "Smith & Jones Collegiate Institute", course titles, ...
    assert "O'Brien" in names or "D'Angelo" in names


# -- events ---------------------------------------------------------------------------------

EVENT_BUILDERS = {"placement": g.placement_event, "domestic": g.domestic_event}


@pytest.mark.parametrize("kind", EVENT_BUILDERS)
def test_events_are_deterministic_json_records(kind: str) -> None:
    make = EVENT_BUILDERS[kind]
    made = [make(SEED, i, occurred_at=created_at(i)) for i in range(40)]
    assert made == [make(SEED, i, occurred_at=created_at(i)) for i in range(40)]
    assert len({e["eventId"] for e in made}) == 40
    assert len({e["eventType"] for e in made}) >= 4
    for index, event in enumerate(made):
        assert set(event) == {"eventId", "eventType", "occurredAt", "payload"}
        assert json.loads(json.dumps(event)) == event
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", event["occurredAt"])
        parsed = datetime.fromisoformat(event["occurredAt"].replace("Z", "+00:00"))
        assert parsed == created_at(index)
        assert isinstance(event["payload"], dict) and event["payload"]
    assert make(SEED, 0, occurred_at=created_at(0)) != make(SEED + 1, 0, occurred_at=created_at(0))


def test_event_kinds_differ_and_times_must_be_aware() -> None:
    placement = {
        g.placement_event(SEED, i, occurred_at=created_at(i))["eventType"] for i in range(60)
    }
    domestic = {
        g.domestic_event(SEED, i, occurred_at=created_at(i))["eventType"] for i in range(60)
    }
    assert not placement & domestic
    moment = datetime(2026, 3, 2, 4, 0, 0, 5000, tzinfo=timezone(timedelta(hours=-5)))
    assert g.domestic_event(1, 0, occurred_at=moment)["occurredAt"] == "2026-03-02T09:00:00.005Z"
    for make in EVENT_BUILDERS.values():
        with pytest.raises(ValueError, match="timezone-aware"):
            make(1, 0, occurred_at=datetime(2026, 3, 2))


# -- any seed, any index --------------------------------------------------------------------


@settings(max_examples=25, deadline=None, database=None)
@given(seed=st.integers(0, 2**63), index=st.integers(0, 10**9), family=st.sampled_from(FAMILIES))
def test_any_seed_and_index_give_valid_documents(
    schemas: dict[str, etree.XMLSchema], seed: int, index: int, family: str
) -> None:
    rid, when = g.item_id(seed, "request", index), datetime(2026, 3, 2, 9, tzinfo=UTC)
    request = parse(
        g.transcript_request_xml(seed, index, request_id=rid, created=when, namespaces=family)
    )
    assert schema_errors(schemas, request) == []
    transcript = parse(
        g.college_transcript_xml(seed, index, request_id=rid, created=when, namespaces=family)
    )
    assert schema_errors(schemas, transcript) == []
    ack = parse(acknowledgment(transcript, rid))
    assert schema_errors(schemas, ack) == []
    assert text_of(ack, "CourseTotal") == str(len(find_all(transcript, "Course")))
