"""Events of the placement and domestic interfaces, deduplicated by id, else by content.

Fields are not shown by the spec (DESIGN §3): nothing is required. The id is ``eventId`` (or
``event_id``, ``id``), the type ``eventType`` (or ``type``), the time ``occurredAt`` (or
``timestamp``, ``createdAt``); an event without an id is keyed by the SHA-256 of its content.
The whole event is kept in ``raw_json``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.store.cells import dumps, field, partner_time, scalar, sha256
from workbench.store.lists import EVENT_ID_FIELDS

_UPSERT_SEEN = (
    "INSERT INTO events (source, event_key, event_id, event_type, occurred_at, "
    "content_sha256, raw_json, first_seen_at, last_seen_at, on_list) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(source, event_key) DO UPDATE SET event_id = excluded.event_id, "
    "event_type = excluded.event_type, occurred_at = excluded.occurred_at, "
    "content_sha256 = excluded.content_sha256, raw_json = excluded.raw_json, "
    "first_seen_at = min(first_seen_at, excluded.first_seen_at), "
    "last_seen_at = max(last_seen_at, excluded.last_seen_at)"
)
# Seen on the list itself: the event is (again) on it.
_UPSERT_LISTED = _UPSERT_SEEN + ", on_list = 1, left_at = NULL, left_reason = NULL"


def events_seen(
    conn: sqlite3.Connection,
    source: str,
    events: Sequence[Any],
    keys: Sequence[str],
    texts: Sequence[str],
    *,
    at: str,
    listed: bool,
) -> list[str]:
    """Upsert events (deduplicated by key); returns the keys that were new."""
    known = {
        row[0]
        for row in conn.execute(
            "SELECT event_key FROM events WHERE source = ? AND event_key IN "
            "(SELECT value FROM json_each(?))",
            (source, dumps(list(keys))),
        )
    }
    conn.executemany(
        _UPSERT_LISTED if listed else _UPSERT_SEEN,
        [
            _event_row(source, e, k, t, at, listed)
            for e, k, t in zip(events, keys, texts, strict=True)
        ],
    )
    return [k for k in dict.fromkeys(keys) if k not in known]


def _event_row(
    source: str, event: Any, key: str, text: str, at: str, listed: bool
) -> tuple[Any, ...]:
    mapping = event if isinstance(event, Mapping) else {}
    event_id = field(mapping, *EVENT_ID_FIELDS)
    return (
        source,
        key,
        None if event_id is None else str(event_id),
        scalar(field(mapping, "eventType", "event_type", "type")),
        partner_time(field(mapping, "occurredAt", "occurred_at", "timestamp", "createdAt")),
        sha256(text),
        text,
        at,
        at,
        int(listed),
    )
