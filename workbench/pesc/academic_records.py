"""The academic records of a transcript as rows: records, sessions, courses and awards.

Part of ``records`` (see ``tables``): one pass over each AcademicRecord's children and each
AcademicSession's, the course loop kept tight because a transcript carries tens of courses.
"""

from __future__ import annotations

from typing import Any

from workbench.pesc import elements as el
from workbench.pesc.elements import Element

Row = dict[str, Any]

# Course and award columns filled from the element's children, by child local name.
_COURSE_FIELDS = {
    "CourseCreditBasis": "credit_basis",
    "CourseCreditUnits": "credit_units",
    "CourseCreditLevel": "credit_level",
    "CourseCreditValue": "credit_value",
    "CourseCreditEarned": "credit_earned",
    "CourseAcademicGradeScaleCode": "grade_scale_code",
    "CourseAcademicGrade": "grade",
    "CourseQualityPointsEarned": "quality_points",
    "CourseSubjectAbbreviation": "subject",
    "CourseNumber": "number",
    "CourseTitle": "title",
    "CourseBeginDate": "begin_date",
    "CourseEndDate": "end_date",
    "NoteMessage": "note",
}
_AWARD_FIELDS = {
    "AcademicAwardLevel": "award_level",
    "AcademicAwardDate": "award_date",
    "AcademicAwardTitle": "award_title",
    "AcademicCompletionIndicator": "completion_indicator",
    "AcademicCompletionDate": "completion_date",
}
_GPA_FIELDS = {
    "GradePointAverage": "gpa",
    "CreditHoursAttempted": "credit_hours_attempted",
    "CreditHoursEarned": "credit_hours_earned",
    "TotalQualityPoints": "total_quality_points",
}

ACADEMIC_RECORD_COLUMNS = (
    "document_id",
    "record_index",
    "school_name",
    "school_id_type",
    "school_id",
    "student_level",
    "session_count",
    "award_count",
    "course_count",
    "summary_type",
    *_GPA_FIELDS.values(),
)
SESSION_COLUMNS = (
    "document_id",
    "record_index",
    "session_index",
    "session_designator",
    "session_name",
    "session_type",
    "begin_date",
    "end_date",
    "program_name",
    "award_count",
    "course_count",
    *_GPA_FIELDS.values(),
)
COURSE_COLUMNS = (
    "document_id",
    "record_index",
    "session_index",
    "course_index",
    "session_designator",
    "session_name",
    *_COURSE_FIELDS.values(),
)
AWARD_COLUMNS = (
    "document_id",
    "record_index",
    "session_index",
    "award_index",
    *_AWARD_FIELDS.values(),
    "program_name",
    "program_type",
)


def academic_tables(
    tables: dict[str, list[Row]], student: Element | None, document_id: Any
) -> None:
    """Append a transcript's academic_records, sessions, courses and awards rows to ``tables``."""
    for record_index, record in enumerate(el.children_named(student, "AcademicRecord")):
        base = {"document_id": document_id, "record_index": record_index}
        school_id_type, school_id, school_name = el.organization(el.child(record, "School"))
        row: Row = {
            **base,
            "school_name": school_name,
            "school_id_type": school_id_type,
            "school_id": school_id,
            "student_level": el.find_text(record, "StudentLevel", "StudentLevelCode"),
            "session_count": 0,
            "award_count": 0,
            "course_count": 0,
        }
        row.update(_summary(el.children_named(record, "AcademicSummary")))
        tables["academic_records"].append(row)
        courses, awards = tables["courses"], tables["awards"]
        first_course, first_award = len(courses), len(awards)
        session_index = 0
        template = _course_template(base, None, None, None)
        for node in record.iterchildren(el.ELEMENTS):
            name = el.local(node.tag)
            if name == "Course":
                courses.append(_course(node, template))
            elif name == "AcademicAward":
                awards.append(_award(node, base, None))
            elif name == "AcademicSession":
                _session(tables, node, base, session_index)
                session_index += 1
        # Indexes count within the record, in document order of their parents.
        for index, course in enumerate(courses[first_course:]):
            course["course_index"] = index
        for index, award in enumerate(awards[first_award:]):
            award["award_index"] = index
        row["session_count"] = session_index
        row["course_count"] = len(courses) - first_course
        row["award_count"] = len(awards) - first_award


def _session(tables: dict[str, list[Row]], session: Element, base: Row, index: int) -> None:
    detail = el.children(el.child(session, "AcademicSessionDetail"))
    designator = el.text(detail.get("SessionDesignator"))
    name = el.text(detail.get("SessionName"))
    courses, awards = tables["courses"], tables["awards"]
    course_count = award_count = 0
    summaries = []
    program_name = None
    template = _course_template(base, index, designator, name)
    for node in session.iterchildren(el.ELEMENTS):
        tag = el.local(node.tag)
        if tag == "Course":
            courses.append(_course(node, template))
            course_count += 1
        elif tag == "AcademicAward":
            awards.append(_award(node, base, index))
            award_count += 1
        elif tag == "AcademicSummary":
            summaries.append(node)
        elif tag == "AcademicProgram" and program_name is None:
            program_name = el.find_text(node, "AcademicProgramName")
    row = {
        **base,
        "session_index": index,
        "session_designator": designator,
        "session_name": name,
        "session_type": el.text(detail.get("SessionType")),
        "begin_date": el.text(detail.get("SessionBeginDate")),
        "end_date": el.text(detail.get("SessionEndDate")),
        "program_name": program_name,
        "award_count": award_count,
        "course_count": course_count,
    }
    summary = _summary(summaries)
    del summary["summary_type"]
    row.update(summary)
    tables["sessions"].append(row)


def _course_template(base: Row, session_index: int | None, designator: Any, name: Any) -> Row:
    """A course row with its context filled in and every course column None."""
    return {
        **base,
        "session_index": session_index,
        "course_index": None,
        "session_designator": designator,
        "session_name": name,
        **dict.fromkeys(_COURSE_FIELDS.values()),
    }


def _course(course: Element, template: Row) -> Row:
    # The hot loop of a transcript (tens of courses, a dozen children each): one pass over the
    # children, one dict lookup per child; comments and namespaced tags take the slow branch.
    row = template.copy()
    get = _COURSE_FIELDS.get
    for node in course:
        tag = node.tag
        key = get(tag)
        if key is None:
            if tag.__class__ is not str or tag[0] != "{":
                continue
            key = get(el.local(tag))
            if key is None:
                continue
        if row[key] is None:
            value = node.text
            if value is not None:
                row[key] = value.strip() or None
    return row


def _award(award: Element, base: Row, session_index: int | None) -> Row:
    fields = el.children(award)
    program = el.children(fields.get("AcademicAwardProgram"))
    row: Row = {**base, "session_index": session_index, "award_index": None}
    for tag, key in _AWARD_FIELDS.items():
        row[key] = el.text(fields.get(tag))
    row["completion_indicator"] = el.boolean(row["completion_indicator"])
    row["program_name"] = el.text(program.get("AcademicProgramName"))
    row["program_type"] = el.text(program.get("AcademicProgramType"))
    return row


def _summary(summaries: list[Element]) -> Row:
    """GPA figures of the cumulative summary if there is one, else of the first."""
    chosen = None
    for summary in summaries:
        if el.find_text(summary, "AcademicSummaryType") == "Cumulative":
            chosen = summary
            break
    if chosen is None and summaries:
        chosen = summaries[0]
    gpa = el.children(el.child(chosen, "GPA"))
    row: Row = {"summary_type": el.find_text(chosen, "AcademicSummaryType")}
    for tag, key in _GPA_FIELDS.items():
        row[key] = el.text(gpa.get(tag))
    return row
