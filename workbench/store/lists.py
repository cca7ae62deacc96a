"""The four partner lists the store snapshots, and how an item of one is read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import StoreError
from workbench.http.events import keys_named
from workbench.store.schema import partner_time, sha256


@dataclass(frozen=True)
class ListInfo:
    name: str
    table: str  # the entity table whose rows the list's items are
    id_column: str  # that table's id column
    key: str | None  # the item field that names an item (None: an event's id, else a hash)
    operations: tuple[str, ...]  # outbox operations whose success takes an item off the list
    source: str | None = None  # events: the ``source`` value in ``events``


LISTS: dict[str, ListInfo] = {
    info.name: info
    for info in (
        ListInfo("supplier_requests", "transcript_requests", "request_id", "RequestID",
                 ("send_response", "send_transcript")),
        ListInfo("consumer_transcripts", "transcripts_received", "transcript_id", "RequestID",
                 ("send_acknowledgment",)),
        ListInfo("placement_events", "events", "event_key", None, (), source="placement"),
        ListInfo("domestic_events", "events", "event_key", None, (), source="domestic"),
    )
}  # fmt: skip
LIST_NAMES = tuple(LISTS)
DETAIL_LISTS = ("supplier_requests", "consumer_transcripts")
EVENT_SOURCES = {"placement": "placement_events", "domestic": "domestic_events"}
OPERATIONS = ("send_response", "send_transcript", "send_acknowledgment")


def list_info(list_name: str, *, details: bool = False) -> ListInfo:
    names = DETAIL_LISTS if details else LIST_NAMES
    if list_name not in names:
        raise StoreError(f"Unknown list {list_name!r}; expected one of: {', '.join(names)}.")
    return LISTS[list_name]


def field(record: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` in ``record``, in any case; a name two keys match is absent."""
    for name in names:
        keys = keys_named(record, name)
        value = record[keys[0]] if len(keys) == 1 else None
        if value is not None and value != "":
            return value
    return None


def request_date(item: Any) -> str | None:
    return partner_time(field(item, "RequestDate")) if isinstance(item, Mapping) else None


def item_key(item: Any, key: str, text: str) -> str:
    """An item's key: its ``key`` field (any case), else the hash of its JSON ``text``."""
    if isinstance(item, Mapping):
        value = field(item, key)
        if value is not None and not isinstance(value, Mapping | list):
            return str(value)
    return "sha256:" + sha256(text)
