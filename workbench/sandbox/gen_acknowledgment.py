"""The sandbox's TranscriptAcknowledgment for a transcript a supplier sent.

Reads the transcript with namespace-agnostic lookups (local names only), because a supplier may
send any CollegeTranscript version, qualified or not, valid or not. What it copies is rebuilt
without namespaces, in schema order, keeping only the children the acknowledgment's types allow
(``_SHAPES``), so that a sloppy transcript still gets a valid acknowledgment where possible.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from lxml import etree

from workbench.sandbox.gen_parts import leaf, node, ocas

# AcRec:AcknowledgmentPersonType, in schema order; True marks elements that may repeat.
_PERSON_CHILDREN = (
    ("SchoolAssignedPersonID", False),
    ("SIN", False),
    ("NSN", False),
    ("AgencyAssignedID", False),
    ("AgencyIdentifier", True),
    ("RecipientAssignedID", False),
    ("SSN", False),
    ("PartialSSN", False),
    ("Birth", False),
    ("Name", False),
    ("AlternateName", True),
    ("Contacts", True),
    ("Gender", False),
    ("Deceased", False),
    ("Language", True),
    ("NoteMessage", True),
)
# Complex types the acknowledgment copies: allowed children in schema order (a child named here
# with a shape of its own is filtered the same way), and the children it cannot do without.
_SHAPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Organization": (
        (
            *("OPEID", "NCHELPID", "IPEDS", "ATP", "FICE", "ACT", "CCD", "PSS", "CEEBACT"),
            *("CSIS", "USIS", "ESIS", "PSIS", "DUNS", "MutuallyDefined"),
            *("LocalOrganizationID", "OrganizationName"),
        ),
        (),
    ),
    "AgencyIdentifier": (
        ("AgencyAssignedID", "AgencyCode", "AgencyName", "CountryCode", "StateProvinceCode"),
        ("AgencyAssignedID", "AgencyCode"),
    ),
    "Name": (
        (
            *("NameCode", "NamePrefix", "FirstName", "MiddleName", "LastName", "NameSuffix"),
            *("NameTitle", "CompositeName", "NoteMessage"),
        ),
        (),
    ),
    "Contacts": (("Address", "Phone", "FaxPhone", "Email", "URL", "NoteMessage"), ()),
    "Gender": (("GenderCode", "NoteMessage"), ("GenderCode",)),
    "Deceased": (("DeceasedIndicator", "NoteMessage"), ("DeceasedIndicator",)),
    "Language": (("LanguageCode", "LanguageProficiency", "LanguageUsage", "NoteMessage"), ()),
}
_SHAPES["AlternateName"] = _SHAPES["Name"]
# Elements that occur once at most, wherever they are.
_SINGLE = {
    *("SchoolAssignedPersonID", "SIN", "NSN", "AgencyAssignedID", "RecipientAssignedID", "SSN"),
    *("PartialSSN", "Birth", "Name", "Gender", "Deceased", "AgencyCode", "AgencyName"),
    *("CountryCode", "StateProvinceCode", "GenderCode", "DeceasedIndicator", "NameCode"),
    *("NamePrefix", "FirstName", "LastName", "NameSuffix", "NameTitle", "CompositeName"),
    *_SHAPES["Organization"][0][:-1],  # every organization ID but OrganizationName
}
_TOTAL_MAX = 9999  # core:AcademicAwardTotalType / CourseTotalType
_ID_MAX = 35  # core:DocumentIDType
_NO_NAME_NOTE = "Name missing from the transcript; the sandbox supplied a placeholder"


def local_name(element: etree._Element) -> str | None:
    """The element's name without namespace; ``None`` for comments and processing instructions."""
    return etree.QName(element).localname if isinstance(element.tag, str) else None


def _children(element: etree._Element | None, name: str) -> list[etree._Element]:
    return [] if element is None else [c for c in element if local_name(c) == name]


def _child(element: etree._Element | None, name: str) -> etree._Element | None:
    found = _children(element, name)
    return found[0] if found else None


def _text(element: etree._Element | None) -> str | None:
    text = None if element is None else (element.text or "").strip()
    return text or None


def count(root: etree._Element, name: str) -> int:
    """How many elements called ``name`` the document holds, at any depth."""
    return sum(1 for e in root.iter() if local_name(e) == name)


def plain_copy(element: etree._Element, tag: str | None = None) -> etree._Element:
    """A deep copy with every namespace, attribute, comment and stray whitespace dropped."""
    copy = etree.Element(tag or local_name(element) or "")
    children = [c for c in element if local_name(c) is not None]
    if children:
        copy.extend(plain_copy(c) for c in children)
    else:
        copy.text = element.text
    return copy


def shaped_copy(element: etree._Element, tag: str | None = None) -> etree._Element | None:
    """A plain copy holding only what ``_SHAPES`` allows, or None without a required child."""
    name = local_name(element) or ""
    if name not in _SHAPES:
        copy = plain_copy(element, tag)
        if name == "DeceasedIndicator" and copy.text:
            copy.text = copy.text.strip().lower()  # xs:boolean: "False" is not a boolean
        return copy
    allowed, required = _SHAPES[name]
    copy = etree.Element(tag or name)
    for child_name in allowed:
        found = _children(element, child_name)
        for child in found[:1] if child_name in _SINGLE else found:
            shaped = shaped_copy(child)
            if shaped is not None:
                copy.append(shaped)
    if any(_child(copy, r) is None for r in required):
        return None
    return copy


def acknowledgment_parts(
    root: etree._Element, *, request_id: str, created_text: str, created: datetime
) -> list[etree._Element]:
    """``TransmissionData``, ``Person``, ``AcademicAwardTotal`` and ``CourseTotal``."""
    name = local_name(root)
    if name != "CollegeTranscript":
        found = etree.QName(root).text if name else "a non-element node"
        raise ValueError(
            f"cannot acknowledge {found}: an acknowledgment answers a CollegeTranscript, "
            "so pass the parsed transcript's root element"
        )
    transmission = _child(root, "TransmissionData")
    student = _child(root, "Student")
    return [
        _transmission_data(transmission, request_id, created_text, created),
        _person(_child(student, "Person")),
        leaf("AcademicAwardTotal", min(count(root, "AcademicAward"), _TOTAL_MAX)),
        leaf("CourseTotal", min(count(root, "Course"), _TOTAL_MAX)),
    ]


def _transmission_data(
    transmission: etree._Element | None, request_id: str, created_text: str, created: datetime
) -> etree._Element:
    """Echo the transcript's DocumentID; the sender becomes the destination and vice versa."""
    document_id = _text(_child(transmission, "DocumentID"))
    if document_id and len(document_id) > _ID_MAX:
        # A 36-character GUID: strip the dashes, as Mohawk does when it echoes OCAS IDs.
        document_id = re.sub(r"[-{}]", "", document_id)[:_ID_MAX]
    if not document_id:
        document_id = f"ACK{created:%Y%m%d%H%M%S%f}"[:_ID_MAX]
    sender = _child(_child(transmission, "Source"), "Organization")
    receiver = _child(_child(transmission, "Destination"), "Organization")
    process = _text(_child(transmission, "DocumentProcessCode"))
    return node(
        "TransmissionData",
        leaf("DocumentID", document_id),
        leaf("CreatedDateTime", created_text),
        leaf("DocumentTypeCode", "Acknowledgment"),
        leaf("TransmissionType", "Original"),
        node("Source", ocas() if receiver is None else shaped_copy(receiver)),
        node(
            "Destination",
            node("Organization", leaf("OrganizationName", "Unknown sender"))
            if sender is None
            else shaped_copy(sender),
        ),
        leaf("DocumentProcessCode", process if process in ("TEST", "PRODUCTION") else None),
        leaf("RequestTrackingID", request_id),
    )


def _person(source: etree._Element | None) -> etree._Element:
    """The student as read, limited to what an acknowledgment's Person may hold."""
    person = etree.Element("Person")
    placeholder = False
    for name, repeats in _PERSON_CHILDREN:
        found = _children(source, name)
        if not repeats:
            found = found[:1]
        if name == "Birth":
            birth = _birth(found[0]) if found else None
            if birth is not None:
                person.append(birth)
        elif name == "Name" and not found:
            person.append(_placeholder_name(source))
            placeholder = True
        else:
            person.extend(c for c in (shaped_copy(e) for e in found) if c is not None)
    if placeholder:
        etree.SubElement(person, "NoteMessage").text = _NO_NAME_NOTE
    return person


def _placeholder_name(source: etree._Element | None) -> etree._Element:
    """A Name built from what the transcript has: a former name, else the student number."""
    alternate = _child(source, "AlternateName")
    if alternate is not None:
        name = shaped_copy(alternate, tag="Name")
        if name is not None:
            return name
    student_number = _text(_child(source, "SchoolAssignedPersonID"))
    composite = f"Student {student_number}"[:45] if student_number else "Unknown student"
    return node("Name", leaf("CompositeName", composite))


def _birth(source: etree._Element) -> etree._Element | None:
    """Map core:BirthType (the transcript's) onto AcRec:BirthType (the acknowledgment's)."""
    city = _text(_child(source, "BirthCity"))
    state = _child(source, "BirthStateProvinceCode")
    if state is None:
        state = _child(source, "BirthState")
    birth = node(
        "Birth",
        leaf("BirthDate", _text(_child(source, "BirthDate"))),
        leaf("Birthday", _month_day(_text(_child(source, "Birthday")))),
        leaf("BirthCity", city if city and 2 <= len(city) <= 30 else None),
        leaf("BirthState", _text(state)),
        leaf("BirthCountry", _text(_child(source, "BirthCountry"))),
        [plain_copy(n) for n in _children(source, "NoteMessage")],
    )
    return birth if len(birth) else None


def _month_day(text: str | None) -> str | None:
    """``--MM-DD`` from what real documents send (``--12-10``, ``12-10``, ``1210``), or None."""
    digits = re.sub(r"\D", "", text or "")
    if len(digits) not in (3, 4):
        return None
    try:
        day = date(2000, int(digits[:-2]), int(digits[-2:]))  # a leap year: 29 February is fine
    except ValueError:
        return None
    return f"--{day:%m-%d}"
