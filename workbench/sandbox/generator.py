"""Deterministic data of the sandbox: PESC XML documents and event records.

Output depends only on the arguments: each call draws from its own ``random.Random``, seeded
with a SHA-256 of (seed, kind, index) (never the global generator, never the salted ``hash()``),
so the same arguments give byte-identical output on any machine, and a new index gives new
data. (Python promises seeded sequences only for ``random()`` itself; ``choice``/``randint``
have been stable across CPython 3.x, but a future release could change them.)::

    from workbench.sandbox import generator as g

    rid = g.request_id(7, 0)
    xml = g.transcript_request_xml(7, 0, request_id=rid, created=datetime(2026, 3, 2, tzinfo=UTC))

Documents are built with lxml (so ``&`` and ``<`` in names are escaped by construction) and
follow ``shared/pesc/NOTES.md``: TranscriptRequest qualifies its root and the root's children,
CollegeTranscript and Acknowledgment only their root. ``namespaces`` picks the spec's v1.0.0
names or the v1.1.0 family real traffic uses (``workbench.spec.NAMESPACE_FAMILIES``).

Choices worth knowing:

- IDs are GUIDs written as 32 hex digits without dashes, so that they can serve as
  ``RequestTrackingID`` (1..35 characters); ``tracking_number`` makes OCAS-style C-numbers and
  ``dashed_id`` the 36-character API ids of the sandbox's ``guid`` scheme, which no document
  carries. ``defect="invalid"`` uses the dashed form for DocumentID on purpose, the way OCAS
  does (NOTES §1, §9).
- Later documents for an id (``version`` 2, 3, ...) get a new DocumentID and the given
  TransmissionType; a Cancellation, which PESC's enumeration lacks, is TransmissionType
  ``MutuallyDefined`` with a TransmissionData ``NoteMessage`` ``Cancellation`` (``CANCELLATION``).
- ``defect="malformed"`` gives text that is not well-formed XML: truncated, a closing tag lost,
  or a raw ``&``. ``defect="invalid"`` gives a well-formed document that fails its schema in a
  way seen in real data: a 36-character DocumentID, ``Birthday`` ``1210`` (requests; invalid
  under CoreMain 1.12's xs:gMonthDay, though CoreMain 1.10's looser pattern would take it) or a
  non-schema ``ProgramUSISCode`` in ``AcademicProgram`` (transcripts).
- ``acknowledgment_xml`` counts every ``AcademicAward`` and ``Course`` element of the
  transcript (record and session level alike), echoes its DocumentID (dashes stripped when it is
  over 35 characters), and copies the student only as far as AcknowledgmentPersonType allows:
  ``HighSchool``, ``BirthYear`` and unknown elements are dropped, ``1210`` becomes ``--12-10``.
- No XML declaration: the strings parse with ``lxml.etree.fromstring`` as they are.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lxml import etree

from workbench.sandbox import gen_pools as pools
from workbench.sandbox.gen_acknowledgment import acknowledgment_parts
from workbench.sandbox.gen_parts import Term, leaf
from workbench.sandbox.gen_request import request_parts
from workbench.sandbox.gen_transcript import transcript_parts
from workbench.spec import NAMESPACE_FAMILIES, PROCESS_CODES

DEFECTS = ("malformed", "invalid")
TRANSMISSION_TYPES = ("Original", "Resubmission", "Reissue", "Cancellation")
# PESC's TransmissionType has no Cancellation (CoreMain 1.10-1.14: Duplicate, MutuallyDefined,
# Original, Reissue, Replace, Resubmission), so a cancellation is written validly as
# TransmissionType MutuallyDefined plus a TransmissionData NoteMessage "Cancellation"
# (``cancellation_as="note"``); ``"transmission_type"`` writes OCAS' name as it is.
CANCELLATION = ("MutuallyDefined", "Cancellation")
_TRACKING_ID_MAX = 35  # core:RequestTrackingIDType

_PLACEMENT_EVENTS = {
    # eventType: placement status it leaves behind
    "PlacementCreated": "Pending",
    "PlacementUpdated": "Pending",
    "OfferIssued": "Offered",
    "DepositReceived": "Confirmed",
    "StudyPermitApproved": "Confirmed",
    "PlacementWithdrawn": "Withdrawn",
}
_DOMESTIC_EVENTS = (
    "ApplicationSubmitted",
    "ProgramChoiceAdded",
    "ProgramChoiceRemoved",
    "OfferMade",
    "OfferAccepted",
    "OfferDeclined",
    "ApplicationWithdrawn",
)


# -- identifiers ----------------------------------------------------------------------------


def _digest(seed: int, kind: str, index: int) -> bytes:
    return hashlib.sha256(f"workbench-sandbox|{kind}|{seed}|{index}".encode()).digest()


def _rng(seed: int, kind: str, index: int) -> random.Random:
    return random.Random(int.from_bytes(_digest(seed, kind, index), "big"))


def _guid(seed: int, kind: str, index: int) -> uuid.UUID:
    return uuid.UUID(bytes=_digest(seed, kind, index)[:16], version=4)


def request_id(seed: int, index: int) -> str:
    """The RequestID of the supplier side's request ``index``: 32 lowercase hex digits."""
    return _guid(seed, "request-id", index).hex


def transcript_id(seed: int, index: int) -> str:
    """The RequestID of the consumer side's transcript ``index`` (a stream apart from requests)."""
    return _guid(seed, "transcript-id", index).hex


def dashed_id(plain: str) -> str:
    """``request_id()``/``transcript_id()`` as a dashed 36-character GUID: the ``guid`` scheme's
    API RequestID, which cannot be a RequestTrackingID (35 characters at most)."""
    return str(uuid.UUID(hex=plain))


def tracking_number(stream: str, index: int, created: datetime) -> str:
    """An OCAS-style tracking id (``C2026030200001``): C, the date, a serial in the stream.

    ``stream`` is "request" or "transcript"; transcripts count from 50,001 so the two differ.
    """
    serial = index + 1 if stream == "request" else 50_001 + index
    return f"C{_utc(created, 'created'):%Y%m%d}{serial:05d}"


# -- documents ------------------------------------------------------------------------------


def transcript_request_xml(
    seed: int,
    index: int,
    *,
    request_id: str,
    created: datetime,
    namespaces: str = "v1.0.0",
    defect: str | None = None,
    version: int = 1,
    transmission_type: str = "Original",
    cancellation_as: str = "note",
    process_code: str = "PRODUCTION",
) -> str:
    """An OCAS-like TranscriptRequest asking the home college for a student's transcript.

    ``version`` 2, 3, ... is a later document for the same request (a new DocumentID) of the
    given ``transmission_type`` (see ``TRANSMISSION_TYPES``); a Cancellation is written as
    ``cancellation_as`` says (``CANCELLATION``). ``process_code``: its DocumentProcessCode,
    PRODUCTION or TEST.
    """
    family, created_text = _check(namespaces, defect, request_id, created)
    parts = request_parts(
        _rng(seed, "transcript-request", index),
        request_id=request_id,
        created=created,
        created_text=created_text,
        document_id=_guid(seed, _versioned("transcript-request-document", version), index).hex,
    )
    root = _message(family, "TranscriptRequest", "TrnReq", parts, qualify_children=True)
    _set_transmission_type(root, transmission_type, cancellation_as)
    _set_process_code(root, process_code)
    defects = _rng(seed, "transcript-request-defect", index)
    if defect == "invalid":
        defects.choice((_dashed_document_id, _digits_birthday))(root)
    return _finish(root, defect, defects)


def college_transcript_xml(
    seed: int,
    index: int,
    *,
    request_id: str,
    created: datetime,
    namespaces: str = "v1.0.0",
    defect: str | None = None,
    version: int = 1,
    transmission_type: str = "Original",
    cancellation_as: str = "note",
    process_code: str = "PRODUCTION",
) -> str:
    """A CollegeTranscript (DocumentTypeCode RequestedRecord) filling request ``request_id``.

    ``version``, ``transmission_type``, ``cancellation_as`` and ``process_code`` as for
    ``transcript_request_xml``.
    """
    family, created_text = _check(namespaces, defect, request_id, created)
    document = _versioned("college-transcript-document", version)
    digits = int.from_bytes(_digest(seed, document, index)[:8], "big")
    parts = transcript_parts(
        _rng(seed, "college-transcript", index),
        request_id=request_id,
        created=created,
        created_text=created_text,
        # Like the Ontario sample's "123456789123456789": a timestamp and a serial.
        document_id=f"{created.astimezone(UTC):%Y%m%d%H%M%S}{digits % 10**6:06d}",
    )
    root = _message(family, "CollegeTranscript", "ColTrn", parts, qualify_children=False)
    _set_transmission_type(root, transmission_type, cancellation_as)
    _set_process_code(root, process_code)
    defects = _rng(seed, "college-transcript-defect", index)
    if defect == "invalid":
        defects.choice((_dashed_document_id, _foreign_element))(root)
    return _finish(root, defect, defects)


def acknowledgment_xml(
    transcript_root: etree._Element,
    *,
    request_id: str,
    created: datetime,
    namespaces: str = "v1.0.0",
    process_code: str = "PRODUCTION",
) -> str:
    """The Acknowledgment the partner returns for a transcript, with counted totals, saying
    ``process_code`` (the partner's environment, whatever the transcript said).

    Works on any CollegeTranscript version; raises ValueError for any other root.
    """
    family, created_text = _check(namespaces, None, request_id, created)
    if isinstance(transcript_root, etree._ElementTree):
        transcript_root = transcript_root.getroot()
    parts = acknowledgment_parts(
        transcript_root, request_id=request_id, created_text=created_text, created=created
    )
    root = _message(family, "Acknowledgment", "TrnAck", parts, qualify_children=False)
    _set_process_code(root, process_code)
    return _serialize(root)


def _versioned(kind: str, version: int) -> str:
    """The draw name of a document's id: version 1 keeps the name it always had."""
    return kind if version == 1 else f"{kind}-v{version}"


def _set_transmission_type(
    root: etree._Element, transmission_type: str, cancellation_as: str
) -> None:
    """Write TransmissionType; a Cancellation the valid way (``CANCELLATION``) unless
    ``cancellation_as`` is "transmission_type" (OCAS' name, outside PESC's enumeration)."""
    if transmission_type not in TRANSMISSION_TYPES:
        raise ValueError(
            f"transmission_type must be one of {TRANSMISSION_TYPES}, not {transmission_type!r}"
        )
    if cancellation_as not in ("note", "transmission_type"):
        raise ValueError(
            f"cancellation_as must be note or transmission_type, not {cancellation_as!r}"
        )
    element = _first(root, "TransmissionData/TransmissionType")
    if transmission_type == "Cancellation" and cancellation_as == "note":
        element.text = CANCELLATION[0]
        leaf_note = leaf("NoteMessage", CANCELLATION[1])
        assert leaf_note is not None
        _first(root, "TransmissionData").append(leaf_note)  # NoteMessage comes last
    else:
        element.text = transmission_type


def _set_process_code(root: etree._Element, process_code: str) -> None:
    """Write TransmissionData/DocumentProcessCode (placed before RequestTrackingID, as the
    schemas order it, when the document had none)."""
    if process_code not in PROCESS_CODES:
        raise ValueError(f"process_code must be one of {PROCESS_CODES}, not {process_code!r}")
    transmission = _first(root, "TransmissionData")
    found = transmission.xpath("*[local-name()='DocumentProcessCode']")
    if isinstance(found, list) and found:
        element = found[0]
        assert isinstance(element, etree._Element)
    else:
        element = etree.Element("DocumentProcessCode")
        after = transmission.xpath("*[local-name()='Source' or local-name()='Destination'][last()]")
        assert isinstance(after, list) and after
        anchor = after[0]
        assert isinstance(anchor, etree._Element)
        anchor.addnext(element)
    element.text = process_code


def miscount_courses(acknowledgment: str) -> str:
    """The acknowledgment with its ``CourseTotal`` one short (one more when it is 0): the
    partner-side miscount a reconciliation must catch."""
    root = etree.fromstring(acknowledgment.encode())
    for total in root.iter("{*}CourseTotal"):
        count = int(total.text or 0)
        total.text = str(count - 1 if count > 0 else 1)
    return _serialize(root)


def _check(
    namespaces: str, defect: str | None, request_id: str, created: datetime
) -> tuple[dict[str, str], str]:
    """Validate the common arguments; the namespace family and CreatedDateTime's text."""
    if namespaces not in NAMESPACE_FAMILIES:
        raise ValueError(
            f"namespaces must be one of {sorted(NAMESPACE_FAMILIES)}, not {namespaces!r}"
        )
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect must be None or one of {DEFECTS}, not {defect!r}")
    if not 1 <= len(request_id) <= _TRACKING_ID_MAX:
        raise ValueError(
            f"request_id {request_id!r} has {len(request_id)} characters; RequestTrackingID "
            f"takes 1..{_TRACKING_ID_MAX} (use request_id()/transcript_id(), 32 hex digits)"
        )
    return NAMESPACE_FAMILIES[namespaces], _xml_datetime(created)


def _utc(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got naive {moment.isoformat()}")
    return moment.astimezone(UTC)


def _xml_datetime(moment: datetime) -> str:
    """xs:dateTime in UTC with ``Z``; milliseconds only when there are any."""
    moment = _utc(moment, "created")
    spec = "milliseconds" if moment.microsecond else "seconds"
    return moment.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def _message(
    family: dict[str, str],
    message: str,
    prefix: str,
    children: list[etree._Element],
    *,
    qualify_children: bool,
) -> etree._Element:
    """The root in the message namespace, declaring core (and AcRec) as real documents do."""
    uri = family[message]
    nsmap = {prefix: uri, "core": family["CoreMain"]}
    if "AcademicRecord" in family:
        nsmap["AcRec"] = family["AcademicRecord"]
    root = etree.Element(f"{{{uri}}}{message}", nsmap=nsmap)
    for child in children:
        if qualify_children:
            child.tag = f"{{{uri}}}{child.tag}"
        root.append(child)
    return root


def _serialize(root: etree._Element) -> str:
    return etree.tostring(root, encoding="unicode", pretty_print=True)


def _finish(root: etree._Element, defect: str | None, rng: random.Random) -> str:
    xml = _serialize(root)
    return _break(xml, rng) if defect == "malformed" else xml


# -- defects --------------------------------------------------------------------------------


def _first(root: etree._Element, path: str) -> etree._Element:
    """The first element on a local-name path such as ``TransmissionData/DocumentID``."""
    steps = "/".join(f"*[local-name()='{step}']" for step in path.split("/"))
    found = root.xpath(f".//{steps}")
    assert isinstance(found, list) and found, path
    element = found[0]
    assert isinstance(element, etree._Element)
    return element


def _dashed_document_id(root: etree._Element) -> None:
    """The 36-character GUID DocumentID OCAS sends (the schema allows 35)."""
    element = _first(root, "TransmissionData/DocumentID")
    digest = hashlib.sha256((element.text or "").encode()).digest()
    element.text = str(uuid.UUID(bytes=digest[:16], version=4)).upper()


def _digits_birthday(root: etree._Element) -> None:
    """``Birthday`` ``1210`` where ``--12-10`` belongs (xs:gMonthDay in CoreMain 1.12)."""
    birth_date = _first(root, "Person/Birth/BirthDate")
    birthday = leaf("Birthday", (birth_date.text or "2000-12-10")[5:].replace("-", ""))
    assert birthday is not None
    birth_date.addnext(birthday)
    birth_date.getparent().remove(birth_date)  # type: ignore[union-attr]


def _foreign_element(root: etree._Element) -> None:
    """A local ``ProgramUSISCode`` inside ``AcademicProgram``, as seen in OCAS test files."""
    program = _first(root, "AcademicSession/AcademicProgram")
    etree.SubElement(program, "ProgramUSISCode").text = "350110"


def _break(xml: str, rng: random.Random) -> str:
    """Make the text not well-formed, the ways real senders do."""
    ways: list[Callable[[str], str]] = [
        lambda s: s[: rng.randint(len(s) * 2 // 5, len(s) * 9 // 10)],  # cut off in transit
        lambda s: s.replace("</LastName>", "", 1),  # a closing tag lost
    ]
    if "&amp;" in xml:
        ways.append(lambda s: s.replace("&amp;", "&", 1))  # an unescaped ampersand
    return rng.choice(ways)(xml)


# -- events ---------------------------------------------------------------------------------


def _iso_ms(moment: datetime) -> str:
    moment = _utc(moment, "occurred_at")
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def _event(
    seed: int,
    kind: str,
    index: int,
    event_type: str,
    occurred_at: datetime,
    payload: dict[str, Any],
) -> dict[str, Any]:
    return {
        "eventId": str(_guid(seed, f"{kind}-id", index)),
        "eventType": event_type,
        "occurredAt": _iso_ms(occurred_at),
        "payload": payload,
    }


def shaped_event(event: dict[str, Any], shape: str, time: str = "iso") -> dict[str, Any]:
    """An event record (as :func:`placement_event` makes it) as a partner of ``shape`` sends
    it: "flat" as it is, "kind_at" ``{id, kind, at, payload}``, "event_info" OCAS'
    International SIS ``{id, eventInfo: {action, data}}`` (no time); the time written as
    ``time``: "iso" text, "epoch_ms" (milliseconds since 1970) or "dotnet" (``/Date(ms)/``)."""
    when = event["occurredAt"]
    if time != "iso":
        moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
        ms = round(moment.timestamp() * 1000)
        when = ms if time == "epoch_ms" else f"/Date({ms})/"
    if shape == "kind_at":
        return {"id": event["eventId"], "kind": event["eventType"], "at": when,
                "payload": event["payload"]}  # fmt: skip
    if shape == "event_info":
        return {"id": event["eventId"],
                "eventInfo": {"action": event["eventType"], "data": event["payload"]}}  # fmt: skip
    return {**event, "occurredAt": when}


def placement_event(seed: int, index: int, *, occurred_at: datetime) -> dict[str, Any]:
    """An international placement event (JSON-able): a placement's life at the college."""
    rng = _rng(seed, "placement-event", index)
    event_type = rng.choices(list(_PLACEMENT_EVENTS), (4, 3, 3, 2, 1, 1))[0]
    code, program = rng.choice(pools.EVENT_PROGRAMS)
    intake = Term.containing(_utc(occurred_at, "occurred_at").date()).next()
    if rng.random() < 0.5:
        intake = intake.next()
    payload = {
        "placementId": f"PL{rng.randint(10**7, 10**8 - 1)}",
        "studentId": f"2{rng.randint(10**7, 10**8 - 1)}",
        "givenName": rng.choice(pools.FIRST_NAMES),
        "familyName": rng.choice(pools.LAST_NAMES),
        "citizenship": rng.choice(pools.CITIZENSHIPS),
        "programCode": code,
        "programName": program,
        "campus": rng.choice(pools.CAMPUSES),
        "intake": intake.designator,
        "status": _PLACEMENT_EVENTS[event_type],
    }
    return _event(seed, "placement-event", index, event_type, occurred_at, payload)


def domestic_event(seed: int, index: int, *, occurred_at: datetime) -> dict[str, Any]:
    """A domestic on-demand application event (JSON-able): an applicant's choices and offers."""
    rng = _rng(seed, "domestic-event", index)
    event_type = rng.choices(_DOMESTIC_EVENTS, (5, 3, 1, 3, 2, 1, 1))[0]
    code, program = rng.choice(pools.EVENT_PROGRAMS)
    when = _utc(occurred_at, "occurred_at")
    payload: dict[str, Any] = {
        "applicationNumber": f"{when.year % 100:02d}{rng.randint(10**6, 10**7 - 1)}",
        "accountNumber": f"{rng.randint(10**7, 10**8 - 1)}",
        "givenName": rng.choice(pools.FIRST_NAMES),
        "familyName": rng.choice(pools.LAST_NAMES),
        "programCode": code,
        "programName": program,
        "campus": rng.choice(pools.CAMPUSES),
        "entryTerm": f"{when.year + 1}-09",
        "choiceNumber": rng.randint(1, 5),
    }
    if event_type == "OfferMade":
        payload["offerCondition"] = rng.choice(("Unconditional", "Conditional"))
    return _event(seed, "domestic-event", index, event_type, occurred_at, payload)
