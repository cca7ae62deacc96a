"""Events of the placement and domestic interfaces, deduplicated by id, else by content.

Fields are not shown by the spec (DESIGN §3): nothing is required. An event's id, type and time
are found wherever it keeps them (:func:`workbench.partner_json.event_fields`, a profile's
``event_fields`` first); an event without an id is keyed by the SHA-256 of its content, and one
without a readable time is placed at the time it was first seen (``time_is_first_seen``). The
whole event is kept in ``raw_json``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.partner_json import EventFields, event_fields
from workbench.store.cells import dumps, sha256, utc_text

_UPSERT_SEEN = (
    "INSERT INTO events (source, event_key, event_id, event_type, occurred_at, "
    "time_is_first_seen, content_sha256, raw_json, first_seen_at, last_seen_at, on_list) "
    "VALUES (?, ?, ?, ?, coalesce(?, ?), ? IS NULL, ?, ?, ?, ?, ?) "
    "ON CONFLICT(source, event_key) DO UPDATE SET event_id = excluded.event_id, "
    "event_type = excluded.event_type, "
    # an event that (still) has no time of its own stays at the first time it was seen
    "occurred_at = CASE WHEN excluded.time_is_first_seen "
    "THEN min(first_seen_at, excluded.first_seen_at) ELSE excluded.occurred_at END, "
    "time_is_first_seen = excluded.time_is_first_seen, "
    "content_sha256 = excluded.content_sha256, raw_json = excluded.raw_json, "
    "first_seen_at = min(first_seen_at, excluded.first_seen_at), "
    "last_seen_at = max(last_seen_at, excluded.last_seen_at)"
)
# Seen on the list itself: the event is (again) on it.
_UPSERT_LISTED = _UPSERT_SEEN + ", on_list = 1, left_at = NULL, left_reason = NULL"


def read_events(events: Iterable[Any], paths: Mapping[str, str] | None = None) -> list[EventFields]:
    """What each event says of itself (``paths``: the profile's ``event_fields``)."""
    return [event_fields(event, paths) for event in events]


def event_key(found: EventFields, text: str) -> str:
    """An event's key: its id, else the SHA-256 of its (canonical, scrubbed) JSON ``text``."""
    return found.id if found.id is not None else "sha256:" + sha256(text)


def events_seen(
    conn: sqlite3.Connection,
    source: str,
    found: Sequence[EventFields],
    keys: Sequence[str],
    texts: Sequence[str],
    *,
    at: str,
    listed: bool,
) -> list[str]:
    """Upsert events (``found``: :func:`read_events` of them, deduplicated by key); returns
    the keys that were new."""
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
            _event_row(source, f, k, t, at, listed)
            for f, k, t in zip(found, keys, texts, strict=True)
        ],
    )
    return [k for k in dict.fromkeys(keys) if k not in known]


def _event_row(
    source: str, found: EventFields, key: str, text: str, at: str, listed: bool
) -> tuple[Any, ...]:
    own = utc_text(found.time)
    return (source, key, found.id, found.type, own, at, own, sha256(text), text, at, at,
            int(listed))  # fmt: skip
