"""The bodies of the sandbox's documents, a request's ``Request`` and a transcript's ``Student``,
unqualified and in schema order; every draw comes from the ``random.Random`` handed in."""

from __future__ import annotations

import json
import random
from datetime import date, datetime, timedelta
from importlib import resources
from typing import Any, NamedTuple, TypeAlias

from lxml import etree

POOLS: dict[str, Any] = json.loads(resources.files(__package__).joinpath("pools.json").read_text())
# The user's college (the canpesc Ontario sample's) and OCAS, as it names itself on the wire.
HOME_COLLEGE = ("Demo College", "555555")
OCAS_NAME = "OCAS Application Services Inc."
Part: TypeAlias = etree._Element | list[etree._Element] | dict[str, object] | None


def node(tag: str, *parts: Part) -> etree._Element:
    """An element of ``parts``: elements, lists of them, and ``{"Path/To/Leaf": text}`` dicts
    (parents made once); ``None`` is skipped.

    >>> node("Name", {"FirstName": "Zoë", "MiddleName": None, "LastName": "O'Brien"})
    """
    element = etree.Element(tag)
    made = {"": element}
    for part in parts:
        if isinstance(part, dict):
            for path, value in part.items():
                if value is not None:
                    _made(made, path).text = str(value)
        elif isinstance(part, list):
            element.extend(part)
        elif part is not None:
            element.append(part)
    return element


def _made(made: dict[str, etree._Element], path: str) -> etree._Element:
    if path not in made:
        parent, _, name = path.rpartition("/")
        made[path] = etree.SubElement(_made(made, parent), name)
    return made[path]


def organization(id_tag: str, id_value: str, name: str) -> etree._Element:
    return node("Organization", {id_tag: id_value, "OrganizationName": name})


def ocas() -> etree._Element:
    return organization("MutuallyDefined", "OCAS", OCAS_NAME)


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _person(rng: random.Random, created: datetime) -> tuple[etree._Element, str]:
    """A student's ``Person`` as OCAS fills it (three agency ids), and their application number."""
    first, last = rng.choice(POOLS["first_names"]), rng.choice(POOLS["last_names"])
    former = rng.choice(POOLS["last_names"]) if rng.random() < 0.15 else None
    school = rng.choice(POOLS["high_schools"]) if rng.random() < 0.35 else None
    number, application = "2" + _digits(rng, 8), f"{created.year % 100:02d}{_digits(rng, 7)}"
    agencies = [
        (_digits(rng, 8), "OCAS Account Number"),
        (application, "OCAS Application Number"),
        (_digits(rng, 9), "Ontario Education Number"),
    ]
    birth = created.date() - timedelta(days=rng.randint(17 * 365, 45 * 365))
    middle = rng.choice(POOLS["middle_names"]) if rng.random() < 0.3 else None
    email = f"s{number}@example.com" if rng.random() < 0.6 else None
    person = node(
        "Person",
        {"SchoolAssignedPersonID": number},
        [
            node(
                "AgencyIdentifier",
                {"AgencyAssignedID": value, "AgencyCode": "MutuallyDefined", "AgencyName": name},
            )
            for value, name in agencies
        ],
        {
            "Birth/BirthDate": birth.isoformat(),
            "Name/FirstName": first,
            "Name/MiddleName": middle,
            "Name/LastName": last,
            "AlternateName/NameCode": former and "Former",
            "AlternateName/LastName": former,
            "HighSchool/OrganizationName": school and school[0],
            "HighSchool/ESIS": school and school[1],
            "Contacts/Email/EmailAddress": email,
            "Gender/GenderCode": rng.choices(POOLS["gender_codes"], (48, 48, 4))[0],
        },
    )
    return person, application


class Term(NamedTuple):
    """An Ontario college term: Winter (month 1), Summer (5) or Fall (9)."""

    year: int
    month: int

    @classmethod
    def of(cls, day: date) -> Term:
        return cls(day.year, 1 if day.month < 5 else 5 if day.month < 9 else 9)

    def next(self) -> Term:
        return Term(self.year + 1, 1) if self.month == 9 else Term(self.year, self.month + 4)

    def previous(self) -> Term:
        return Term(self.year - 1, 9) if self.month == 1 else Term(self.year, self.month - 4)

    @property
    def designator(self) -> str:
        return f"{self.year}-{self.month:02d}"

    @property
    def name(self) -> str:
        return f"{self.year} {({1: 'Winter', 5: 'Summer', 9: 'Fall'})[self.month]} Term"

    @property
    def end(self) -> date:
        return date(self.year, self.month + 3, 20)


def request(rng: random.Random, created: datetime, when: str, tracking: str) -> etree._Element:
    """``Request``: the student, their time at the home college and 1..3 recipients."""
    person, application = _person(rng, created)
    credential = rng.choice(POOLS["programs"])[1]
    today = created.date()
    enrolled = Term.of(today - timedelta(days=rng.randint(150, 6 * 365)))
    finished, term = [], enrolled
    while term.end < today:
        finished.append(term)
        term = term.next()
    left = rng.choice(finished) if finished and rng.random() < 0.5 else None
    awarded = left.end + timedelta(days=30) if left and rng.random() < 0.6 else None
    receivers = rng.sample(
        POOLS["colleges"] + POOLS["universities"], rng.choices((1, 2, 3), (5, 3, 2))[0]
    )
    return node(
        "Request",
        {"CreatedDateTime": when},
        node(
            "RequestedStudent",
            person,
            {
                "Attendance/School/OrganizationName": HOME_COLLEGE[0],
                "Attendance/School/CSIS": HOME_COLLEGE[1],
                "Attendance/EnrollDate": date(enrolled.year, enrolled.month, 6).isoformat(),
                "Attendance/ExitDate": left and left.end.isoformat(),
                "Attendance/CurrentEnrollmentIndicator": "false" if left else "true",
                "Attendance/AcademicAwardsReported/AcademicAwardTitle": awarded and credential,
                "Attendance/AcademicAwardsReported/AcademicAwardDate": awarded,
                "ReleaseAuthorizedIndicator": "true",
                "ReleaseAuthorizedMethod": "ElectronicSignature",
            },
        ),
        [
            _recipient(rng, created, tracking, f"{application}-{n}", receiver, credential)
            for n, receiver in enumerate(receivers, start=1)
        ],
    )


def _recipient(
    rng: random.Random,
    created: datetime,
    tracking: str,
    recipient_tracking: str,
    receiver: tuple[str, str, str],
    credential: str,
) -> etree._Element:
    """One destination; OCAS repeats the request's tracking ID in every Recipient."""
    name, id_tag, id_value = receiver
    hold = rng.choices(*zip(*POOLS["holds"], strict=True))[0]
    term = Term.of(created.date())
    if hold == "AfterSpecifiedTerm":
        term = term.next()
    with_term = hold in ("AfterGradesPosted", "AfterSpecifiedTerm", "AfterCurrentTermEnrollment")
    release = created.date() + timedelta(days=rng.randint(14, 120))
    organization = "Receiver/RequestorReceiverOrganization"
    return node(
        "Recipient",
        {
            "RequestTrackingID": tracking,
            "RecipientTrackingID": recipient_tracking,
            f"{organization}/OrganizationName": name,
            f"{organization}/{id_tag}": id_value,
            "TranscriptHold/HoldType": hold,
            "TranscriptHold/SessionDesignator": term.designator if with_term else None,
            "TranscriptHold/SessionName": term.name if with_term else None,
            "TranscriptHold/AcademicAwardTitle": credential if hold.endswith("Awarded") else None,
            "TranscriptHold/ReleaseDate": release if hold == "AfterSpecifiedDate" else None,
            "TranscriptType": rng.choice(("Complete", "Complete", "Undergraduate")),
            "TranscriptPurpose": rng.choice(("Admission", "AdmissionRegistrar", "Transfer")),
            "DeliveryMethod": "Electronic",
            "ElectronicDelivery/ElectronicFormat": "XML",
            "ElectronicDelivery/ElectronicMethod": "ServiceProvider",
            "ElectronicDelivery/ServiceProvider": OCAS_NAME,
            "TranscriptCopies": 1,
            "DocumentOfficialCode": "Official",
        },
    )


POINTS = {grade: points for grade, points, _ in POOLS["grades"]}
GRADE_WEIGHTS = ([g for g, _, _ in POOLS["grades"]], [w for _, _, w in POOLS["grades"]])
# Credit units and the credit values that go with them.
UNITS = (("Semester", (3.0, 3.0, 4.0, 2.0)), ("ClockHours", (42.0, 45.0, 56.0, 28.0)))
Graded = list[tuple[float, str]]  # (credit, grade) of each course


def student(rng: random.Random, created: datetime, sender: tuple[str, str, str]) -> etree._Element:
    """``Student``: 5..40 courses over the terms before ``created``, in one or two records."""
    person, _ = _person(rng, created)
    total = rng.randint(5, 40)
    split = [total] if rng.random() >= 0.3 else [first := rng.randint(2, total - 2), total - first]
    plans = []  # (course count per term, transfer credits) of each record
    for allotment in split:
        transfers = min(rng.choice((0, 0, 0, 1, 2)), allotment - 1)
        count = max(1, round((allotment - transfers) / rng.uniform(3.5, 6.5)))
        base, extra = divmod(allotment - transfers, count)
        plans.append(([base + (k < extra) for k in range(count)], transfers))
    term, terms = Term.of(created.date()).previous(), list[Term]()
    while len(terms) < sum(len(sizes) for sizes, _ in plans):
        if term.month != 5 or rng.random() < 0.2:  # most students skip most summers
            terms.append(term)
        term = term.previous()
    terms.reverse()
    records = []
    for sizes, transfers in plans:
        mine, terms = terms[: len(sizes)], terms[len(sizes) :]
        records.append(_record(rng, sender, sizes, mine, transfers, created))
    return node("Student", person, records)


def _record(
    rng: random.Random,
    sender: tuple[str, str, str],
    sizes: list[int],
    terms: list[Term],
    transfers: int,
    created: datetime,
) -> etree._Element:
    program, credential = rng.choice(POOLS["programs"])
    units, credits = rng.choice(UNITS)
    courses = rng.sample(POOLS["courses"], sum(sizes))
    sessions: list[tuple[Term, list[etree._Element], Graded]] = []
    for term, size in zip(terms, sizes, strict=True):
        graded = [(rng.choice(credits), rng.choices(*GRADE_WEIGHTS)[0]) for _ in range(size)]
        sessions.append(
            (term, [_course(c, g, units) for c, g in zip(courses, graded, strict=False)], graded)
        )
        courses = courses[size:]
    cumulative = [g for _, _, graded in sessions for g in graded]
    average = _average(cumulative)
    awards = []  # none while studying; one or two (a certificate on the way) when finished
    if rng.random() < 0.55:
        awards.append((program, credential))
        if rng.random() < 0.3:
            awards.append(rng.choice([p for p in POOLS["programs"] if p[0] != program]))
    day = min(terms[-1].end + timedelta(days=10), created.date()).isoformat()
    record_awards: list[etree._Element] = []
    session_awards: list[etree._Element] = []
    for name, title in awards:
        honours = "With Honours" if average >= 3.5 and rng.random() < 0.7 else None
        award = node(
            "AcademicAward",
            {
                "AcademicAwardLevel": "2.2",  # as in the Ontario sample
                "AcademicAwardDate": day,
                "AcademicAwardTitle": title,
                "AcademicHonors/HonorsTitle": honours,
                "AcademicCompletionIndicator": "true",
                "AcademicCompletionDate": day,
                "AcademicAwardProgram/AcademicProgramType": "Major",
                "AcademicAwardProgram/AcademicProgramName": name,
                "AcademicSummary/AcademicSummaryType": "Cumulative",
                "AcademicSummary/GPA/GradePointAverage": f"{average:.2f}",
            },
        )
        (session_awards if rng.random() < 0.25 else record_awards).append(award)
    return node(
        "AcademicRecord",
        {"School/OrganizationName": sender[0], f"School/{sender[1]}": sender[2]},
        record_awards,
        node(
            "AcademicSummary",
            {"AcademicSummaryType": "All", "AcademicSummaryLevel": "Undergraduate"},
            _gpa(cumulative, units),
        ),
        [
            node(
                "AcademicSession",
                {
                    "AcademicSessionDetail/SessionDesignator": term.designator,
                    "AcademicSessionDetail/SessionName": term.name,
                    "AcademicSessionDetail/SessionType": "Semester",
                    "AcademicSessionDetail/SessionBeginDate": date(term.year, term.month, 6),
                    "AcademicSessionDetail/SessionEndDate": term.end,
                    "AcademicProgram/AcademicProgramName": program,
                },
                session_awards if k == len(sessions) - 1 else None,
                elements,
                node("AcademicSummary", _gpa(graded, units)),
            )
            for k, (term, elements, graded) in enumerate(sessions)
        ],
        [_transfer(rng, units, credits) for _ in range(transfers)],
    )


def _average(graded: Graded) -> float:
    counted = [(credit, POINTS[grade]) for credit, grade in graded if POINTS[grade] is not None]
    credits = sum(credit for credit, _ in counted)
    return sum(credit * (points or 0) for credit, points in counted) / credits if credits else 0.0


def _gpa(graded: Graded, units: str) -> etree._Element:
    """A ``GPA`` whose figures agree with the courses: grades drive them."""
    counted = [(credit, POINTS[grade]) for credit, grade in graded if POINTS[grade] is not None]
    return node(
        "GPA",
        {
            "CreditHoursAttempted": f"{sum(c for c, g in graded if g != 'W'):.1f}",
            "CreditHoursEarned": f"{sum(c for c, g in graded if g not in ('F', 'W')):.1f}",
            "CreditUnit": units,
            "GradePointAverage": f"{_average(graded):.2f}",
            "TotalQualityPoints": f"{sum(c * (p or 0) for c, p in counted):.2f}",
            "CreditHoursforGPA": f"{sum(c for c, _ in counted):.1f}",
        },
    )


def _course(course: tuple[str, str, str], graded: tuple[float, str], units: str) -> etree._Element:
    (subject, number, title), (credit, grade) = course, graded
    points = POINTS[grade]
    return node(
        "Course",
        {
            "CourseCreditBasis": "Regular",
            "CourseCreditUnits": units,
            "CourseCreditLevel": "Undergraduate",
            "CourseCreditValue": f"{credit:.1f}",
            "CourseCreditEarned": f"{0.0 if grade in ('F', 'W') else credit:.1f}",
            "CourseAcademicGradeScaleCode": "04",
            "CourseAcademicGrade": grade,
            "CourseQualityPointsEarned": None if points is None else f"{credit * points:.2f}",
            "CourseSubjectAbbreviation": subject,
            "CourseNumber": number,
            "CourseTitle": title,
        },
    )


def _transfer(rng: random.Random, units: str, credits: tuple[float, ...]) -> etree._Element:
    """A record-level credit from elsewhere (the Ontario sample's "EC": exemption credit)."""
    subject, number, title = rng.choice(POOLS["transfer_courses"])
    credit = f"{rng.choice(credits):.1f}"
    return node(
        "Course",
        {
            "CourseCreditBasis": rng.choice(("Exemption", "AdvancedStanding", "Equivalence")),
            "CourseCreditUnits": units,
            "CourseCreditValue": credit,
            "CourseCreditEarned": credit,
            "CourseSubjectAbbreviation": subject,
            "CourseNumber": number,
            "CourseTitle": title,
            "NoteMessage": "EC",
        },
    )
