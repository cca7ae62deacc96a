"""Child tables of a PESC message (``TABLES``): the repeated parts, one row each, as dicts
(``records``) or as pandas DataFrames (``to_frames``, DESIGN §5) typed by column name, so that an
empty table has the dtypes of a full one; unreadable values are NA.

``*_index`` columns are 0-based and link the tables of one document (``session_index`` None:
listed under the academic record); ``notes`` has every NoteMessage, its parent's path as context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from workbench.pesc import elements as el
from workbench.pesc.document import PescDocument, as_document
from workbench.pesc.elements import Element, mapping, names
from workbench.pesc.fields import HOLD_FIELDS, agency_identifiers, flatten, kind_of

Row = dict[str, Any]

COURSE_FIELDS = mapping(
    "CourseCreditBasis CourseCreditUnits CourseCreditLevel CourseCreditValue CourseCreditEarned "
    "CourseAcademicGradeScaleCode CourseAcademicGrade CourseQualityPointsEarned "
    "CourseSubjectAbbreviation CourseNumber CourseTitle CourseBeginDate CourseEndDate NoteMessage",
    "credit_basis credit_units credit_level credit_value credit_earned grade_scale_code grade "
    "quality_points subject number title begin_date end_date note",
)
AWARD_FIELDS = mapping(
    "AcademicAwardLevel AcademicAwardDate AcademicAwardTitle AcademicCompletionIndicator "
    "AcademicCompletionDate",
    "award_level award_date award_title completion_indicator completion_date",
)
GPA_FIELDS = mapping(
    "GradePointAverage CreditHoursAttempted CreditHoursEarned TotalQualityPoints",
    "gpa credit_hours_attempted credit_hours_earned total_quality_points",
)
_SESSION = mapping(
    "SessionDesignator SessionName SessionType SessionBeginDate SessionEndDate",
    "session_designator session_name session_type begin_date end_date",
)
_PROGRAM = mapping("AcademicProgramName AcademicProgramType", "program_name program_type")
_RECIPIENT = mapping(
    "RequestTrackingID RecipientTrackingID TranscriptType TranscriptPurpose DocumentOfficialCode",
    "request_tracking_id recipient_tracking_id transcript_type transcript_purpose official_code",
)
_RESPONSE = mapping(
    "CreatedDateTime RequestTrackingID RecipientTrackingID ResponseStatus",
    "created_at request_tracking_id recipient_tracking_id response_status",
)
_ATTENDANCE = mapping(
    "EnrollDate ExitDate CurrentEnrollmentIndicator", "enroll_date exit_date current_enrollment"
)
_AWARDS = mapping("AcademicAwardTitle AcademicAwardDate", "award_title award_date")
_HOLD = mapping(
    "HoldType SessionDesignator SessionName ReleaseDate",
    "hold_type hold_session_designator hold_session_name hold_release_date",
)
GPA = tuple(GPA_FIELDS.values())

_COLUMNS: dict[str, tuple[str, ...]] = {
    "agency_ids": names(
        "agency_assigned_id agency_code agency_name country_code state_province_code kind"
    ),
    "notes": ("context", "note"),
    "recipients": names(
        "request_index recipient_index request_tracking_id recipient_tracking_id receiver_name "
        "receiver_id_type receiver_id transcript_type transcript_purpose hold_type "
        "hold_session_designator hold_session_name hold_release_date delivery_method "
        "electronic_format transcript_copies official_code"
    ),
    "attendance": names(
        "request_index attendance_index school_name school_id_type school_id enroll_date "
        "exit_date current_enrollment award_title award_date"
    ),
    "responses": names(
        "response_index created_at request_tracking_id recipient_tracking_id response_status "
        "hold_reason planned_release_date hold_count"
    ),
    "holds": names("response_index hold_index hold_reason planned_release_date note"),
    "academic_records": names(
        "record_index school_name school_id_type school_id student_level session_count "
        "award_count course_count summary_type"
    )
    + GPA,
    "sessions": names(
        "record_index session_index session_designator session_name session_type begin_date "
        "end_date program_name award_count course_count"
    )
    + GPA,
    "courses": names("record_index session_index course_index session_designator session_name")
    + tuple(COURSE_FIELDS.values()),
    "awards": names("record_index session_index award_index")
    + tuple(AWARD_FIELDS.values())
    + ("program_name", "program_type"),
}
TABLES = {name: ("document_id", *columns) for name, columns in _COLUMNS.items()}


def records(doc_or_xml: PescDocument | str | bytes) -> dict[str, list[Row]]:
    """Every child table of a message (empty where it has none) as lists of dicts.

    >>> records(xml_text)["courses"][0]["grade"]
    'C'
    """
    doc = as_document(doc_or_xml)
    root = doc.root
    top = el.children(root)
    document_id = el.find_text(top.get("TransmissionData"), "DocumentID")
    tables: dict[str, list[Row]] = {name: [] for name in TABLES}
    kind = kind_of(doc, top)
    person = top.get("Person")  # an acknowledgment's
    if kind == "request":
        person = _requests(tables, root, document_id)
    elif kind == "response":
        person = _responses(tables, root, document_id)
    elif kind == "transcript":
        student = top.get("Student")
        person = el.find(student, "Person")
        for index, record in enumerate(el.children_named(student, "AcademicRecord")):
            _record(tables, record, {"document_id": document_id, "record_index": index})
    elif kind != "acknowledgment":
        person = None
    tables["agency_ids"] = [
        {"document_id": document_id, **agency} for agency in agency_identifiers(person)
    ]
    tables["notes"] = [
        {"document_id": document_id, "context": el.context_path(node, root), "note": note}
        for node in root.iter("{*}NoteMessage")
        if (note := el.text(node))
    ]
    # Each row as its table's columns, in their order.
    return {
        name: [{c: row.get(c) for c in TABLES[name]} for row in rows]
        for name, rows in tables.items()
    }


def _requests(tables: dict[str, list[Row]], root: Element, document_id: str | None) -> Any:
    person = None
    for request_index, request in enumerate(el.children_named(root, "Request")):
        requested = el.find(request, "RequestedStudent")
        person = person if person is not None else el.find(requested, "Person")
        base = {"document_id": document_id, "request_index": request_index}
        for index, recipient in enumerate(el.children_named(request, "Recipient")):
            tables["recipients"].append(_recipient(recipient, {**base, "recipient_index": index}))
        for index, attendance in enumerate(el.children_named(requested, "Attendance")):
            awards = el.find(attendance, "AcademicAwardsReported")
            row: Row = {**el.leaves(attendance, _ATTENDANCE), **el.leaves(awards, _AWARDS)}
            row["current_enrollment"] = el.boolean(row["current_enrollment"])
            row |= el.organization(el.find(attendance, "School"), "school")
            tables["attendance"].append({**base, "attendance_index": index, **row})
    return person


def _recipient(recipient: Element, base: Row) -> Row:
    fields = el.children(recipient)
    receiver = el.children(fields.get("Receiver"))
    organization = el.organization(receiver.get("RequestorReceiverOrganization"), "receiver")
    if "RequestorReceiverOrganization" not in receiver:
        person_name = el.children(el.find(receiver.get("Person"), "Name"))
        parts = [el.text(person_name.get(part)) for part in ("FirstName", "LastName")]
        organization["receiver_name"] = " ".join(part for part in parts if part) or None
    return {
        **base,
        **el.leaves(recipient, _RECIPIENT),
        **el.leaves(fields.get("TranscriptHold"), _HOLD),
        **organization,
        "delivery_method": el.joined(el.texts(recipient, "DeliveryMethod"), ", "),
        "electronic_format": el.find_text(fields.get("ElectronicDelivery"), "ElectronicFormat"),
        "transcript_copies": el.integer(el.text(fields.get("TranscriptCopies"))),
    }


def _responses(tables: dict[str, list[Row]], root: Element, document_id: str | None) -> Any:
    person = None
    for response_index, response in enumerate(el.children_named(root, "Response")):
        person = person if person is not None else el.find(response, "RequestedStudent", "Person")
        base = {"document_id": document_id, "response_index": response_index}
        holds = el.children_named(response, "ResponseHold")
        tables["holds"] += [
            {**base, "hold_index": index, **el.leaves(hold, HOLD_FIELDS)}
            | {"note": el.joined(el.texts(hold, "NoteMessage"))}
            for index, hold in enumerate(holds)
        ]
        tables["responses"].append(
            {**base, **el.leaves(response, _RESPONSE)}
            | el.leaves(holds[0] if holds else None, HOLD_FIELDS)
            | {"hold_count": len(holds)}
        )
    return person


def _record(tables: dict[str, list[Row]], record: Element, base: Row) -> None:
    """An AcademicRecord's row, and its sessions', courses' and awards' (indexed within it)."""
    row: Row = {
        **base,
        **el.organization(el.find(record, "School"), "school"),
        "student_level": el.find_text(record, "StudentLevel", "StudentLevelCode"),
        **_summary(el.children_named(record, "AcademicSummary")),
    }
    courses, awards = tables["courses"], tables["awards"]
    first_course, first_award = len(courses), len(awards)
    row["session_count"] = _parts(tables, record, base, None)
    for index, course in enumerate(courses[first_course:]):
        course["course_index"] = index
    for index, award in enumerate(awards[first_award:]):
        award["award_index"] = index
    row["course_count"] = len(courses) - first_course
    row["award_count"] = len(awards) - first_award
    tables["academic_records"].append(row)


def _parts(tables: dict[str, list[Row]], parent: Element, base: Row, index: int | None) -> int:
    """Rows of the courses, awards and sessions of an AcademicRecord (``index`` None) or of its
    AcademicSession ``index``; how many sessions."""
    session = el.leaves(el.find(parent, "AcademicSessionDetail"), _SESSION)
    template = {**base, "session_index": index, "course_index": None}
    template |= {key: session[key] for key in ("session_designator", "session_name")}
    courses, awards = tables["courses"], tables["awards"]
    counts, sessions = (len(courses), len(awards)), 0
    for node in parent.iterchildren("{*}Course", "{*}AcademicAward", "{*}AcademicSession"):
        tag = el.local(node.tag)
        if tag == "Course":
            courses.append({**template, **el.leaves(node, COURSE_FIELDS)})
        elif tag == "AcademicAward":
            awards.append(_award(node, {**base, "session_index": index, "award_index": None}))
        elif index is None:
            _parts(tables, node, base, sessions)
            sessions += 1
    if index is None:
        return sessions
    tables["sessions"].append(
        {
            **base,
            "session_index": index,
            **session,
            "program_name": el.find_text(parent, "AcademicProgram", "AcademicProgramName"),
            "award_count": len(awards) - counts[1],
            "course_count": len(courses) - counts[0],
            **_summary(el.children_named(parent, "AcademicSummary")),
        }
    )
    return 0


def _award(award: Element, base: Row) -> Row:
    program = el.find(award, "AcademicAwardProgram")
    row: Row = {**base, **el.leaves(award, AWARD_FIELDS), **el.leaves(program, _PROGRAM)}
    row["completion_indicator"] = el.boolean(row["completion_indicator"])
    return row


def _summary(summaries: list[Element]) -> Row:
    """GPA figures of the cumulative summary if there is one, else of the first."""
    cumulative = [s for s in summaries if el.find_text(s, "AcademicSummaryType") == "Cumulative"]
    chosen = (cumulative or summaries or [None])[0]
    summary_type = el.find_text(chosen, "AcademicSummaryType")
    return {"summary_type": summary_type, **el.leaves(el.find(chosen, "GPA"), GPA_FIELDS)}


TIME_DTYPE = "datetime64[us, UTC]"  # as the API, the store and reconcile have times
# Columns typed by name; else ``*_index`` and ``*_count`` are Int64, the rest string.
DTYPES = {
    **dict.fromkeys(("created_at", "request_created_at", "response_created_at"), TIME_DTYPE),
    **dict.fromkeys(("academic_award_total", "course_total", "transcript_copies"), "Int64"),
    **dict.fromkeys(names("release_authorized current_enrollment completion_indicator"), "boolean"),
    **dict.fromkeys(names("credit_value credit_earned quality_points gpa credit_hours_attempted "
                          "credit_hours_earned total_quality_points"), "Float64"),
}  # fmt: skip


def to_frames(doc_or_xml: PescDocument | str | bytes) -> dict[str, pd.DataFrame]:
    """``{"document": flatten's row, <table>: records' rows, ...}``, attrs naming the message."""
    doc = as_document(doc_or_xml)
    row = flatten(doc)
    attrs = {"message_type": doc.message_type, "document_id": row["document_id"]}
    frames = {"document": frame([row], tuple(row))}
    frames |= {name: frame(rows, TABLES[name]) for name, rows in records(doc).items()}
    for df in frames.values():
        df.attrs.update(attrs)
    return frames


def dtype_of(column: str) -> str:
    """The dtype a column of this name gets."""
    return DTYPES.get(column) or ("Int64" if column.endswith(("_index", "_count")) else "string")


def frame(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A DataFrame of ``rows`` with exactly ``columns``, typed by ``dtype_of``."""
    data = {column: _array([row.get(column) for row in rows], column) for column in columns}
    return pd.DataFrame(data, columns=list(columns))


def _array(values: list[Any], column: str) -> Any:
    dtype = dtype_of(column)
    if dtype == TIME_DTYPE:  # xs:dateTime; no offset: UTC
        values = pd.to_datetime(
            pd.Series(values, dtype=object), errors="coerce", utc=True, format="ISO8601"
        )
    elif dtype == "Float64":
        values = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    return pd.array(values, dtype=dtype)
