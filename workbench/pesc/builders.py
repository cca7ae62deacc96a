"""Builders of the two messages the workbench sends back, each answering a document in its
namespace family: schema-valid when the input is, join keys copied, never invented (NOTES §6).
"""

from __future__ import annotations

import copy
import re
import textwrap
import uuid
from datetime import UTC, date, datetime

from lxml import etree
from lxml.builder import E

from workbench.errors import PescError
from workbench.pesc import elements as el
from workbench.pesc.document import (
    ACKNOWLEDGMENT,
    PESC_NAMESPACE_PREFIX,
    REQUEST,
    RESPONSE,
    TRANSCRIPT,
    PescDocument,
    as_document,
    schema_name,
    version_tuple,
)
from workbench.pesc.elements import Element, names
from workbench.pesc.fields import gender, transcript_counts
from workbench.spec import HOLD_REASONS, NS_V1_0_0, PROCESS_CODES, RESPONSE_STATUSES

NOTE_LENGTH = 80  # core:NoteMessageType maxLength
ID_LENGTH = 35  # core:DocumentIDType / RequestTrackingIDType maxLength
ORGANIZATION_NAME_LENGTH = 60
DEFAULT_VERSION = "1.0.0"  # a namespace-less input is answered in the spec's family

# AcknowledgmentPersonType children taken from the transcript's Person, in schema order.
# Birth is rebuilt (its type differs: AcRec:BirthType has no BirthYear/Age); HighSchool,
# Residency and the like are not allowed in an acknowledgment (NOTES §9).
_ACK_PERSON = names(
    "SchoolAssignedPersonID SIN NSN AgencyAssignedID AgencyIdentifier RecipientAssignedID SSN "
    "PartialSSN Birth Name AlternateName Gender"
)
_BIRTHDAY = re.compile(r"^-*(0[1-9]|1[0-2])-?(0[1-9]|[12][0-9]|3[01])$")  # --MM-DD, MM-DD, MMDD
_PREFIX = {RESPONSE: "TrnResp", ACKNOWLEDGMENT: "TrnAck"}
# The Acknowledgment version of each CollegeTranscript version: the same AcademicRecord imports
# (1.4.0-1.5.0 inferred).
_ACK_FOR_TRANSCRIPT: dict[tuple[int, ...], str] = {
    (1, 0, 0): "1.0.0", (1, 1, 0): "1.0.0", (1, 2, 0): "1.0.0", (1, 3, 0): "1.1.0",
    (1, 4, 0): "1.2.0", (1, 5, 0): "1.2.0", (1, 6, 0): "1.3.0",
}  # fmt: skip


def namespace_for(message_type: str, version: str) -> str:
    """The namespace of a message of this type and version (the spec's for v1.0.0)."""
    if version == "1.0.0" and message_type in NS_V1_0_0:
        return NS_V1_0_0[message_type]
    return f"urn:org:pesc:message:{schema_name(message_type)}:v{version}"


def acknowledgment_version(transcript_version: str | None) -> str:
    """The Acknowledgment version of the family a CollegeTranscript version belongs to."""
    try:
        key = version_tuple(transcript_version or "")
    except ValueError:
        return "1.0.0"
    known = sorted(_ACK_FOR_TRANSCRIPT)
    nearest = known[-1] if key > known[-1] else known[0]
    return _ACK_FOR_TRANSCRIPT.get(key, _ACK_FOR_TRANSCRIPT[nearest])


def build_response(
    request: PescDocument | str | bytes,
    *,
    status: str = "TranscriptRequestReceived",
    hold_reason: str | None = None,
    planned_release_date: date | str | None = None,
    note: str | None = None,
    created: datetime | str | None = None,
    document_id: str | None = None,
    process_code: str | None = None,
) -> str:
    """A TranscriptResponse answering a TranscriptRequest, one Response per Request, as XML.

    A release date without a hold reason gets ``Other``; ``document_id`` defaults to the
    request's without dashes (what Mohawk sends), ``created`` to now.

    >>> build_response(request_xml, status="Hold", hold_reason="Financial", note="Fees owing")
    """
    doc = _input(request, REQUEST, "build_response")
    if status not in RESPONSE_STATUSES:
        raise ValueError(f"status must be one of {', '.join(RESPONSE_STATUSES)}; got {status!r}")
    if hold_reason is not None and hold_reason not in HOLD_REASONS:
        raise ValueError(
            f"hold_reason must be one of {', '.join(HOLD_REASONS)}; got {hold_reason!r}"
        )
    release = _date_text(planned_release_date)
    if release is not None and hold_reason is None:
        hold_reason = "Other"
    when = _datetime_text(created)
    notes = _note_pieces(note)

    top = el.children(doc.root)
    transmission = el.children(top.get("TransmissionData"))
    requests = el.children_named(doc.root, "Request")
    if not requests or any(el.find(r, "RequestedStudent") is None for r in requests):
        raise PescError(
            "The TranscriptRequest has no Request/RequestedStudent to answer; a response must "
            "echo the requested student. Check the request document.",
            reason="incomplete",
        )
    # Echoed, never shortened: a too-long one stays visible to validation.
    transmission_tracking = el.text(transmission.get("RequestTrackingID"))
    request_document_id = el.text(transmission.get("DocumentID"))
    if document_id is None:
        document_id = (request_document_id or "").replace("-", "")[:ID_LENGTH] or uuid.uuid4().hex

    namespace = namespace_for(RESPONSE, doc.version or DEFAULT_VERSION)
    qualified = f"{{{namespace}}}"
    root = etree.Element(qualified + RESPONSE, nsmap={_PREFIX[RESPONSE]: namespace})
    _transmission_data(
        etree.SubElement(root, qualified + "TransmissionData"),
        document_id=document_id,
        created=when,
        type_code="Response",
        answered=transmission,
        tracking_id=transmission_tracking
        or el.find_text(requests[0], "Recipient", "RequestTrackingID"),
        process_code=process_code,
    )
    for request_element in requests:
        response = etree.SubElement(root, qualified + "Response")
        request_tracking = (
            transmission_tracking
            or el.find_text(request_element, "Recipient", "RequestTrackingID")
            or request_document_id
            or document_id
        )
        recipient = el.find(request_element, "Recipient")
        _leaf(response, "CreatedDateTime", when)
        _leaf(response, "RequestTrackingID", request_tracking)
        _leaf(response, "RecipientTrackingID", el.find_text(recipient, "RecipientTrackingID"))
        _leaf(response, "ResponseStatus", status)
        if hold_reason is not None:
            hold = etree.SubElement(response, "ResponseHold")
            _leaf(hold, "HoldReason", hold_reason)
            _leaf(hold, "PlannedReleaseDate", release)
        response.append(_unqualified_copy(el.find(request_element, "RequestedStudent")))
        for piece in notes:
            _leaf(response, "NoteMessage", piece)
    return _serialize(root)


def build_acknowledgment(
    transcript: PescDocument | str | bytes,
    *,
    created: datetime | str | None = None,
    note: str | None = None,
    process_code: str | None = None,
    tracking_id: str | None = None,
) -> str:
    """An Acknowledgment of a CollegeTranscript, as XML: its awards and courses counted, its
    ids copied (``tracking_id`` and ``process_code`` when it states none).

    >>> build_acknowledgment(transcript_xml, note="Received, thank you")
    """
    doc = _input(transcript, TRANSCRIPT, "build_acknowledgment")
    when = _datetime_text(created)
    notes = _note_pieces(note)
    top = el.children(doc.root)
    transmission = el.children(top.get("TransmissionData"))
    student = top.get("Student")
    _sessions, awards, courses = transcript_counts(el.children_named(student, "AcademicRecord"))

    namespace = namespace_for(ACKNOWLEDGMENT, acknowledgment_version(doc.version))
    root = etree.Element(
        f"{{{namespace}}}{ACKNOWLEDGMENT}", nsmap={_PREFIX[ACKNOWLEDGMENT]: namespace}
    )
    _transmission_data(
        etree.SubElement(root, "TransmissionData"),
        document_id=el.text(transmission.get("DocumentID")) or uuid.uuid4().hex,
        created=when,
        type_code="Acknowledgment",
        answered=transmission,
        tracking_id=el.text(transmission.get("RequestTrackingID")) or tracking_id,
        process_code=process_code,
    )
    root.append(_acknowledgment_person(el.find(student, "Person")))
    _leaf(root, "AcademicAwardTotal", str(awards))
    _leaf(root, "CourseTotal", str(courses))
    for piece in notes:
        _leaf(root, "NoteMessage", piece)
    return _serialize(root)


def _input(value: PescDocument | str | bytes, expected: str, builder: str) -> PescDocument:
    doc = as_document(value)
    if doc.message_type != expected:
        raise PescError(
            f"{builder}() answers a {expected}, but this document is a {doc.message_type}.",
            reason="wrong-message",
        )
    return doc


def _transmission_data(
    parent: Element,
    *,
    document_id: str,
    created: str,
    type_code: str,
    answered: dict[str, Element],
    tracking_id: str | None,
    process_code: str | None,
) -> None:
    """TransmissionData answering another's: Source and Destination swapped, its code copied."""
    _leaf(parent, "DocumentID", document_id)
    _leaf(parent, "CreatedDateTime", created)
    _leaf(parent, "DocumentTypeCode", type_code)
    _leaf(parent, "TransmissionType", "Original")
    for side, other in (("Source", "Destination"), ("Destination", "Source")):
        organization = el.find(answered.get(other), "Organization")
        etree.SubElement(etree.SubElement(parent, side), "Organization").extend(
            _organization_parts(organization)
        )
    copied = (el.text(answered.get("DocumentProcessCode")) or "").upper()
    code = copied if copied in PROCESS_CODES else process_code
    if code is not None and code not in PROCESS_CODES:
        raise ValueError(f"process_code must be one of {', '.join(PROCESS_CODES)}; got {code!r}")
    _leaf(parent, "DocumentProcessCode", code)
    _leaf(parent, "RequestTrackingID", tracking_id)


def _organization_parts(organization: Element | None) -> list[Element]:
    """Identifier elements and the first OrganizationName, in the order the schemas want."""
    found = el.children(organization)
    first = {tag: next(iter(el.texts(organization, tag)), None) for tag in found}  # non-blank
    parts = [E(tag, value) for tag in el.ORGANIZATION_ID_TYPES if (value := first.get(tag))]
    if "LocalOrganizationID" in found:
        parts.append(_unqualified_copy(found["LocalOrganizationID"]))
    if name := first.get("OrganizationName"):
        parts.append(E("OrganizationName", name[:ORGANIZATION_NAME_LENGTH]))
    return parts


def _acknowledgment_person(person: Element | None) -> Element:
    """The student as an AcknowledgmentPersonType: ids and names copied, Birth and Gender rebuilt
    (mending real transcripts' ``Birthdate``, ``Birthday`` 1210 and ``<Gender><Gender>``)."""
    result = etree.Element("Person")
    for name in _ACK_PERSON:
        nodes = el.children_named(person, name)
        if name == "Birth":
            _birth(result, nodes[0] if nodes else None)
        elif name == "Gender":
            code = gender(nodes[0]) if nodes else None
            if code is not None:
                _leaf(etree.SubElement(result, "Gender"), "GenderCode", code)
        elif name == "Name" and not nodes:
            etree.SubElement(result, "Name")  # required; an empty Name is valid
        else:
            result.extend(_unqualified_copy(node) for node in nodes)
    return result


def _birth(parent: Element, birth: Element | None) -> None:
    parts = el.children(birth)
    birth_date = el.text(parts.get("BirthDate")) or el.text(parts.get("Birthdate"))
    birthday = el.text(parts.get("Birthday"))
    if birthday is not None:
        match = _BIRTHDAY.match(birthday)
        birthday = f"--{match.group(1)}-{match.group(2)}" if match else birthday
    if birth_date is None and birthday is None:
        return
    node = etree.SubElement(parent, "Birth")
    _leaf(node, "BirthDate", birth_date)
    _leaf(node, "Birthday", birthday)


def _unqualified_copy(element: Element) -> Element:
    """A deep copy without PESC namespaces (``UserDefinedExtensions`` keeps its own)."""
    result = copy.deepcopy(element)
    for node in result.iter(el.ELEMENTS):
        extension = any(el.local(a.tag) == "UserDefinedExtensions" for a in node.iterancestors())
        if not extension and node.tag.startswith("{" + PESC_NAMESPACE_PREFIX):
            node.tag = el.local(node.tag)
    etree.cleanup_namespaces(result)
    return result


def _leaf(parent: Element, name: str, value: str | None) -> None:
    if value is not None:
        etree.SubElement(parent, name).text = value


def _datetime_text(value: datetime | str | None) -> str:
    """xs:dateTime text; a naive datetime is taken as UTC, None means now."""
    if value is None:
        value = datetime.now(UTC)
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.isoformat(timespec="seconds")


def _date_text(value: date | str | None) -> str | None:
    if isinstance(value, datetime):
        value = value.date()
    try:
        return None if value is None else date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise ValueError(
            f"planned_release_date must be a date or 'YYYY-MM-DD'; got {value!r}"
        ) from None


def _note_pieces(note: str | None) -> list[str]:
    """NoteMessages for a note: whitespace collapsed, at most 80 characters each."""
    return textwrap.wrap(" ".join((note or "").split()), NOTE_LENGTH, break_on_hyphens=False)


def _serialize(root: Element) -> str:
    etree.indent(root, space="  ")
    body = etree.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
