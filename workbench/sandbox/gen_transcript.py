"""The body of a generated CollegeTranscript: a college's record of one student, sent via OCAS.

Shape follows the canpesc Ontario sample: awards (with a cumulative GPA) at the top of an
AcademicRecord, then a GPA summary, terms with their courses, and exemptions at record level.
Grades drive the GPA figures, so totals and averages agree with the courses listed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from lxml import etree

from workbench.sandbox import gen_pools as pools
from workbench.sandbox.gen_parts import (
    Term,
    draw_student,
    leaf,
    node,
    ocas,
    organization,
    person,
    school,
    transmission_data,
)

_GRADE_NAMES = [g for g, _, _ in pools.GRADES]
_GRADE_WEIGHTS = [w for _, _, w in pools.GRADES]
_GRADE_POINTS = {g: p for g, p, _ in pools.GRADES}
# Credit units and the credit values that go with them.
_UNITS = (("Semester", (3.0, 3.0, 4.0, 2.0)), ("ClockHours", (42.0, 45.0, 56.0, 28.0)))


@dataclass
class _Tally:
    """Credit and grade-point sums behind a GPA element."""

    attempted: float = 0.0
    earned: float = 0.0
    gpa_credits: float = 0.0
    quality_points: float = 0.0

    def add(self, other: _Tally) -> None:
        self.attempted += other.attempted
        self.earned += other.earned
        self.gpa_credits += other.gpa_credits
        self.quality_points += other.quality_points

    @property
    def average(self) -> float:
        return self.quality_points / self.gpa_credits if self.gpa_credits else 0.0

    def gpa(self, units: str) -> etree._Element:
        return node(
            "GPA",
            leaf("CreditHoursAttempted", f"{self.attempted:.1f}"),
            leaf("CreditHoursEarned", f"{self.earned:.1f}"),
            leaf("CreditUnit", units),
            leaf("GradePointAverage", f"{self.average:.2f}"),
            leaf("TotalQualityPoints", f"{self.quality_points:.2f}"),
            leaf("CreditHoursforGPA", f"{self.gpa_credits:.1f}"),
        )


@dataclass(frozen=True)
class _Plan:
    """How many courses one AcademicRecord holds and how they spread over its terms."""

    session_sizes: list[int]
    transfers: int


def transcript_parts(
    rng: random.Random, *, request_id: str, created: datetime, created_text: str, document_id: str
) -> list[etree._Element]:
    """``TransmissionData`` and ``Student`` of a transcript with 5..40 courses in 1..2 records."""
    student = draw_student(rng, created)
    sender = rng.choice(pools.COLLEGES)
    plans = _plan(rng)
    terms = _terms_before(rng, created, sum(len(p.session_sizes) for p in plans))
    records = []
    for plan in plans:
        mine, terms = terms[: len(plan.session_sizes)], terms[len(plan.session_sizes) :]
        records.append(_record(rng, sender, plan, mine, created))
    return [
        transmission_data(
            document_id=document_id,
            created=created_text,
            type_code="RequestedRecord",
            source=organization(sender[1], sender[2], sender[0]),
            destination=ocas(),
            request_id=request_id,
            official=True,
        ),
        node("Student", person(student), records),
    ]


def _plan(rng: random.Random) -> list[_Plan]:
    total = rng.randint(5, 40)
    if rng.random() < 0.3:
        first = rng.randint(2, total - 2)
        allotments = [first, total - first]
    else:
        allotments = [total]
    plans = []
    for allotment in allotments:
        transfers = min(rng.choice((0, 0, 0, 1, 2)), allotment - 1)
        in_sessions = allotment - transfers
        count = max(1, round(in_sessions / rng.uniform(3.5, 6.5)))
        base, extra = divmod(in_sessions, count)
        sizes = [base + (1 if k < extra else 0) for k in range(count)]
        plans.append(_Plan(sizes, transfers))
    return plans


def _terms_before(rng: random.Random, created: datetime, count: int) -> list[Term]:
    """``count`` finished terms, oldest first; most students skip most summers."""
    term = Term.containing(created.date()).previous()
    terms: list[Term] = []
    while len(terms) < count:
        if term.month != 5 or rng.random() < 0.2:
            terms.append(term)
        term = term.previous()
    return terms[::-1]


def _record(
    rng: random.Random,
    sender: tuple[str, str, str],
    plan: _Plan,
    terms: list[Term],
    created: datetime,
) -> etree._Element:
    program, credential, level = rng.choice(pools.PROGRAMS)
    units, credit_values = rng.choice(_UNITS)
    courses = rng.sample(pools.COURSES, sum(plan.session_sizes))
    cumulative = _Tally()
    sessions = []
    for term, size in zip(terms, plan.session_sizes, strict=True):
        tally = _Tally()
        elements = [_course(rng, c, units, credit_values, tally) for c in courses[:size]]
        courses = courses[size:]
        cumulative.add(tally)
        sessions.append((term, elements, tally))

    # Awards: none while studying; one or two (a certificate on the way) for a finished program.
    awards: list[tuple[str, str, str]] = []
    if rng.random() < 0.55:
        awards.append((program, credential, level))
        if rng.random() < 0.3:
            awards.append(rng.choice([p for p in pools.PROGRAMS if p[0] != program]))
    award_day = min(terms[-1].end + timedelta(days=10), created.date())
    record_awards: list[etree._Element] = []
    session_awards: list[etree._Element] = []
    for award_program, title, award_level in awards:
        element = _award(award_program, title, award_level, award_day, cumulative, rng)
        (session_awards if rng.random() < 0.25 else record_awards).append(element)

    name, id_tag, id_value = sender
    return node(
        "AcademicRecord",
        school(name, id_tag, id_value),
        record_awards,
        node(
            "AcademicSummary",
            leaf("AcademicSummaryType", "All"),
            leaf("AcademicSummaryLevel", "Undergraduate"),
            cumulative.gpa(units),
        ),
        [
            node(
                "AcademicSession",
                term.detail(),
                node("AcademicProgram", leaf("AcademicProgramName", program)),
                session_awards if k == len(sessions) - 1 else None,
                elements,
                node("AcademicSummary", tally.gpa(units)),
            )
            for k, (term, elements, tally) in enumerate(sessions)
        ],
        [_transfer_course(rng, units, credit_values) for _ in range(plan.transfers)],
    )


def _course(
    rng: random.Random,
    course: tuple[str, str, str],
    units: str,
    credit_values: tuple[float, ...],
    tally: _Tally,
) -> etree._Element:
    subject, number, title = course
    credit = rng.choice(credit_values)
    grade = rng.choices(_GRADE_NAMES, _GRADE_WEIGHTS)[0]
    points = _GRADE_POINTS[grade]
    earned = 0.0 if grade in ("F", "W") else credit
    quality = None
    if grade != "W":
        tally.attempted += credit
    tally.earned += earned
    if points is not None:
        quality = credit * points
        tally.gpa_credits += credit
        tally.quality_points += quality
    return node(
        "Course",
        leaf("CourseCreditBasis", "Regular"),
        leaf("CourseCreditUnits", units),
        leaf("CourseCreditLevel", "Undergraduate"),
        leaf("CourseCreditValue", f"{credit:.1f}"),
        leaf("CourseCreditEarned", f"{earned:.1f}"),
        leaf("CourseAcademicGradeScaleCode", "04"),
        leaf("CourseAcademicGrade", grade),
        leaf("CourseQualityPointsEarned", None if quality is None else f"{quality:.2f}"),
        leaf("CourseSubjectAbbreviation", subject),
        leaf("CourseNumber", number),
        leaf("CourseTitle", title),
    )


def _transfer_course(
    rng: random.Random, units: str, credit_values: tuple[float, ...]
) -> etree._Element:
    """A record-level credit from elsewhere (the sample's "EC": exemption credit)."""
    subject, number, title = rng.choice(pools.TRANSFER_COURSES)
    credit = rng.choice(credit_values)
    return node(
        "Course",
        leaf("CourseCreditBasis", rng.choice(("Exemption", "AdvancedStanding", "Equivalence"))),
        leaf("CourseCreditUnits", units),
        leaf("CourseCreditValue", f"{credit:.1f}"),
        leaf("CourseCreditEarned", f"{credit:.1f}"),
        leaf("CourseSubjectAbbreviation", subject),
        leaf("CourseNumber", number),
        leaf("CourseTitle", title),
        leaf("NoteMessage", "EC"),
    )


def _award(
    program: str,
    title: str,
    level: str,
    day: date,
    cumulative: _Tally,
    rng: random.Random,
) -> etree._Element:
    honours = cumulative.average >= 3.5 and rng.random() < 0.7
    return node(
        "AcademicAward",
        leaf("AcademicAwardLevel", level),
        leaf("AcademicAwardDate", day.isoformat()),
        leaf("AcademicAwardTitle", title),
        node("AcademicHonors", leaf("HonorsTitle", "With Honours")) if honours else None,
        leaf("AcademicCompletionIndicator", "true"),
        leaf("AcademicCompletionDate", day.isoformat()),
        node(
            "AcademicAwardProgram",
            leaf("AcademicProgramType", "Major"),
            leaf("AcademicProgramName", program),
        ),
        node(
            "AcademicSummary",
            leaf("AcademicSummaryType", "Cumulative"),
            node("GPA", leaf("GradePointAverage", f"{cumulative.average:.2f}")),
        ),
    )
