"""One flat record of the headline fields of a PESC message, its keys fixed per kind (``KEYS``).

A request's and a response's fields come from the first Request/Recipient or Response/hold, with
counts of all; ``request_tracking_id`` is TransmissionData's, else the first Recipient's or
Response's; ``student_oen`` is the AgencyIdentifier "Ontario Education Number", else canpesc's
State/Province ON; ``note`` joins the message's own NoteMessages.

Is it the same student? :func:`differing_fields`, the one rule of sends and the reconciliation:
case, accents, Unicode forms, spaces and punctuation are forgiven, a letter or digit is not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

import pandas as pd

from workbench.pesc import elements as el
from workbench.pesc.document import ACKNOWLEDGMENT, REQUEST, RESPONSE, PescDocument, as_document
from workbench.pesc.elements import Element, mapping, names

COMMON_KEYS = names(
    "message_type version namespace document_id created_at document_type_code transmission_type "
    "source_org_id_type source_org_id source_org_name destination_org_id_type destination_org_id "
    "destination_org_name process_code official_code complete_code request_tracking_id"
)
STUDENT_KEYS = tuple(
    f"student_{key}"
    for key in names(
        "school_assigned_id agency_assigned_id oen ocas_account ocas_application first_name "
        "middle_name last_name birth_date birthday gender"
    )
)
REQUEST_KEYS = names(
    "request_created_at request_count recipient_count release_authorized attendance_school_name "
    "attendance_school_id_type attendance_school_id hold_type transcript_type transcript_purpose "
    "delivery_method note"
)
RESPONSE_KEYS = names(
    "response_created_at response_count response_request_tracking_id recipient_tracking_id "
    "response_status hold_reason planned_release_date note"
)
TRANSCRIPT_KEYS = names(
    "academic_record_count session_count award_count course_count school_name school_id_type "
    "school_id note"
)
ACKNOWLEDGMENT_KEYS = ("academic_award_total", "course_total", "note")

# "other": a PESC root we only know the envelope of.
KEYS = {
    "request": COMMON_KEYS + STUDENT_KEYS + REQUEST_KEYS,
    "response": COMMON_KEYS + STUDENT_KEYS + RESPONSE_KEYS,
    "transcript": COMMON_KEYS + STUDENT_KEYS + TRANSCRIPT_KEYS,
    "acknowledgment": COMMON_KEYS + STUDENT_KEYS + ACKNOWLEDGMENT_KEYS,
    "other": COMMON_KEYS,
}
_TRANSMISSION = mapping(
    "DocumentID CreatedDateTime DocumentTypeCode TransmissionType DocumentProcessCode "
    "DocumentOfficialCode DocumentCompleteCode RequestTrackingID",
    "document_id created_at document_type_code transmission_type process_code official_code "
    "complete_code request_tracking_id",
)
_RECIPIENT = mapping("TranscriptType TranscriptPurpose", "transcript_type transcript_purpose")
_RESPONSE = mapping(
    "CreatedDateTime RequestTrackingID RecipientTrackingID ResponseStatus",
    "response_created_at response_request_tracking_id recipient_tracking_id response_status",
)
HOLD_FIELDS = mapping("HoldReason PlannedReleaseDate", "hold_reason planned_release_date")
_KIND = {REQUEST: "request", RESPONSE: "response", ACKNOWLEDGMENT: "acknowledgment"}


def kind_of(doc: PescDocument, top: dict[str, Element] | None = None) -> str:
    """request / response / transcript / acknowledgment / other."""
    if kind := _KIND.get(doc.message_type):
        return kind
    return "transcript" if "Student" in (top or el.children(doc.root)) else "other"


def flatten(doc_or_xml: PescDocument | str | bytes) -> dict[str, Any]:
    """One flat record of a message's headline fields.

    >>> flatten(xml_text)["course_count"]
    58
    """
    doc = as_document(doc_or_xml)
    root = doc.root
    top = el.children(root)
    kind = kind_of(doc, top)
    row: dict[str, Any] = dict.fromkeys(KEYS[kind])
    row.update(message_type=doc.message_type, version=doc.version, namespace=doc.namespace)
    _transmission(row, top.get("TransmissionData"))
    if kind == "request":
        _request(row, root)
    elif kind == "response":
        _response(row, root)
    elif kind == "transcript":
        _transcript(row, root, top.get("Student"))
    elif kind == "acknowledgment":
        row.update(student_fields(top.get("Person")))
        row["academic_award_total"] = el.integer(el.text(top.get("AcademicAwardTotal")))
        row["course_total"] = el.integer(el.text(top.get("CourseTotal")))
        row["note"] = el.joined(el.texts(root, "NoteMessage"))
    return row


def transmission_kind(doc_or_xml: PescDocument | str | bytes) -> str | None:
    """A document's TransmissionType; ``Cancellation`` also for DocumentTypeCode ``Cancel`` and
    ``MutuallyDefined`` with a NoteMessage ``Cancellation`` (PESC has no Cancellation type)."""
    data = el.find(as_document(doc_or_xml).root, "TransmissionData")
    kind = el.find_text(data, "TransmissionType")
    said, code = (kind or "").lower(), (el.find_text(data, "DocumentTypeCode") or "").lower()
    noted = "cancellation" in {note.lower() for note in el.texts(data, "NoteMessage")}
    if said == "cancellation" or code == "cancel" or (said == "mutuallydefined" and noted):
        return "Cancellation"
    return kind


def environment_of(counts: Mapping[str | None, int]) -> str:
    """The environment of documents by DocumentProcessCode counts (None: not stated).

    >>> environment_of({"TEST": 12, None: 1})
    'TEST'
    """
    stated: dict[str, int] = {}
    for code, count in counts.items():
        word = str(code).strip().upper() if code is not None else ""
        if word and count:
            stated[word] = stated.get(word, 0) + int(count)
    if not stated:
        return "not stated"
    if len(stated) == 1:
        return next(iter(stated))
    return "mixed: " + ", ".join(f"{k} {v}" for k, v in sorted(stated.items()))


def _transmission(row: dict[str, Any], data: Element | None) -> None:
    fields = el.children(data)
    row.update(el.leaves(data, _TRANSMISSION))
    for side in ("source", "destination"):
        organization = el.find(fields.get(side.capitalize()), "Organization")
        row.update(el.organization(organization, f"{side}_org"))


def agency_kind(name: str | None, code: str | None, province: str | None) -> str | None:
    """oen / ocas_account / ocas_application / ouac, from an AgencyIdentifier's fields."""
    if name:
        folded = name.casefold()
        if "education number" in folded or folded == "oen":
            return "oen"
        if "ocas" in folded and "account" in folded:
            return "ocas_account"
        if "ocas" in folded and "application" in folded:
            return "ocas_application"
        if "ouac" in folded:
            return "ouac"
        return None
    if code in ("State", "Province") and province == "ON":
        return "oen"
    return None


_AGENCY = mapping(
    "AgencyAssignedID AgencyCode AgencyName CountryCode StateProvinceCode",
    "agency_assigned_id agency_code agency_name country_code state_province_code",
)


def agency_identifiers(person: Element | None) -> list[dict[str, Any]]:
    """The Person's AgencyIdentifier elements as dicts (with their ``kind``)."""
    rows = [el.leaves(node, _AGENCY) for node in el.children_named(person, "AgencyIdentifier")]
    for row in rows:
        row["kind"] = agency_kind(
            row["agency_name"], row["agency_code"], row["state_province_code"]
        )
    return rows


def student_fields(person: Element | None) -> dict[str, Any]:
    """The ``student_*`` keys of a Person element."""
    fields = el.children(person)
    name = el.children(fields.get("Name"))
    birth = el.children(fields.get("Birth"))
    row: dict[str, Any] = {
        "student_school_assigned_id": el.text(fields.get("SchoolAssignedPersonID")),
        "student_agency_assigned_id": el.text(fields.get("AgencyAssignedID")),
        "student_oen": None,
        "student_ocas_account": None,
        "student_ocas_application": None,
        "student_first_name": el.text(name.get("FirstName")),
        "student_middle_name": el.joined(el.texts(fields.get("Name"), "MiddleName")),
        "student_last_name": el.text(name.get("LastName")),
        "student_birth_date": el.text(birth.get("BirthDate")) or el.text(birth.get("Birthdate")),
        "student_birthday": el.text(birth.get("Birthday")),
        "student_gender": gender(fields.get("Gender")),
    }
    if "AgencyIdentifier" in fields:
        for agency in agency_identifiers(person):
            key = f"student_{agency['kind']}"
            if key in row and row[key] is None:
                row[key] = agency["agency_assigned_id"]
    return row


def gender(element: Element | None) -> str | None:
    """Gender/GenderCode, or Gender/Gender as real documents write it."""
    fields = el.children(element)
    return el.text(fields.get("GenderCode")) or el.text(fields.get("Gender"))


def _request(row: dict[str, Any], root: Element) -> None:
    requests = el.children_named(root, "Request")
    request = requests[0] if requests else None
    fields = el.children(request)
    student = el.children(fields.get("RequestedStudent"))
    recipient = el.children(fields.get("Recipient"))
    row.update(student_fields(student.get("Person")))
    row["request_created_at"] = el.text(fields.get("CreatedDateTime"))
    row["request_count"] = len(requests)
    row["recipient_count"] = sum(len(el.children_named(r, "Recipient")) for r in requests)
    row["release_authorized"] = el.boolean(el.text(student.get("ReleaseAuthorizedIndicator")))
    row.update(el.organization(el.find(student.get("Attendance"), "School"), "attendance_school"))
    row["hold_type"] = el.find_text(recipient.get("TranscriptHold"), "HoldType")
    row.update(el.leaves(fields.get("Recipient"), _RECIPIENT))
    row["delivery_method"] = el.joined(el.texts(fields.get("Recipient"), "DeliveryMethod"), ", ")
    row["note"] = el.joined(el.texts(root, "NoteMessage") + el.texts(request, "NoteMessage"))
    if row["request_tracking_id"] is None:
        row["request_tracking_id"] = el.text(recipient.get("RequestTrackingID"))


def _response(row: dict[str, Any], root: Element) -> None:
    responses = el.children_named(root, "Response")
    response = responses[0] if responses else None
    holds = el.children_named(response, "ResponseHold")
    row.update(student_fields(el.find(response, "RequestedStudent", "Person")))
    row.update(el.leaves(response, _RESPONSE), response_count=len(responses))
    row.update(el.leaves(holds[0] if holds else None, HOLD_FIELDS))
    notes = [note for node in (root, response, *holds) for note in el.texts(node, "NoteMessage")]
    row["note"] = el.joined(notes)
    row["request_tracking_id"] = row["request_tracking_id"] or row["response_request_tracking_id"]


def _transcript(row: dict[str, Any], root: Element, student: Element | None) -> None:
    fields = el.children(student)
    records = el.children_named(student, "AcademicRecord")
    row.update(student_fields(fields.get("Person")))
    row["academic_record_count"] = len(records)
    row["session_count"], row["award_count"], row["course_count"] = transcript_counts(records)
    row.update(el.organization(el.find(records[0] if records else None, "School"), "school"))
    row["note"] = el.joined(el.texts(root, "NoteMessage"))


def transcript_counts(records: list[Element]) -> tuple[int, int, int]:
    """(sessions, awards, courses) of AcademicRecords, counted at record and session level."""
    sessions = [node for record in records for node in record.iterchildren("{*}AcademicSession")]
    parts = [
        el.local(node.tag)
        for parent in (*records, *sessions)
        for node in parent.iterchildren("{*}AcademicAward", "{*}Course")
    ]
    return len(sessions), parts.count("AcademicAward"), parts.count("Course")


IDENTITY = names(
    "student_first_name student_last_name student_birth_date student_oen student_ocas_account "
    "student_ocas_application student_school_assigned_id"
)
_NOT_ALNUM = re.compile(r"[\W_]+")  # \w is str.isalnum() and "_"
_DOTLESS = str.maketrans({"ı": "i"})  # Turkish: "ISMAIL" is "ısmail" there, "ismail" here


def comparable(value: Any, field: str) -> str | None:
    """``value`` as compared: a birth date on its first 10 characters, a name or id on its letters
    and digits, case-folded, accents dropped, forms made plain; None when missing (not compared)."""
    if not isinstance(value, str):
        if pd.api.types.is_scalar(value) and pd.isna(value):
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # an id read as a number
        value = str(value)
    if field == "student_birth_date":
        if not value.isascii():  # full-width digits made plain, invisible characters gone
            plain = unicodedata.normalize("NFKC", value)
            value = "".join(c for c in plain if unicodedata.category(c) != "Cf")
        text = value.strip()[:10]
    elif value.isascii():
        text = _NOT_ALNUM.sub("", value.casefold())
    else:  # combining accents are no letters: NFKD splits them off, and they go
        text = _NOT_ALNUM.sub(
            "", unicodedata.normalize("NFKD", value.translate(_DOTLESS).casefold())
        )
    return text or None


def differing_fields(
    request_fields: Mapping[str, Any], transcript_fields: Mapping[str, Any]
) -> tuple[str, ...]:
    """The :data:`IDENTITY` fields present on both sides whose :func:`comparable` values differ."""
    differ = []
    for field in IDENTITY:
        ours = comparable(request_fields.get(field), field)
        theirs = comparable(transcript_fields.get(field), field)
        if ours is not None and theirs is not None and ours != theirs:
            differ.append(field)
    return tuple(differ)


def described(fields: tuple[str, ...]) -> str:
    """Identity field names as words, for a message: "last name and birth date"."""
    words = [f.removeprefix("student_").replace("_", " ") for f in fields]
    words = [w.replace("oen", "OEN").replace("ocas", "OCAS") for w in words]
    return "".join(words) if len(words) <= 1 else ", ".join(words[:-1]) + " and " + words[-1]
