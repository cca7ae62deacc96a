"""A field of a partner's item by name, and an event's id, type, time and payload wherever a
partner keeps them (DESIGN §3).

Names are tried in order, in any case, underscores and hyphens aside: the profile's
``event_fields`` paths, then the event's own names (``eventType``) at its top or one level
down, then generic ones (``type``) at its top or in an object about the event
(``EVENT_HOLDERS``), never in its payload, where ``id`` and ``type`` are the student's. A name
two keys match counts once when they hold the same value, else as absent. Nothing is
required.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from operator import getitem
from typing import Any

EVENT_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "id": (("eventId", "eventGuid", "eventUuid"), ("id", "guid", "uuid")),
    "type": (("eventType", "eventName", "eventKind"), ("type", "kind", "action", "event")),
    "time": (
        ("occurredAt", "occurredOn", "eventTime", "eventDate", "eventTimestamp"),
        ("at", "timestamp", "time", "dateTime", "date", "createdAt", "createdOn", "created"),
    ),
}
EVENT_HOLDERS = ("eventInfo", "event", "eventHeader", "meta", "metadata", "header", "envelope")
# Where an event keeps its data (the report's program and campus): at its top, or in a holder.
PAYLOAD_NAMES = ("payload", "data", "eventData", "body", "details", "detail")
_DOTNET_DATE = re.compile(r"/Date\((-?\d+)(?:[+-]\d{4})?\)/")  # ASP.NET's JSON dates, in ms
_EPOCH_SECONDS = 10**9  # 2001-09-09: a smaller number under a time's name is not a time
_EPOCH_MILLISECONDS = 10**12
Keys = tuple[Any, ...]  # the keys leading to a field: ("eventInfo", "action")
_HOLDERS = frozenset(h.lower() for h in EVENT_HOLDERS)


def _plain(name: Any) -> str:
    return str(name).lower().replace("_", "").replace("-", "")


@dataclass(frozen=True)
class EventFields:
    """What an event says of itself (None: nothing); ``paths``: the keys each was found under."""

    id: str | None = None
    type: str | None = None
    time: datetime | None = None
    payload: Mapping[str, Any] | None = None
    paths: Mapping[str, Keys] = field(default_factory=dict)


def event_fields(event: Any, paths: Mapping[str, str] | None = None) -> EventFields:
    """What ``event`` says of itself; ``paths``: a profile's ``event_fields``."""
    if not isinstance(event, Mapping):
        return EventFields()
    found: dict[str, Any] = {}
    where: dict[str, Keys] = {}
    below = [(k, v) for k, v in event.items() if isinstance(v, Mapping)]
    for what, (own, generic) in EVENT_NAMES.items():
        read = event_time if what == "time" else _id_or_type
        places: list[Keys] = [(key,) for key in _keys(event, (*own, *generic))]
        for outer, inner in below:
            names = (*own, *generic) if _plain(outer) in _HOLDERS else own
            places += [(outer, key) for key in _keys(inner, names)]
        mapped = _resolve(event, (paths or {}).get(what))
        for keys in [mapped, *places] if mapped else places:
            value = read(reduce(getitem, keys, event))
            if value is not None:
                found[what], where[what] = value, keys
                break
    holders = [((), event)] + [((k,), v) for k, v in below if _plain(k) in _HOLDERS]
    for outer, node in holders:
        key = next((k for k in _keys(node, PAYLOAD_NAMES) if isinstance(node[k], Mapping)), None)
        if key is not None:
            found["payload"], where["payload"] = node[key], (*outer, key)
            break
    return EventFields(paths=where, **found)


def event_time(value: Any) -> datetime | None:
    """A partner's time as UTC: ISO 8601 text (without a zone: UTC), ASP.NET's
    ``/Date(1772442000000)/``, or epoch seconds or milliseconds past 2001-09-09; else None."""
    try:
        if isinstance(value, str):
            text = value.strip()
            dotnet = _DOTNET_DATE.fullmatch(text)
            if dotnet:
                return datetime.fromtimestamp(int(dotnet[1]) / 1000, UTC)
            when = datetime.fromisoformat(text)
            return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if abs(value) >= _EPOCH_MILLISECONDS else value
            return datetime.fromtimestamp(seconds, UTC) if seconds >= _EPOCH_SECONDS else None
    except (ValueError, OverflowError, OSError):
        return None
    return None


def _id_or_type(value: Any) -> str | None:
    if isinstance(value, str):
        return value if value.strip() else None
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _keys(node: Mapping[Any, Any], names: tuple[str, ...]) -> list[Any]:
    """The keys of ``node`` that are ``names`` (:func:`keys_named`; not a name two keys match)."""
    found = [keys_named(node, name) for name in names]
    return [keys[0] for keys in found if len(keys) == 1]


def _resolve(event: Mapping[str, Any], path: str | None) -> Keys | None:
    """The keys a dotted path names, each matched in any case; None where it leads nowhere."""
    keys: list[Any] = []
    node: Any = event
    for part in (path or "").split(".") if path else ():
        found = _keys(node, (part.strip(),)) if isinstance(node, Mapping) else []
        if not found:
            return None
        keys.append(found[0])
        node = node[found[0]]
    return tuple(keys) or None


def keys_named(item: Mapping[Any, Any], name: str) -> list[Any]:
    """The keys of ``item`` that are ``name`` (:func:`_plain`): a field when exactly one is.
    Several count as one when they hold the same value (a partner adding ``request_id`` beside
    ``RequestID``); when they differ, which one counts cannot be told."""
    wanted = _plain(name)
    found = [key for key in item if _plain(key) == wanted]
    return found[:1] if len(found) > 1 and len({repr(item[key]) for key in found}) == 1 else found


def field_value(item: Any, *names: str) -> Any:
    """The first of ``names`` in ``item`` (:func:`_keys`) with a value: not None, not blank;
    None when ``item`` is not an object."""
    for key in _keys(item, names) if isinstance(item, Mapping) else ():
        value = item[key]
        if value is not None and (not isinstance(value, str) or value.strip()):
            return value
    return None
