"""The sandbox's gateway events: deterministic records, and the shapes partners send them in."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from workbench.sandbox import pools
from workbench.sandbox.bodies import Term
from workbench.sandbox.generator import draw, guid, utc

# eventType: the placement status it leaves behind
PLACEMENT_EVENTS = {
    "PlacementCreated": "Pending",
    "PlacementUpdated": "Pending",
    "OfferIssued": "Offered",
    "DepositReceived": "Confirmed",
    "StudyPermitApproved": "Confirmed",
    "PlacementWithdrawn": "Withdrawn",
}
DOMESTIC_EVENTS = (
    "ApplicationSubmitted",
    "ProgramChoiceAdded",
    "ProgramChoiceRemoved",
    "OfferMade",
    "OfferAccepted",
    "OfferDeclined",
    "ApplicationWithdrawn",
)


def placement_event(seed: int, index: int, *, occurred_at: datetime) -> dict[str, Any]:
    """An international placement event (JSON-able): a placement's life at the college."""
    rng = draw(seed, "placement-event", index)
    event_type = rng.choices(list(PLACEMENT_EVENTS), (4, 3, 3, 2, 1, 1))[0]
    intake = Term.of(utc(occurred_at).date()).next()
    if rng.random() < 0.5:
        intake = intake.next()
    payload = {
        "placementId": f"PL{rng.randint(10**7, 10**8 - 1)}",
        "studentId": f"2{rng.randint(10**7, 10**8 - 1)}",
        "citizenship": rng.choice(pools.CITIZENSHIPS),
        "intake": intake.designator,
        "status": PLACEMENT_EVENTS[event_type],
    }
    return _event(seed, "placement-event", index, event_type, occurred_at, rng, payload)


def domestic_event(seed: int, index: int, *, occurred_at: datetime) -> dict[str, Any]:
    """A domestic on-demand application event (JSON-able): an applicant's choices and offers."""
    rng = draw(seed, "domestic-event", index)
    event_type = rng.choices(DOMESTIC_EVENTS, (5, 3, 1, 3, 2, 1, 1))[0]
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
    code, program = rng.choice(pools.EVENT_PROGRAMS)
    student = {
        "givenName": rng.choice(pools.FIRST_NAMES),
        "familyName": rng.choice(pools.LAST_NAMES),
    }
    where = {"programCode": code, "programName": program, "campus": rng.choice(pools.CAMPUSES)}
    return {
        "eventId": str(guid(seed, f"{kind}-id", index)),
        "eventType": event_type,
        "occurredAt": utc(occurred_at).replace(tzinfo=None).isoformat(timespec="milliseconds")
        + "Z",
        "payload": {**student, **payload, **where},
    }


def shaped_event(event: dict[str, Any], shape: str, time: str = "iso") -> dict[str, Any]:
    """An event record as a partner of ``shape`` sends it: "flat" as it is, "kind_at" ``{id,
    kind, at, payload}``, "event_info" OCAS' ``{id, eventInfo: {action, data}}`` (no time); the
    time as ``time`` says: "iso" text, "epoch_ms" (milliseconds since 1970) or "dotnet"
    (``/Date(ms)/``)."""
    when = event["occurredAt"]
    if time != "iso":
        ms = round(datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() * 1000)
        when = ms if time == "epoch_ms" else f"/Date({ms})/"
    if shape == "kind_at":
        return {"id": event["eventId"], "kind": event["eventType"], "at": when,
                "payload": event["payload"]}  # fmt: skip
    if shape == "event_info":
        return {"id": event["eventId"],
                "eventInfo": {"action": event["eventType"], "data": event["payload"]}}  # fmt: skip
    return {**event, "occurredAt": when}
