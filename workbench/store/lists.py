"""The four partner lists the store snapshots, how an item of one is read and keyed; events
deduplicated by id (wherever an event keeps it: DESIGN §3), else by content, one without a
readable time placed at its first sighting."""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.errors import StoreError
from workbench.http.events import EventFields, field_value
from workbench.store.schema import partner_time, sha256, utc_text

logger = logging.getLogger(__name__)


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
_UPSERT = (
    "INSERT INTO events (source, event_key, event_id, event_type, occurred_at, "
    "time_is_first_seen, content_sha256, raw_json, first_seen_at, last_seen_at, on_list) "
    "VALUES (?, ?, ?, ?, coalesce(?, ?), ? IS NULL, ?, ?, ?, ?, 1) "
    "ON CONFLICT(source, event_key) DO UPDATE SET event_id = excluded.event_id, "
    "event_type = excluded.event_type, "
    "occurred_at = CASE WHEN excluded.time_is_first_seen "
    "THEN min(first_seen_at, excluded.first_seen_at) ELSE excluded.occurred_at END, "
    "time_is_first_seen = excluded.time_is_first_seen, "
    "content_sha256 = excluded.content_sha256, raw_json = excluded.raw_json, "
    "first_seen_at = min(first_seen_at, excluded.first_seen_at), "
    "last_seen_at = max(last_seen_at, excluded.last_seen_at), "
    "on_list = 1, left_at = NULL, left_reason = NULL"
)


def list_info(list_name: str, *, details: bool = False) -> ListInfo:
    names = DETAIL_LISTS if details else LIST_NAMES
    if list_name not in names:
        raise StoreError(f"Unknown list {list_name!r}; expected one of: {', '.join(names)}.")
    return LISTS[list_name]


def request_date(item: Any) -> str | None:
    return partner_time(field_value(item, "RequestDate"))


def item_key(item: Any, key: str, text: str) -> str:
    """An item's key: its ``key`` field (any case), else the hash of its JSON ``text``."""
    value = field_value(item, key)
    if value is not None and not isinstance(value, Mapping | list):
        return str(value)
    return "sha256:" + sha256(text)


def event_keys(source: str, found: Sequence[EventFields], texts: Sequence[str]) -> list[str]:
    """Each event's key: its id, else its content's hash (both, with a warning, for an id
    events of different content share)."""
    keys = [
        f.id if f.id is not None else "sha256:" + sha256(t)
        for f, t in zip(found, texts, strict=True)
    ]
    contents: dict[str, set[str]] = {}
    for key, text in zip(keys, texts, strict=True):
        contents.setdefault(key, set()).add(text)
    if not (shared := {key for key, seen in contents.items() if len(seen) > 1}):
        return keys
    fields = sorted({"/".join(f.paths["id"]) for f in found if f.id in shared and "id" in f.paths})
    logger.warning(
        "%d %s events share an id (%s, read from %s) with different content: kept apart, by "
        "content. If the partner's event id is another field, name it: event_fields = "
        '{ id = "..." } in the profile.',
        sum(key in shared for key in keys),
        source,
        ", ".join(sorted(shared)[:3]),
        ", ".join(fields) or "?",
    )
    return [
        f"{k}#sha256:{sha256(t)}" if k in shared else k for k, t in zip(keys, texts, strict=True)
    ]


def events_seen(
    conn: sqlite3.Connection,
    source: str,
    found: Sequence[EventFields],
    keys: Sequence[str],
    texts: Sequence[str],
    *,
    at: str,
) -> None:
    """Upsert the events a list showed."""
    rows = []
    for f, key, text in zip(found, keys, texts, strict=True):
        own = utc_text(f.time)
        rows.append((source, key, f.id, f.type, own, at, own, sha256(text), text, at, at))
    conn.executemany(_UPSERT, rows)


def list_seen(
    conn: sqlite3.Connection, info: ListInfo, items: Sequence[Any], keys: Sequence[str], *, at: str
) -> None:
    """Upsert the entities a list showed: on the list again, seen now."""
    conn.executemany(
        f"INSERT INTO {info.table} ({info.id_column}, request_date, on_list, first_seen_at, "
        f"last_seen_at) VALUES (?, ?, 1, ?, ?) ON CONFLICT({info.id_column}) DO UPDATE SET "
        "request_date = coalesce(excluded.request_date, request_date), on_list = 1, "
        "left_at = NULL, left_reason = NULL, "
        "first_seen_at = min(first_seen_at, excluded.first_seen_at), "
        "last_seen_at = max(last_seen_at, excluded.last_seen_at)",
        [(k, request_date(i), at, at) for i, k in zip(items, keys, strict=True)],
    )
