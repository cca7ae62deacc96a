"""The sandbox's data: OCAS-like transcript requests, college transcripts and gateway events,
each drawn from a SHA-256 of (seed, kind, index), so the same arguments give the same bytes."""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import Any

from lxml import etree

from workbench.sandbox import bodies
from workbench.sandbox.bodies import HOME_COLLEGE, POOLS, Term, node, ocas, organization
from workbench.spec import NAMESPACE_FAMILIES

DEFECTS = ("malformed", "invalid")


def _digest(seed: int, kind: str, index: int) -> bytes:
    return hashlib.sha256(f"workbench-sandbox|{kind}|{seed}|{index}".encode()).digest()


def draw(seed: int, kind: str, index: int) -> random.Random:
    """The random draws of one (seed, kind, index): never the global generator."""
    return random.Random(int.from_bytes(_digest(seed, kind, index), "big"))


def guid(seed: int, kind: str, index: int) -> uuid.UUID:
    return uuid.UUID(bytes=_digest(seed, kind, index)[:16], version=4)


def item_id(seed: int, kind: str, index: int) -> str:
    """The id of ``kind``'s item ``index``: a GUID as 32 hex digits, short enough to track by."""
    return guid(seed, f"{kind}-id", index).hex


def tracking_number(stream: str, index: int, created: datetime) -> str:
    """An OCAS-style tracking id (``C2026030200001``); transcripts count from 50,001."""
    serial = index + 1 if stream == "request" else 50_001 + index
    return f"C{utc(created):%Y%m%d}{serial:05d}"


@lru_cache(maxsize=4096)  # a partner has its documents ready: made once, served many times
def document(
    message: str,
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
    """A ``message`` document as XML text; ``version`` 2, 3... a later one for the same id;
    ``defect`` "malformed" (not well-formed) or "invalid" (against its schema, as real ones)."""
    kind = "transcript-request" if message == "TranscriptRequest" else "college-transcript"
    rng = draw(seed, kind, index)
    document_id = f"{kind}-document" + ("" if version == 1 else f"-v{version}")
    when = iso_ms(created)  # an xs:dateTime too
    cancel_note = transmission_type == "Cancellation" and cancellation_as == "note"
    if message == "TranscriptRequest":
        document_id = guid(seed, document_id, index).hex
        source, destination = ocas(), organization("CSIS", *HOME_COLLEGE[::-1])
        body = bodies.request(rng, created, when, request_id)
    else:
        serial = int.from_bytes(_digest(seed, document_id, index)[:8], "big") % 10**6
        # Like the Ontario sample's "123456789123456789": a timestamp and a serial.
        document_id = f"{utc(created):%Y%m%d%H%M%S}{serial:06d}"
        sender = rng.choice(POOLS["colleges"])
        source, destination = organization(sender[1], sender[2], sender[0]), ocas()
        body = bodies.student(rng, created, sender)
    official = "Official" if message == "CollegeTranscript" else None
    transmission = node(
        "TransmissionData",
        {
            "DocumentID": document_id,
            "CreatedDateTime": when,
            "DocumentTypeCode": "Request" if message == "TranscriptRequest" else "RequestedRecord",
            "TransmissionType": "MutuallyDefined" if cancel_note else transmission_type,
        },
        node("Source", source),
        node("Destination", destination),
        {
            "DocumentProcessCode": process_code,
            "DocumentOfficialCode": official,
            "DocumentCompleteCode": official and "Complete",
            "RequestTrackingID": request_id,
            "NoteMessage": "Cancellation" if cancel_note else None,
        },
    )
    family = NAMESPACE_FAMILIES[namespaces]
    uri = family[message]
    prefix = "TrnReq" if message == "TranscriptRequest" else "ColTrn"
    nsmap = {prefix: uri, "core": family["CoreMain"]}
    if "AcademicRecord" in family:
        nsmap["AcRec"] = family["AcademicRecord"]
    root = etree.Element(f"{{{uri}}}{message}", nsmap=nsmap)
    for child in (transmission, body):
        if message == "TranscriptRequest":  # elementFormDefault="qualified"
            child.tag = f"{{{uri}}}{child.tag}"
        root.append(child)
    defects = draw(seed, f"{kind}-defect", index)
    if defect == "invalid":
        _invalidate(root, defects, message)
    xml = etree.tostring(root, encoding="unicode", pretty_print=True)
    return _break(xml, defects) if defect == "malformed" else xml


transcript_request_xml = partial(document, "TranscriptRequest")
college_transcript_xml = partial(document, "CollegeTranscript")


def miscount_courses(acknowledgment: str) -> str:
    """The acknowledgment with its ``CourseTotal`` one off, for a reconciliation to catch."""
    count = re.compile(r"(?<=<CourseTotal>)\d+(?=</CourseTotal>)")
    return count.sub(lambda m: str(int(m[0]) - 1 if int(m[0]) else 1), acknowledgment)


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a ValueError when it is naive."""
    if moment.utcoffset() is None:
        raise ValueError(f"times must be timezone-aware (UTC), got naive {moment.isoformat()}")
    return moment.astimezone(UTC)


def iso_ms(moment: datetime) -> str:
    """ISO 8601 UTC with milliseconds, as the spec writes `<timestamp>`."""
    return utc(moment).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def _invalidate(root: etree._Element, rng: random.Random, message: str) -> None:
    """One schema error seen in real documents."""
    if rng.random() < 0.5:  # OCAS' 36-character GUIDs, where 35 characters fit
        element = root.find(".//{*}DocumentID")
        assert element is not None
        digest = hashlib.sha256((element.text or "").encode()).digest()
        element.text = str(uuid.UUID(bytes=digest[:16], version=4)).upper()
    elif message == "TranscriptRequest":  # 1210 where xs:gMonthDay wants --12-10
        birth = root.find(".//{*}BirthDate")
        assert birth is not None
        birth.tag, birth.text = "Birthday", (birth.text or "2000-12-10")[5:].replace("-", "")
    else:  # a local element inside AcademicProgram, as in OCAS' test files
        program = root.find(".//{*}AcademicProgram")
        assert program is not None
        etree.SubElement(program, "ProgramUSISCode").text = "350110"


def _break(xml: str, rng: random.Random) -> str:
    """Not well-formed, the ways real senders manage: cut off, a closing tag lost, a raw ``&``."""
    ways = [xml[: rng.randint(len(xml) * 2 // 5, len(xml) * 9 // 10)]]
    ways.append(xml.replace("</LastName>", "", 1))
    if "&amp;" in xml:
        ways.append(xml.replace("&amp;", "&", 1))
    return rng.choice(ways)


def placement_event(seed: int, index: int, *, occurred_at: datetime) -> dict[str, Any]:
    """An international placement event (JSON-able): a placement's life at the college."""
    rng = draw(seed, "placement-event", index)
    events = POOLS["placement_events"]
    event_type, status, _ = rng.choices(events, [weight for *_, weight in events])[0]
    intake = Term.of(utc(occurred_at).date()).next()
    if rng.random() < 0.5:
        intake = intake.next()
    payload = {
        "placementId": f"PL{rng.randint(10**7, 10**8 - 1)}",
        "studentId": f"2{rng.randint(10**7, 10**8 - 1)}",
        "citizenship": rng.choice(POOLS["citizenships"]),
        "intake": intake.designator,
        "status": status,
    }
    return _event(seed, "placement-event", index, event_type, occurred_at, rng, payload)


def domestic_event(seed: int, index: int, *, occurred_at: datetime) -> dict[str, Any]:
    """A domestic on-demand application event (JSON-able): an applicant's choices and offers."""
    rng = draw(seed, "domestic-event", index)
    event_type = rng.choices(*zip(*POOLS["domestic_events"], strict=True))[0]
    year = utc(occurred_at).year
    payload: dict[str, Any] = {
        "applicationNumber": f"{year % 100:02d}{rng.randint(10**6, 10**7 - 1)}",
        "entryTerm": f"{year + 1}-09",
        "choiceNumber": rng.randint(1, 5),
    }
    if event_type == "OfferMade":
        payload["offerCondition"] = rng.choice(("Unconditional", "Conditional"))
    return _event(seed, "domestic-event", index, event_type, occurred_at, rng, payload)


def _event(
    seed: int,
    kind: str,
    index: int,
    event_type: str,
    occurred_at: datetime,
    rng: random.Random,
    payload: dict[str, Any],
) -> dict[str, Any]:
    """The record of an event: its student and program drawn here, the rest given."""
    code, program = rng.choice(POOLS["event_programs"])
    student = {
        "givenName": rng.choice(POOLS["first_names"]),
        "familyName": rng.choice(POOLS["last_names"]),
    }
    where = {"programCode": code, "programName": program, "campus": rng.choice(POOLS["campuses"])}
    return {
        "eventId": str(guid(seed, f"{kind}-id", index)),
        "eventType": event_type,
        "occurredAt": iso_ms(occurred_at),
        "payload": {**student, **payload, **where},
    }


def shaped_event(event: dict[str, Any], shape: str, time: str = "iso") -> dict[str, Any]:
    """An event record in the ``shape`` (flat, kind_at, event_info: OCAS' with no time) and the
    ``time`` (iso, epoch_ms, dotnet) a partner sends."""
    when = event["occurredAt"]
    if time != "iso":
        ms = round(datetime.fromisoformat(when).timestamp() * 1000)
        when = ms if time == "epoch_ms" else f"/Date({ms})/"
    if shape == "kind_at":
        return {"id": event["eventId"], "kind": event["eventType"], "at": when,
                "payload": event["payload"]}  # fmt: skip
    if shape == "event_info":
        return {"id": event["eventId"],
                "eventInfo": {"action": event["eventType"], "data": event["payload"]}}  # fmt: skip
    return {**event, "occurredAt": when}
