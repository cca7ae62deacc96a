"""Building blocks of the generated documents: elements, organizations, people, terms.

Internal to the sandbox's data generator. Builders return unqualified lxml elements in schema
order (AcademicRecord v1.6.0 / v1.7.0 types); ``generator`` puts the message namespace on the
root (and, for a TranscriptRequest, on the root's children). Every random draw goes through the
``random.Random`` handed in, so a document depends only on the generator's arguments.
"""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import TypeAlias

from lxml import etree

from workbench.sandbox import gen_pools as pools

Child: TypeAlias = "etree._Element | Iterable[Child] | None"


def node(tag: str, *children: Child) -> etree._Element:
    """An element holding the given children; ``None`` children are skipped, lists flattened."""
    element = etree.Element(tag)
    _extend(element, children)
    return element


def _extend(element: etree._Element, children: Iterable[Child]) -> None:
    for child in children:
        if child is None:
            continue
        if isinstance(child, etree._Element):
            element.append(child)
        else:
            _extend(element, child)


def leaf(tag: str, value: object | None) -> etree._Element | None:
    """An element with text, or ``None`` (skipped by ``node``) when there is no value."""
    if value is None:
        return None
    element = etree.Element(tag)
    element.text = str(value)
    return element


def organization(id_tag: str, id_value: str, name: str) -> etree._Element:
    """``TransmissionData/Source|Destination/Organization``: the ID comes first."""
    return node("Organization", leaf(id_tag, id_value), leaf("OrganizationName", name))


def ocas() -> etree._Element:
    return organization("MutuallyDefined", pools.OCAS_ID, pools.OCAS_NAME)


def school(name: str, id_tag: str, id_value: str) -> etree._Element:
    """``School`` (AcRec:SchoolType): unlike an Organization, the name comes first."""
    return node("School", leaf("OrganizationName", name), leaf(id_tag, id_value))


def transmission_data(
    *,
    document_id: str,
    created: str,
    type_code: str,
    source: etree._Element,
    destination: etree._Element,
    request_id: str,
    official: bool = False,
) -> etree._Element:
    return node(
        "TransmissionData",
        leaf("DocumentID", document_id),
        leaf("CreatedDateTime", created),
        leaf("DocumentTypeCode", type_code),
        leaf("TransmissionType", "Original"),
        node("Source", source),
        node("Destination", destination),
        leaf("DocumentProcessCode", "PRODUCTION"),
        leaf("DocumentOfficialCode", "Official" if official else None),
        leaf("DocumentCompleteCode", "Complete" if official else None),
        leaf("RequestTrackingID", request_id),
    )


# -- people ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Student:
    """Who a document is about."""

    first: str
    middle: str | None
    last: str
    prefix: str | None
    suffix: str | None
    former_last: str | None
    birth: date
    gender: str
    student_number: str
    account_number: str
    application_number: str
    oen: str
    high_school: tuple[str, str] | None
    email: str | None


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return "".join(c for c in folded.lower() if c.isalnum())


def draw_student(rng: random.Random, created: datetime) -> Student:
    first, last = rng.choice(pools.FIRST_NAMES), rng.choice(pools.LAST_NAMES)
    age_days = rng.randint(17 * 365, 45 * 365)
    email = None
    if rng.random() < 0.6:
        email = f"{_ascii(first)}.{_ascii(last)}{rng.randint(1, 99)}@example.com"
    return Student(
        first=first,
        middle=rng.choice(pools.MIDDLE_NAMES) if rng.random() < 0.3 else None,
        last=last,
        prefix=rng.choice(pools.NAME_PREFIXES) if rng.random() < 0.2 else None,
        suffix=rng.choice(pools.NAME_SUFFIXES) if rng.random() < 0.05 else None,
        former_last=rng.choice(pools.LAST_NAMES) if rng.random() < 0.15 else None,
        birth=created.date() - timedelta(days=age_days),
        gender=rng.choices(pools.GENDER_CODES, weights=(48, 48, 4))[0],
        student_number="2" + _digits(rng, 8),
        account_number=_digits(rng, 8),
        application_number=f"{created.year % 100:02d}" + _digits(rng, 7),
        oen=_digits(rng, 9),
        high_school=rng.choice(pools.HIGH_SCHOOLS) if rng.random() < 0.35 else None,
        email=email,
    )


def person(student: Student) -> etree._Element:
    """``Person`` (AcRec:PersonType) the way OCAS fills it: three agency identifiers."""
    agency_ids = (
        (student.account_number, "OCAS Account Number"),
        (student.application_number, "OCAS Application Number"),
        (student.oen, "Ontario Education Number"),
    )
    return node(
        "Person",
        leaf("SchoolAssignedPersonID", student.student_number),
        [
            node(
                "AgencyIdentifier",
                leaf("AgencyAssignedID", value),
                leaf("AgencyCode", "MutuallyDefined"),
                leaf("AgencyName", name),
            )
            for value, name in agency_ids
        ],
        node("Birth", leaf("BirthDate", student.birth.isoformat())),
        node(
            "Name",
            leaf("NamePrefix", student.prefix),
            leaf("FirstName", student.first),
            leaf("MiddleName", student.middle),
            leaf("LastName", student.last),
            leaf("NameSuffix", student.suffix),
        ),
        node(
            "AlternateName",
            leaf("NameCode", "Former"),
            leaf("FirstName", student.first),
            leaf("LastName", student.former_last),
        )
        if student.former_last
        else None,
        node(
            "HighSchool",
            leaf("OrganizationName", student.high_school[0]),
            leaf("ESIS", student.high_school[1]),
        )
        if student.high_school
        else None,
        node("Contacts", node("Email", leaf("EmailAddress", student.email)))
        if student.email
        else None,
        node("Gender", leaf("GenderCode", student.gender)),
    )


# -- terms ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """An Ontario college term: Winter (January), Summer (May) or Fall (September)."""

    year: int
    month: int

    @property
    def designator(self) -> str:
        return f"{self.year}-{self.month:02d}"

    @property
    def name(self) -> str:
        season = {1: "Winter", 5: "Summer", 9: "Fall"}[self.month]
        return f"{self.year} {season} Term"

    @property
    def begin(self) -> date:
        return date(self.year, self.month, 6)

    @property
    def end(self) -> date:
        return date(self.year, self.month + 3, 20)

    def next(self) -> Term:
        return Term(self.year + 1, 1) if self.month == 9 else Term(self.year, self.month + 4)

    def previous(self) -> Term:
        return Term(self.year - 1, 9) if self.month == 1 else Term(self.year, self.month - 4)

    @classmethod
    def containing(cls, day: date) -> Term:
        return cls(day.year, 1 if day.month < 5 else 5 if day.month < 9 else 9)

    def detail(self) -> etree._Element:
        return node(
            "AcademicSessionDetail",
            leaf("SessionDesignator", self.designator),
            leaf("SessionName", self.name),
            leaf("SessionType", "Semester"),
            leaf("SessionBeginDate", self.begin.isoformat()),
            leaf("SessionEndDate", self.end.isoformat()),
        )
