"""Schema v4 -> v5 in place: every stored event's type and time read again from its JSON
wherever it keeps them (v4 read a few names only: ``kind`` and ``at`` stayed empty), one
without a readable time placed at when it was first seen and flagged; keys, ids and JSON stay."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from workbench.store import Store
from workbench.store.schema import SCHEMA_VERSION

SEEN = "2026-03-10T09:00:00.000000Z"
EVENTS = [
    {"id": "k1", "kind": "OfferMade", "at": "2026-03-02T09:00:00Z", "payload": {"a": 1}},
    {"id": "i1", "eventInfo": {"action": "PlacementCreated", "data": {"b": 2}}},
    {"eventId": "f1", "eventType": "OfferIssued", "occurredAt": "yesterday"},
    "a bare string",
]


def _v4_store(path: Path) -> None:
    """A store as v4 left it: no ``time_is_first_seen``, and type and time only where v4's few
    names found them (none of these events)."""
    with Store(path) as store:
        store.record_snapshot(None, "placement_events", EVENTS, taken_at=SEEN)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE events DROP COLUMN time_is_first_seen")
    conn.execute("UPDATE events SET event_type = NULL, occurred_at = NULL")
    conn.execute("UPDATE events SET occurred_at = 'yesterday' WHERE event_key = 'f1'")
    conn.execute("UPDATE events SET event_type = 'OfferIssued' WHERE event_key = 'f1'")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    rows = {r["event_key"]: dict(r) for r in conn.execute("SELECT * FROM events")}
    conn.close()
    return rows


def test_a_v4_store_reads_its_events_again(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    _v4_store(path)
    before = _rows(path)

    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
    after = _rows(path)

    assert set(after) == set(before)  # keys stay: snapshots name events by them
    bare = next(k for k in after if k.startswith("sha256:"))
    fixed = {
        k: (r["event_type"], r["occurred_at"], r["time_is_first_seen"]) for k, r in after.items()
    }
    assert fixed == {
        "k1": ("OfferMade", "2026-03-02T09:00:00.000000Z", 0),
        "i1": ("PlacementCreated", SEEN, 1),  # no time of its own: when first seen
        "f1": ("OfferIssued", SEEN, 1),  # not a time: the JSON keeps what it said
        bare: (None, SEEN, 1),
    }
    for key, row in after.items():
        unchanged = ("event_id", "raw_json", "content_sha256", "first_seen_at", "last_seen_at")
        assert {c: row[c] for c in unchanged} == {c: before[key][c] for c in unchanged}


def test_a_migrated_store_keeps_an_event_with_no_time_at_its_first_sighting(tmp_path) -> None:
    path = tmp_path / "v4.db"
    _v4_store(path)
    with Store(path) as store:
        store.record_snapshot(
            None, "placement_events", [EVENTS[1]], taken_at="2026-03-11T09:00:00Z"
        )
        row = store.table("events", where="event_key = 'i1'").iloc[0]
    assert str(row["occurred_at"]) == "2026-03-10 09:00:00+00:00"
    assert str(row["last_seen_at"]) == "2026-03-11 09:00:00+00:00"
    assert bool(row["time_is_first_seen"])
