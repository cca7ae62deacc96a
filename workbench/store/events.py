"""Events, deduplicated by id (wherever an event keeps it: DESIGN §3), else by content; one
without a readable time is placed at its first sighting."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.http.events import EventFields, event_fields
from workbench.store.frames import flattened
from workbench.store.schema import sha256, utc_text

logger = logging.getLogger(__name__)
EVENT_COLUMNS = ("event_id", "event_type", "occurred_at")  # always present, maybe empty

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


def events_flat(events: Sequence[Any], paths: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Events as rows: :data:`EVENT_COLUMNS`, then every other field flattened (snake_case)."""
    found = [event_fields(event, paths) for event in events]
    pairs = zip(events, found, strict=True)
    flat = flattened([_rest(e, f) if isinstance(e, dict) else e for e, f in pairs])
    flat = flat.drop(columns=[c for c in EVENT_COLUMNS if c in flat.columns])
    own = pd.DataFrame(
        {
            "event_id": pd.array([f.id for f in found], dtype="string"),
            "event_type": pd.array([f.type for f in found], dtype="string"),
            "occurred_at": pd.Series([f.time for f in found], dtype=object).astype(
                "datetime64[us, UTC]"
            ),
        }
    )
    return pd.concat([own, flat.reset_index(drop=True)], axis="columns")


def _rest(event: dict[str, Any], found: EventFields) -> dict[str, Any]:
    """``event`` without the fields its id, type and time were read from."""
    rest = dict(event)
    for what, keys in found.paths.items():
        if what == "payload":
            continue
        *outer, last = keys
        node = rest
        for key in outer:  # copied: the event itself is never changed
            node[key] = dict(node[key])
            node = node[key]
        del node[last]
    return rest


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
