"""The body of a generated TranscriptRequest: OCAS asking the home college for a transcript."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from lxml import etree

from workbench.sandbox import gen_pools as pools
from workbench.sandbox.gen_parts import (
    Student,
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

# HoldType values and how often OCAS-like traffic uses them (Now dominates).
_HOLDS = (
    ("Now", 10),
    ("AfterGradesPosted", 3),
    ("AfterSpecifiedTerm", 3),
    ("AfterDegreeAwarded", 2),
    ("AfterCertificateAwarded", 1),
    ("AfterCurrentTermEnrollment", 1),
    ("AfterSpecifiedDate", 1),
)


def request_parts(
    rng: random.Random, *, request_id: str, created: datetime, created_text: str, document_id: str
) -> list[etree._Element]:
    """``TransmissionData`` and ``Request``, unqualified (the caller qualifies them)."""
    student = draw_student(rng, created)
    home_name, home_csis = pools.HOME_COLLEGE
    _program, credential, _level = rng.choice(pools.PROGRAMS)
    receivers = rng.sample(
        pools.COLLEGES + pools.UNIVERSITIES, rng.choices((1, 2, 3), (5, 3, 2))[0]
    )
    return [
        transmission_data(
            document_id=document_id,
            created=created_text,
            type_code="Request",
            source=ocas(),
            destination=organization("CSIS", home_csis, home_name),
            request_id=request_id,
        ),
        node(
            "Request",
            leaf("CreatedDateTime", created_text),
            node(
                "RequestedStudent",
                person(student),
                _attendance(rng, created, credential),
                leaf("ReleaseAuthorizedIndicator", "true"),
                leaf("ReleaseAuthorizedMethod", "ElectronicSignature"),
            ),
            [
                _recipient(rng, created, request_id, student, n, receiver, credential)
                for n, receiver in enumerate(receivers, start=1)
            ],
        ),
    ]


def _attendance(rng: random.Random, created: datetime, credential: str) -> etree._Element:
    """The student's time at the home college: current, or left (and perhaps graduated)."""
    home_name, home_csis = pools.HOME_COLLEGE
    today = created.date()
    enrolled = Term.containing(today - timedelta(days=rng.randint(150, 6 * 365)))
    finished = []
    term = enrolled
    while term.end < today:
        finished.append(term)
        term = term.next()
    left = rng.choice(finished) if finished and rng.random() < 0.5 else None
    graduated = left is not None and rng.random() < 0.6
    return node(
        "Attendance",
        school(home_name, "CSIS", home_csis),
        leaf("EnrollDate", enrolled.begin.isoformat()),
        leaf("ExitDate", left.end.isoformat() if left else None),
        leaf("CurrentEnrollmentIndicator", "false" if left else "true"),
        node(
            "AcademicAwardsReported",
            leaf("AcademicAwardTitle", credential),
            leaf("AcademicAwardDate", (left.end + timedelta(days=30)).isoformat()),
        )
        if left and graduated
        else None,
    )


def _recipient(
    rng: random.Random,
    created: datetime,
    request_id: str,
    student: Student,
    n: int,
    receiver: tuple[str, str, str],
    credential: str,
) -> etree._Element:
    """One destination. OCAS repeats the request's tracking ID in every Recipient."""
    name, id_tag, id_value = receiver
    return node(
        "Recipient",
        leaf("RequestTrackingID", request_id),
        leaf("RecipientTrackingID", f"{student.application_number}-{n}"),
        node(
            "Receiver",
            node(
                "RequestorReceiverOrganization",
                leaf("OrganizationName", name),
                leaf(id_tag, id_value),
            ),
        ),
        _hold(rng, created, credential),
        leaf("TranscriptType", rng.choice(("Complete", "Complete", "Undergraduate"))),
        leaf("TranscriptPurpose", rng.choice(("Admission", "AdmissionRegistrar", "Transfer"))),
        leaf("DeliveryMethod", "Electronic"),
        node(
            "ElectronicDelivery",
            leaf("ElectronicFormat", "XML"),
            leaf("ElectronicMethod", "ServiceProvider"),
            leaf("ServiceProvider", pools.OCAS_NAME),
        ),
        leaf("TranscriptCopies", 1),
        leaf("DocumentOfficialCode", "Official"),
    )


def _hold(rng: random.Random, created: datetime, credential: str) -> etree._Element:
    """``TranscriptHold``: when the transcript may be sent, with what the hold type needs."""
    hold_type = rng.choices([h for h, _ in _HOLDS], [w for _, w in _HOLDS])[0]
    term = Term.containing(created.date())
    if hold_type == "AfterSpecifiedTerm":
        term = term.next()
    with_term = hold_type in (
        "AfterGradesPosted",
        "AfterSpecifiedTerm",
        "AfterCurrentTermEnrollment",
    )
    with_award = hold_type in ("AfterDegreeAwarded", "AfterCertificateAwarded")
    release = created.date() + timedelta(days=rng.randint(14, 120))
    return node(
        "TranscriptHold",
        leaf("HoldType", hold_type),
        leaf("SessionDesignator", term.designator if with_term else None),
        leaf("SessionName", term.name if with_term else None),
        leaf("AcademicAwardTitle", credential if with_award else None),
        leaf("ReleaseDate", release.isoformat() if hold_type == "AfterSpecifiedDate" else None),
    )
