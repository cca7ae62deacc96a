"""Partner answers as data: one safe JSON decoder, and the shapes an answer may take.

Every answer body is decoded by :func:`loads`, which refuses what Python's ``json`` lets
through and something later breaks on: ``NaN``/``Infinity`` (and numbers too big for a float),
which SQLite's ``json_extract`` cannot read; lone surrogates (``"\\ud800"``), which cannot be
written as UTF-8; and nesting deeper than :data:`MAX_DEPTH`, which raises ``RecursionError``
wherever it is walked. Refused, not repaired: a repaired id would name another request.

The shapes (DESIGN §3):

- a **list** (pending requests, pending transcripts, event feeds) is an array, or an object
  holding exactly one array: :func:`list_items`. Anything else (``null``, ``{}``, a scalar, an
  object with no or several arrays) is a failed list, never an empty one.
- a **listed request** is an object whose ``RequestID`` (any case) can be sent back in a path
  (:func:`workbench.ids.check_request_id`): :func:`listed_requests`.
- a **detail** or a send's **echo** is an object, or an array of objects: :func:`answer_items`;
  a detail names the request it was asked for, or none: :func:`detail_items`.
- an **event** is any JSON: its id, type, time and payload are wherever the partner keeps
  them, or nowhere: :func:`event_fields`.

Each refusal is an :class:`~workbench.errors.UnreadableAnswer` (a ``PartnerError``).

>>> list_items({"requests": [{"RequestID": "A1"}]}, operation="x")
[{'RequestID': 'A1'}]
>>> try:
...     loads(b"[1, NaN]")
... except ValueError as exc:
...     print(exc)
NaN, which is not JSON
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from workbench.errors import InvalidValue, NotFound, UnreadableAnswer
from workbench.ids import check_request_id

MAX_DEPTH = 64  # partner answers are three or four levels deep
REQUEST_ID = "RequestID"
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SHOWN = 2000  # characters of an odd answer kept in the error's ``body``


def loads(content: bytes | str) -> Any:
    """Decode partner JSON strictly; ``ValueError`` saying what is wrong with it."""
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    try:
        text = data.decode("utf-8-sig")  # strict: raw surrogates or junk bytes are refused
    except UnicodeDecodeError:
        raise ValueError("a body that is not UTF-8 text") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except _Refused:
        raise
    except ValueError:  # JSONDecodeError, or an integer of more than 4300 digits
        raise ValueError("a body that is not JSON") from None
    _check(value, surrogates=_ESCAPED_SURROGATE.search(data) is not None)
    return value


def list_items(payload: Any, *, operation: str) -> list[Any]:
    """The items of a list answer: an array, or the one array an object holds."""
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict):
        arrays = [v for v in payload.values() if isinstance(v, list)]
        if len(arrays) == 1:
            return arrays[0]
    raise unexpected(
        operation, payload, "where a list was expected (an array, or an object holding one)"
    )


def answer_items(payload: Any, *, operation: str) -> list[dict[str, Any]]:
    """The items of a detail or send answer: an object, or an array of objects."""
    items = [payload] if isinstance(payload, dict) else payload
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise unexpected(operation, payload, "where an object or an array of objects was expected")
    return items


@dataclass
class Listed:
    """A list of requests read item by item: the usable ones, and why the others were not."""

    items: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (item shown, why)


def listed_requests(payload: Any, *, operation: str) -> Listed:
    """A pending list's items, each with a usable ``RequestID``; the others in ``refused``."""
    listed = Listed()
    for position, item in enumerate(list_items(payload, operation=operation)):
        try:
            listed.ids.append(request_id_of(item))
        except InvalidValue as exc:
            listed.refused.append((f"item {position + 1}", f"{operation}: {exc}"))
        else:
            listed.items.append(item)
    return listed


def keys_named(item: Mapping[Any, Any], name: str) -> list[Any]:
    """The keys of ``item`` that are ``name`` in any case.

    The one way to find a field: JSON lets an object hold ``requestid`` and ``RequestID``
    both, and which one counts must not depend on who reads it, so readers take a field only
    when exactly one key names it (the store's ``field`` too).
    """
    folded = name.lower()
    return [k for k in item if str(k).lower() == folded]


def request_id_of(item: Any) -> str:
    """The ``RequestID`` (any case) of an answer item; ``InvalidValue`` when it is not usable."""
    if not isinstance(item, dict):
        raise InvalidValue(f"the item is a {_kind(item)}, not an object with a RequestID.")
    keys = keys_named(item, REQUEST_ID)
    if not keys:
        raise InvalidValue("the item has no RequestID.")
    if len(keys) > 1:
        raise InvalidValue(_ambiguous(keys))
    try:
        return check_request_id(item[keys[0]])
    except InvalidValue as exc:
        raise InvalidValue(f"the item's RequestID is not usable: {exc}") from None


def detail_items(
    payload: Any, request_id: str, *, operation: str, subject: str
) -> list[dict[str, Any]]:
    """The items of a detail answer (``NotFound`` when none); refused when one names another
    request than ``request_id``."""
    items = answer_items(payload, operation=operation)
    if not items:
        raise NotFound(f"{operation}: the partner answered no {subject}.", status=200)
    for item in items:
        _check_echo(item, str(request_id), operation=operation)
    return items


def _check_echo(item: Mapping[str, Any], request_id: str, *, operation: str) -> None:
    """Refuse an answer item whose ``RequestID`` is present and not ``request_id``."""
    keys = keys_named(item, REQUEST_ID)
    if len(keys) > 1 or (
        keys and item[keys[0]] is not None and str(item[keys[0]]) != str(request_id)
    ):
        said = _ambiguous(keys) if len(keys) > 1 else f"it is about {str(item[keys[0]])[:80]!r}."
        raise UnreadableAnswer(
            f"{operation}: asked for {request_id!r}, the partner answered an item that is not "
            f"of it: {said} Nothing was stored for it; the next pull asks again (report it to "
            "the partner if it persists).",
            status=200,
            body=_shown(item),
        )


def _ambiguous(keys: list[Any]) -> str:
    shown = ", ".join(repr(str(k)[:20]) for k in keys[:4])
    return f"the item holds {len(keys)} RequestID keys differing only in case ({shown})."


def unexpected(operation: str, payload: Any, where: str) -> UnreadableAnswer:
    """The error for an answer of the wrong shape."""
    return UnreadableAnswer(
        f"{operation}: the partner answered {_kind(payload)} {where}. Nothing was stored for "
        "it and nothing was marked as gone; try again later, and report it to the partner if "
        "it persists.",
        status=200,
        body=_shown(payload),
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an empty object" if not value else "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    return "a string" if isinstance(value, str) else "a number"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:_SHOWN]


class _Refused(ValueError):
    """Valid to Python's ``json``, but not JSON we accept."""


def _constant(name: str) -> Any:
    raise _Refused(f"{name}, which is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"a number too large for a float ({text[:40]})")
    return value


def _check(value: Any, *, surrogates: bool) -> None:
    """Refuse nesting deeper than MAX_DEPTH and, when the text escapes any, lone surrogates."""
    stack: list[tuple[Any, int]] = [([value], 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            if surrogates:
                _text(*node)
            node = node.values()
        for child in node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif surrogates and isinstance(child, str):
                _text(child)


def _text(*texts: str) -> None:
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a lone surrogate (\\ud800-\\udfff), which is not text") from None


# -- events ---------------------------------------------------------------------------------

# The names an event's id, type and time go by (DESIGN §3), in the order they are tried, in any
# case: the event's own names ("eventType"), then generic ones ("type"). Own names count at the
# top or one level down ("data.eventType"); generic ones one level down only inside an object
# about the event (EVENT_HOLDERS: OCAS' "eventInfo.action"), never in its payload, where "id"
# and "type" are the student's or the application's: taken for the event's id, they would
# merge distinct events into one.
EVENT_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "id": (
        ("eventId", "event_id", "eventGuid", "event_guid", "eventUuid", "event_uuid"),
        ("id", "guid", "uuid"),
    ),
    "type": (
        ("eventType", "event_type", "eventName", "event_name", "eventKind", "event_kind"),
        ("type", "kind", "action", "event"),
    ),
    "time": (
        ("occurredAt", "occurred_at", "occurredOn", "occurred_on", "eventTime", "event_time",
         "eventDate", "event_date", "eventTimestamp", "event_timestamp"),
        ("at", "timestamp", "time", "dateTime", "date_time", "date", "createdAt", "created_at",
         "createdOn", "created_on", "created"),
    ),
}  # fmt: skip
EVENT_HOLDERS = ("eventInfo", "event_info", "event", "eventHeader", "event_header", "meta",
                 "metadata", "header", "envelope")  # fmt: skip
# Where an event keeps its data (the report's program and campus): at its top, or in a holder.
PAYLOAD_NAMES = ("payload", "data", "eventData", "event_data", "body", "details", "detail")
_DOTNET_DATE = re.compile(r"/Date\((-?\d+)(?:[+-]\d{4})?\)/")  # ASP.NET's JSON dates, in ms
_EPOCH_SECONDS = 10**9  # 2001-09-09: a smaller number under a time's name is not a time
_EPOCH_MILLISECONDS = 10**12

Keys = tuple[Any, ...]  # the keys leading to a field: ("eventInfo", "action")
# name (lower case) -> (the order it is tried in, whether it is the event's own)
_RANKS = {
    what: {n.lower(): (rank, rank < len(own)) for rank, n in enumerate((*own, *generic))}
    for what, (own, generic) in EVENT_NAMES.items()
}
_HOLDERS = frozenset(h.lower() for h in EVENT_HOLDERS)
_FOLDED_PAYLOAD = tuple(n.lower() for n in PAYLOAD_NAMES)


@dataclass(frozen=True)
class EventFields:
    """What an event says of itself (:func:`event_fields`); None where it says nothing.

    ``time`` is UTC; ``payload`` the object holding the event's data, if it has one;
    ``paths`` the keys each was found under (``{"type": ("eventInfo", "action")}``).
    """

    id: str | None = None
    type: str | None = None
    time: datetime | None = None
    payload: Mapping[str, Any] | None = None
    paths: Mapping[str, Keys] = field(default_factory=dict)


def event_fields(event: Any, paths: Mapping[str, str] | None = None) -> EventFields:
    """An event's id, type, time and payload, wherever it keeps them: at ``paths`` first (a
    profile's ``event_fields``, dotted: ``{"type": "eventInfo.action"}``), then under a common
    name (:data:`EVENT_NAMES`) at its top, then one level down. Names match in any case; a name
    two keys match (``id`` and ``ID``) counts as absent. An id or a type is a string or a
    number, a time what :func:`event_time` reads; a value that is not is passed over. Nothing
    is required: an event that is not an object says nothing of itself.

    >>> event_fields({"id": 7, "eventInfo": {"action": "OfferMade", "data": {}}}).type
    'OfferMade'
    """
    if not isinstance(event, Mapping):
        return EventFields()
    view = _View(event)
    found: dict[str, Any] = {}
    where: dict[str, Keys] = {}
    for what in EVENT_NAMES:
        read = event_time if what == "time" else _id_or_type
        for keys in view.places(what, (paths or {}).get(what)):
            value = read(_value_at(event, keys))
            if value is not None:
                found[what], where[what] = value, keys
                break
    held = next(view.payload_places(), None)
    if held is not None:
        found["payload"], where["payload"] = _value_at(event, held), held
    return EventFields(paths=where, **found)


def event_time(value: Any) -> datetime | None:
    """A partner's time as an aware UTC ``datetime``: ISO 8601 text (without a zone: UTC),
    ASP.NET's ``/Date(1772442000000)/``, or epoch seconds or milliseconds (a number past
    2001-09-09); None for anything else.

    >>> event_time(1772442000000)
    datetime.datetime(2026, 3, 2, 9, 0, tzinfo=datetime.timezone.utc)
    """
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
    """An id or a type: a string that is not blank, or a number, as text."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return None


class _View:
    """An event's keys by their lower case, at its top and in each object one level down:
    folded once per event, not once per name tried."""

    def __init__(self, event: Mapping[Any, Any]) -> None:
        self.event = event
        self.top = _folded(event)
        self.below = [
            (outer, inner, _folded(inner), str(outer).lower() in _HOLDERS)
            for outer, inner in event.items()
            if isinstance(inner, Mapping)
        ]

    def places(self, what: str, mapped: str | None) -> Iterator[Keys]:
        """Where ``what`` may be, in the order to try: the mapped path, the top, one level
        down (generic names only in a holder)."""
        if mapped:
            keys = _resolve(self.event, mapped.split("."))
            if keys is not None:
                yield keys
        ranks = _RANKS[what]
        yield from ((key,) for key in _ranked(self.top, ranks, generic=True))
        for outer, _, index, holder in self.below:
            yield from ((outer, key) for key in _ranked(index, ranks, generic=holder))

    def payload_places(self) -> Iterator[Keys]:
        """Where the event's data may be: a payload object at its top, else in a holder."""
        for name in _FOLDED_PAYLOAD:
            key = _one(self.top, name)
            if key is not None and isinstance(self.event[key], Mapping):
                yield (key,)
        for outer, inner, index, holder in self.below:
            if not holder:
                continue
            for name in _FOLDED_PAYLOAD:
                key = _one(index, name)
                if key is not None and isinstance(inner[key], Mapping):
                    yield (outer, key)


def _ranked(
    index: dict[str, list[Any]], ranks: dict[str, tuple[int, bool]], *, generic: bool
) -> list[Any]:
    """The keys of a folded object that are names of ``ranks``, in the order they are tried
    (``generic``: the generic names too); a name two keys match is left out."""
    found = [
        (ranks[name][0], keys[0])
        for name, keys in index.items()
        if name in ranks and len(keys) == 1 and (generic or ranks[name][1])
    ]
    return [key for _, key in sorted(found, key=lambda pair: pair[0])]


def _folded(node: Mapping[Any, Any]) -> dict[str, list[Any]]:
    """An object's keys by their lower case (once per object, not once per name tried)."""
    index: dict[str, list[Any]] = {}
    for key in node:
        index.setdefault(str(key).lower(), []).append(key)
    return index


def _one(index: dict[str, list[Any]], folded: str) -> Any:
    """The one key named ``folded`` (lower case) in any case; None when none is, or several
    are."""
    keys = index.get(folded, ())
    return keys[0] if len(keys) == 1 else None


def _resolve(event: Mapping[str, Any], parts: list[str]) -> Keys | None:
    """The keys a dotted path names, each matched in any case; None where it leads nowhere."""
    keys: list[Any] = []
    node: Any = event
    for part in parts:
        if not isinstance(node, Mapping):
            return None
        key = _one(_folded(node), part.strip().lower())
        if key is None:
            return None
        keys.append(key)
        node = node[key]
    return tuple(keys)


def _value_at(event: Mapping[str, Any], keys: Keys) -> Any:
    node: Any = event
    for key in keys:
        node = node[key]
    return node
