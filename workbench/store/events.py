"""Events of the placement and domestic interfaces, deduplicated by id, else by content.

Fields are not shown by the spec (DESIGN §3): nothing is required. An event's id, type and time
are found wherever it keeps them (:func:`workbench.partner_json.event_fields`, a profile's
``event_fields`` first); an event without an id is keyed by the SHA-256 of its content, and one
without a readable time is placed at the time it was first seen (``time_is_first_seen``). The
whole event is kept in ``raw_json``.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.partner_json import EventFields, event_fields
from workbench.store.cells import dumps, sha256, utc_text
from workbench.store.frames import snake

logger = logging.getLogger(__name__)

# An event's own columns: never required of the partner (the spec shows no event field), present,
# maybe empty, always.
EVENT_COLUMNS = ("event_id", "event_type", "occurred_at")

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


def events_flat(events: Sequence[Any], paths: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Events as rows: :data:`EVENT_COLUMNS` (:func:`read_events`; ``occurred_at`` UTC, missing
    where the event has no time: a list read has no first-seen time to stand in), then every
    other field flattened with ``pandas.json_normalize`` in snake_case. An event that is not an
    object is ``{"value": event}``."""
    found = read_events(events, paths)
    rest = [
        _rest(e, f) if isinstance(e, dict) else {"value": e}
        for e, f in zip(events, found, strict=True)
    ]
    flat = pd.json_normalize(rest, sep="_") if rest else pd.DataFrame()
    flat = flat.rename(columns=snake)
    flat = flat.loc[:, ~flat.columns.duplicated()]
    # a field so named that was passed over (an occurredAt that is no time): the JSON keeps it
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
    """``event`` without the fields its id, type and time were read from (their columns show
    them; the JSON keeps them as sent)."""
    rest = dict(event)
    for what, keys in found.paths.items():
        if what == "payload":
            continue
        *outer, last = keys
        node = rest
        for key in outer:  # copied on the way down: the event itself is never changed
            node[key] = dict(node[key])
            node = node[key]
        del node[last]
    return rest


def event_keys(source: str, found: Sequence[EventFields], texts: Sequence[str]) -> list[str]:
    """Each event's key: its id, else the SHA-256 of its (canonical) JSON ``text``. An id that
    one answer gives to events of different content is no event's own (a number of its kind,
    say): those are keyed by id and content, never merged, and a warning says how to name the
    id field."""
    keys = [
        f.id if f.id is not None else "sha256:" + sha256(t)
        for f, t in zip(found, texts, strict=True)
    ]
    contents: dict[str, set[str]] = {}
    for key, text in zip(keys, texts, strict=True):
        contents.setdefault(key, set()).add(text)
    shared = {key for key, seen in contents.items() if len(seen) > 1}
    if not shared:
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
        f"{key}#sha256:{sha256(text)}" if key in shared else key
        for key, text in zip(keys, texts, strict=True)
    ]


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
