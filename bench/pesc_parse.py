"""PESC throughput against bare ``lxml.etree.fromstring``, in the same run.

Builds a CollegeTranscript v1.3.0 (the OCAS family) of 60 courses in 10 sessions, then times,
on the same bytes: the bare parse (the baseline), ``pesc.parse`` (safe parse), ``pesc.flatten``
(safe parse + headline fields; also from the same document as str, as a JSON field gives it),
``pesc.records`` (safe parse + every child table),
``pesc.to_frames`` and ``pesc.validate`` (safe parse + XSD validation, schema compiled once).
Each is timed in several interleaved rounds and the best round counts, so a noisy machine hurts
every measurement alike. Goals: flatten <= 2x the bare parse, validation <= 3x.

    .venv/bin/python bench/pesc_parse.py [--rounds 7] [--seconds 0.2] [--schemas DIR] [--check]

The schemas come from --schemas, else WORKBENCH_PESC_SCHEMAS, else ../shared/pesc/xsd beside
the repository. --check exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lxml import etree

from workbench import pesc

NAMESPACE = "urn:org:pesc:message:CollegeTranscript:v1.3.0"
GOALS = {"flatten": 2.0, "validate": 3.0}


def leaf(parent: etree._Element, tag: str, text: str) -> None:
    etree.SubElement(parent, tag).text = text


def organization(parent: etree._Element, id_type: str, id_value: str, name: str) -> None:
    node = etree.SubElement(parent, "Organization")
    leaf(node, id_type, id_value)
    leaf(node, "OrganizationName", name)


def transcript(sessions: int = 10, courses_per_session: int = 6) -> bytes:
    """A realistic Ontario college transcript: identity, awards, sessions of graded courses."""
    root = etree.Element(f"{{{NAMESPACE}}}CollegeTranscript", nsmap={"ColTrn": NAMESPACE})
    data = etree.SubElement(root, "TransmissionData")
    for tag, text in (
        ("DocumentID", "CT20240501000123"),
        ("CreatedDateTime", "2024-05-01T10:09:29-04:00"),
        ("DocumentTypeCode", "RequestedRecord"),
        ("TransmissionType", "Original"),
    ):
        leaf(data, tag, text)
    organization(etree.SubElement(data, "Source"), "CSIS", "555555", "Demo College")
    organization(
        etree.SubElement(data, "Destination"),
        "MutuallyDefined",
        "OCAS",
        "OCAS Application Services Inc.",
    )
    for tag, text in (
        ("DocumentProcessCode", "PRODUCTION"),
        ("DocumentOfficialCode", "Official"),
        ("DocumentCompleteCode", "Complete"),
        ("RequestTrackingID", "C20240501002337"),
    ):
        leaf(data, tag, text)
    student = etree.SubElement(root, "Student")
    person = etree.SubElement(student, "Person")
    leaf(person, "SchoolAssignedPersonID", "200123456")
    for value, name in (
        ("123456789", "Ontario Education Number"),
        ("A1234567", "OCAS Account Number"),
    ):
        agency = etree.SubElement(person, "AgencyIdentifier")
        leaf(agency, "AgencyAssignedID", value)
        leaf(agency, "AgencyCode", "MutuallyDefined")
        leaf(agency, "AgencyName", name)
    leaf(etree.SubElement(person, "Birth"), "BirthDate", "2001-02-03")
    name = etree.SubElement(person, "Name")
    leaf(name, "FirstName", "Émilie")
    leaf(name, "LastName", "Tremblay")
    leaf(etree.SubElement(person, "Gender"), "GenderCode", "Female")
    record = etree.SubElement(student, "AcademicRecord")
    school = etree.SubElement(record, "School")
    leaf(school, "OrganizationName", "Demo College")
    leaf(school, "CSIS", "555555")
    for title in ("Ontario College Diploma", "Ontario College Certificate"):
        award = etree.SubElement(record, "AcademicAward")
        leaf(award, "AcademicAwardLevel", "2.2")
        leaf(award, "AcademicAwardDate", "2023-04-24")
        leaf(award, "AcademicAwardTitle", title)
        program = etree.SubElement(award, "AcademicAwardProgram")
        leaf(program, "AcademicProgramType", "Major")
        leaf(program, "AcademicProgramName", "Business - Marketing")
    for index in range(sessions):
        session = etree.SubElement(record, "AcademicSession")
        detail = etree.SubElement(session, "AcademicSessionDetail")
        year, term = 2019 + index // 3, ("01", "05", "09")[index % 3]
        leaf(detail, "SessionDesignator", f"{year}-{term}")
        leaf(detail, "SessionName", f"{year} Term {term}")
        leaf(detail, "SessionType", "Semester")
        leaf(detail, "SessionBeginDate", f"{year}-{term}-06")
        leaf(detail, "SessionEndDate", f"{year}-{term}-28")
        for number in range(courses_per_session):
            course = etree.SubElement(session, "Course")
            for tag, text in (
                ("CourseCreditBasis", "Regular"),
                ("CourseCreditUnits", "Semester"),
                ("CourseCreditLevel", "Undergraduate"),
                ("CourseCreditValue", "3.0"),
                ("CourseCreditEarned", "3.0"),
                ("CourseAcademicGradeScaleCode", "04"),
                ("CourseAcademicGrade", "ABCDF"[(index + number) % 5]),
                ("CourseQualityPointsEarned", "12.0"),
                (
                    "CourseSubjectAbbreviation",
                    ("MKTG", "ACCT", "COMM", "ECON", "MATH", "GNED")[number],
                ),
                ("CourseNumber", str(100 + 10 * index + number)),
                ("CourseTitle", f"Course {index}-{number} & Practice"),
            ):
                leaf(course, tag, text)
        summary = etree.SubElement(session, "AcademicSummary")
        gpa = etree.SubElement(summary, "GPA")
        for tag, text in (
            ("CreditHoursAttempted", "18.0"),
            ("CreditHoursEarned", "18.0"),
            ("GradePointAverage", "3.20"),
            ("TotalQualityPoints", "57.6"),
        ):
            leaf(gpa, tag, text)
    etree.indent(root, space="\t")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + etree.tostring(root, encoding="utf-8")


def _both(doc: pesc.PescDocument) -> object:
    return pesc.flatten(doc), pesc.records(doc)


def best_time(function: Callable[[], object], seconds: float) -> float:
    """Seconds per call: the mean over as many calls as fit in about ``seconds``."""
    function()
    calls, started = 0, time.perf_counter()
    while True:
        function()
        calls += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return elapsed / calls


def schemas_folder(option: str | None) -> Path | None:
    candidates = [option, os.environ.get("WORKBENCH_PESC_SCHEMAS")]
    candidates.append(str(Path(__file__).resolve().parents[1] / ".." / "shared" / "pesc" / "xsd"))
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate).resolve()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.2, help="per measurement and round")
    parser.add_argument("--schemas", help="folder of PESC XSDs")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()

    data = transcript()
    text = data.decode("utf-8")  # what a JSON PESCXML field gives
    schemas = schemas_folder(args.schemas)
    row = pesc.flatten(data)
    print(
        f"CollegeTranscript v1.3.0: {len(data):,} bytes, {row['course_count']} courses in "
        f"{row['session_count']} sessions, {row['award_count']} awards"
    )
    candidates: dict[str, Callable[[], object]] = {
        "bare fromstring": lambda: etree.fromstring(data),
        "parse": lambda: pesc.parse(data),
        "flatten": lambda: pesc.flatten(data),
        "flatten (str)": lambda: pesc.flatten(text),
        "records": lambda: pesc.records(data),
        "flatten+records": lambda: _both(pesc.parse(data)),
        "to_frames": lambda: pesc.to_frames(data),
    }
    if schemas is None:
        print("validate: skipped, no schema folder (use --schemas or WORKBENCH_PESC_SCHEMAS)")
    else:
        check = pesc.validate(data, schemas_dir=schemas)
        print(f"validate: {check.status} against {check.schema} in {schemas}")
        candidates["validate"] = lambda: pesc.validate(data, schemas_dir=schemas)

    best: dict[str, float] = {}
    for _ in range(args.rounds):  # interleaved, so drift and noise hit all alike
        for name, function in candidates.items():
            seconds = best_time(function, args.seconds)
            best[name] = min(best.get(name, seconds), seconds)

    baseline = best["bare fromstring"]
    print(f"best of {args.rounds} rounds of ~{args.seconds}s each")
    missed = []
    for name, seconds in best.items():
        ratio = seconds / baseline
        speed = f"{seconds * 1e6:9.1f} us/doc {1 / seconds:9.0f} docs/s"
        line = f"{name:16s} {speed}  ratio {ratio:5.2f}"
        if name in GOALS:
            ok = ratio <= GOALS[name]
            line += f"  (goal <= {GOALS[name]:.0f}x: {'ok' if ok else 'MISSED'})"
            if not ok:
                missed.append(name)
        print(line)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
