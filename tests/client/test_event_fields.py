"""An event's id, type, time and payload, wherever the partner keeps them (DESIGN §3): a
profile's paths first, then common names at the top, then one level down; nothing required."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from workbench.http.events import event_fields, event_time

NINE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PAYLOAD = {"id": "student-1", "type": "Full-time", "createdAt": "2019-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("event", "found"),
    [
        ({"eventId": "E1", "eventType": "OfferMade", "occurredAt": "2026-03-02T09:00:00.000Z",
          "payload": PAYLOAD}, ("E1", "OfferMade", NINE)),
        ({"id": "E1", "kind": "OfferMade", "at": "2026-03-02T09:00:00Z", "payload": PAYLOAD},
         ("E1", "OfferMade", NINE)),
        ({"id": "E1", "eventInfo": {"action": "OfferMade", "data": PAYLOAD}},
         ("E1", "OfferMade", None)),
        ({"EVENTID": "E1", "Type": "OfferMade", "TimeStamp": 1772442000},
         ("E1", "OfferMade", NINE)),
        ({"event_id": 7, "event": "OfferMade", "created_at": "2026-03-02 09:00:00"},
         ("7", "OfferMade", NINE)),
        ({"meta": {"id": "E1", "type": "OfferMade", "time": "/Date(1772442000000)/"},
          "data": PAYLOAD}, ("E1", "OfferMade", NINE)),
        ({"data": {"eventId": "E1", "eventType": "OfferMade", "occurredOn": 1772442000000}},
         ("E1", "OfferMade", NINE)),
    ],
)  # fmt: skip
def test_common_names_are_found_at_the_top_or_one_level_down(event, found) -> None:
    said = event_fields(event)
    assert (said.id, said.type, said.time) == found


def test_a_payloads_generic_names_are_not_the_events() -> None:
    """In a payload, ``id`` and ``type`` are the student's: taken for the event's id, they
    would merge every event about that student into one."""
    said = event_fields({"payload": PAYLOAD})
    assert (said.id, said.type, said.time) == (None, None, None)
    assert said.payload == PAYLOAD


@pytest.mark.parametrize(
    ("event", "payload", "where"),
    [
        ({"payload": {"a": 1}}, {"a": 1}, ("payload",)),
        ({"Data": {"a": 1}}, {"a": 1}, ("Data",)),
        ({"eventInfo": {"action": "x", "data": {"a": 1}}}, {"a": 1}, ("eventInfo", "data")),
        ({"payload": "text", "a": 1}, None, None),
        ({"a": 1}, None, None),
    ],
)
def test_the_payload_is_found_wherever_the_event_keeps_it(event, payload, where) -> None:
    said = event_fields(event)
    assert said.payload == payload
    assert said.paths.get("payload") == where


def test_the_profiles_paths_come_first_in_any_case_then_the_common_names() -> None:
    event = {"evt": {"No": "N1", "what": "OfferMade", "when": "2026-03-02T09:00:00Z"},
             "eventType": "Ignored", "id": "ignored"}  # fmt: skip
    paths = {"id": "evt.no", "type": "EVT.What", "time": "evt.when"}
    said = event_fields(event, paths)
    assert (said.id, said.type, said.time) == ("N1", "OfferMade", NINE)
    assert said.paths["id"] == ("evt", "No")  # the keys as the event spells them
    # a path that leads nowhere, or to no usable value, falls back to the common names
    said = event_fields(event, {"id": "evt.missing", "type": "evt", "time": "evt.what"})
    assert (said.id, said.type, said.time) == ("ignored", "Ignored", None)


@pytest.mark.parametrize(
    "event",
    ["a", 2, None, [], {}, {"id": {"nested": 1}, "type": ["x"], "at": "yesterday"},
     {"id": True, "type": "  ", "occurredAt": False}, {"id": "x", "ID": "y"}],
)  # fmt: skip
def test_nothing_is_required(event: Any) -> None:
    said = event_fields(event)
    assert (said.id, said.type, said.time, said.payload) == (None, None, None, None)


def test_an_unreadable_time_gives_way_to_a_readable_one() -> None:
    said = event_fields({"occurredAt": "yesterday", "timestamp": "2026-03-02T04:00:00-05:00"})
    assert said.time == NINE
    assert said.paths["time"] == ("timestamp",)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-03-02T09:00:00Z", NINE),
        ("2026-03-02T09:00:00.0000000Z", NINE),  # .NET writes seven digits
        ("2026-03-02T10:00:00+01:00", NINE),
        ("2026-03-02T09:00:00", NINE),  # no zone: UTC
        ("/Date(1772442000000)/", NINE),
        ("/Date(1772442000000-0500)/", NINE),  # the offset is the writer's zone; ms are UTC
        (1772442000, NINE),
        (1772442000000, NINE),
        (1772442000.0, NINE),
        ("yesterday", None),
        ("", None),
        (5, None),  # under a time's name, but no time
        (True, None),
        (10**30, None),
        ("9999-12-31T23:00:00-05:00", None),  # past the last time Python holds
        (None, None),
        ({"at": 1}, None),
    ],
)
def test_times_the_partner_may_write(value: Any, expected: datetime | None) -> None:
    assert event_time(value) == expected
