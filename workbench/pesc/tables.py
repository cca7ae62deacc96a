"""Child tables of a PESC message: the repeated parts, one row each.

``records(doc)`` always returns every table below (empty where the message has none), and every
row has every column of its table (None when the element is missing). Each row carries the
message's ``document_id`` so tables of many documents can be stacked; ``*_index`` columns are
0-based positions that link the tables of one document (a course's ``record_index`` and
``session_index`` point at its academic record and session; ``session_index`` is None for a
course or award listed directly under the academic record).

==================  ===========================================================================
table               one row per
==================  ===========================================================================
agency_ids          AgencyIdentifier of the student's Person (``kind``: oen, ocas_account,
                    ocas_application, ouac or None)
notes               NoteMessage anywhere in the document (``context``: the path of its parent)
recipients          Request/Recipient (requests)
attendance          Request/RequestedStudent/Attendance (requests)
responses           Response (responses)
holds               Response/ResponseHold (responses)
academic_records    Student/AcademicRecord (transcripts)
sessions            AcademicRecord/AcademicSession (transcripts)
courses             Course, under an academic record or a session (transcripts)
awards              AcademicAward, under an academic record or a session (transcripts)
==================  ===========================================================================
"""

from __future__ import annotations

from typing import Any

from workbench.pesc import elements as el
from workbench.pesc.academic_records import (
    ACADEMIC_RECORD_COLUMNS,
    AWARD_COLUMNS,
    COURSE_COLUMNS,
    SESSION_COLUMNS,
    academic_tables,
)
from workbench.pesc.document import PescDocument, as_document
from workbench.pesc.elements import Element
from workbench.pesc.fields import agency_identifiers, kind_of

Row = dict[str, Any]

TABLES: dict[str, tuple[str, ...]] = {
    "agency_ids": (
        "document_id",
        "agency_assigned_id",
        "agency_code",
        "agency_name",
        "country_code",
        "state_province_code",
        "kind",
    ),
    "notes": ("document_id", "context", "note"),
    "recipients": (
        "document_id",
        "request_index",
        "recipient_index",
        "request_tracking_id",
        "recipient_tracking_id",
        "receiver_name",
        "receiver_id_type",
        "receiver_id",
        "transcript_type",
        "transcript_purpose",
        "hold_type",
        "hold_session_designator",
        "hold_session_name",
        "hold_release_date",
        "delivery_method",
        "electronic_format",
        "transcript_copies",
        "official_code",
    ),
    "attendance": (
        "document_id",
        "request_index",
        "attendance_index",
        "school_name",
        "school_id_type",
        "school_id",
        "enroll_date",
        "exit_date",
        "current_enrollment",
        "award_title",
        "award_date",
    ),
    "responses": (
        "document_id",
        "response_index",
        "created_at",
        "request_tracking_id",
        "recipient_tracking_id",
        "response_status",
        "hold_reason",
        "planned_release_date",
        "hold_count",
    ),
    "holds": (
        "document_id",
        "response_index",
        "hold_index",
        "hold_reason",
        "planned_release_date",
        "note",
    ),
    "academic_records": ACADEMIC_RECORD_COLUMNS,
    "sessions": SESSION_COLUMNS,
    "courses": COURSE_COLUMNS,
    "awards": AWARD_COLUMNS,
}


def records(doc_or_xml: PescDocument | str | bytes) -> dict[str, list[Row]]:
    """Every child table of a message as lists of dicts (tables: see the module docstring).

    >>> from workbench import pesc
    >>> tables = pesc.records(xml_text)
    >>> [(c["subject"], c["number"], c["grade"]) for c in tables["courses"]][:1]
    [('CANS', '100', 'C')]
    """
    doc = as_document(doc_or_xml)
    root = doc.root
    top = el.children(root)
    document_id = el.find_text(top.get("TransmissionData"), "DocumentID")
    tables: dict[str, list[Row]] = {name: [] for name in TABLES}
    kind = kind_of(doc, top)
    person = None
    if kind == "request":
        person = _requests(tables, root, document_id)
    elif kind == "response":
        person = _responses(tables, root, document_id)
    elif kind == "transcript":
        student = top.get("Student")
        person = el.child(student, "Person")
        academic_tables(tables, student, document_id)
    elif kind == "acknowledgment":
        person = top.get("Person")
    tables["agency_ids"] = [
        {"document_id": document_id, **agency} for agency in agency_identifiers(person)
    ]
    tables["notes"] = [
        {"document_id": document_id, "context": el.context_path(node, root), "note": note}
        for node in el.descendants(root, "NoteMessage")
        if (note := el.text(node))
    ]
    return tables


def _requests(tables: dict[str, list[Row]], root: Element, document_id: str | None) -> Any:
    person = None
    for request_index, request in enumerate(el.children_named(root, "Request")):
        requested = el.child(request, "RequestedStudent")
        if person is None:
            person = el.child(requested, "Person")
        for recipient_index, recipient in enumerate(el.children_named(request, "Recipient")):
            tables["recipients"].append(
                _recipient(recipient, document_id, request_index, recipient_index)
            )
        attendances = el.children_named(requested, "Attendance")
        for attendance_index, attendance in enumerate(attendances):
            fields = el.children(attendance)
            school_id_type, school_id, school_name = el.organization(fields.get("School"))
            awards = el.children(fields.get("AcademicAwardsReported"))
            tables["attendance"].append(
                {
                    "document_id": document_id,
                    "request_index": request_index,
                    "attendance_index": attendance_index,
                    "school_name": school_name,
                    "school_id_type": school_id_type,
                    "school_id": school_id,
                    "enroll_date": el.text(fields.get("EnrollDate")),
                    "exit_date": el.text(fields.get("ExitDate")),
                    "current_enrollment": el.boolean(
                        el.text(fields.get("CurrentEnrollmentIndicator"))
                    ),
                    "award_title": el.text(awards.get("AcademicAwardTitle")),
                    "award_date": el.text(awards.get("AcademicAwardDate")),
                }
            )
    return person


def _recipient(
    recipient: Element, document_id: str | None, request_index: int, recipient_index: int
) -> Row:
    fields = el.children(recipient)
    receiver = el.children(fields.get("Receiver"))
    hold = el.children(fields.get("TranscriptHold"))
    if "RequestorReceiverOrganization" in receiver:
        id_type, id_value, name = el.organization(receiver["RequestorReceiverOrganization"])
    else:
        person_name = el.children(el.child(receiver.get("Person"), "Name"))
        parts = [el.text(person_name.get(part)) for part in ("FirstName", "LastName")]
        id_type = id_value = None
        name = " ".join(part for part in parts if part) or None
    methods = el.texts(recipient, "DeliveryMethod")
    return {
        "document_id": document_id,
        "request_index": request_index,
        "recipient_index": recipient_index,
        "request_tracking_id": el.text(fields.get("RequestTrackingID")),
        "recipient_tracking_id": el.text(fields.get("RecipientTrackingID")),
        "receiver_name": name,
        "receiver_id_type": id_type,
        "receiver_id": id_value,
        "transcript_type": el.text(fields.get("TranscriptType")),
        "transcript_purpose": el.text(fields.get("TranscriptPurpose")),
        "hold_type": el.text(hold.get("HoldType")),
        "hold_session_designator": el.text(hold.get("SessionDesignator")),
        "hold_session_name": el.text(hold.get("SessionName")),
        "hold_release_date": el.text(hold.get("ReleaseDate")),
        "delivery_method": ", ".join(methods) if methods else None,
        "electronic_format": el.find_text(fields.get("ElectronicDelivery"), "ElectronicFormat"),
        "transcript_copies": el.integer(el.text(fields.get("TranscriptCopies"))),
        "official_code": el.text(fields.get("DocumentOfficialCode")),
    }


def _responses(tables: dict[str, list[Row]], root: Element, document_id: str | None) -> Any:
    person = None
    for response_index, response in enumerate(el.children_named(root, "Response")):
        fields = el.children(response)
        if person is None:
            person = el.child(fields.get("RequestedStudent"), "Person")
        holds = el.children_named(response, "ResponseHold")
        first_hold: Row = {}
        for hold_index, hold in enumerate(holds):
            hold_fields = el.children(hold)
            notes = el.texts(hold, "NoteMessage")
            row = {
                "document_id": document_id,
                "response_index": response_index,
                "hold_index": hold_index,
                "hold_reason": el.text(hold_fields.get("HoldReason")),
                "planned_release_date": el.text(hold_fields.get("PlannedReleaseDate")),
                "note": " ".join(notes) if notes else None,
            }
            tables["holds"].append(row)
            first_hold = first_hold or row
        tables["responses"].append(
            {
                "document_id": document_id,
                "response_index": response_index,
                "created_at": el.text(fields.get("CreatedDateTime")),
                "request_tracking_id": el.text(fields.get("RequestTrackingID")),
                "recipient_tracking_id": el.text(fields.get("RecipientTrackingID")),
                "response_status": el.text(fields.get("ResponseStatus")),
                "hold_reason": first_hold.get("hold_reason"),
                "planned_release_date": first_hold.get("planned_release_date"),
                "hold_count": len(holds),
            }
        )
    return person
