"""Settling uncertain sends from the partner's lists (never by resending), and filing what
was sent.

A list speaks only of the sends begun before it was *requested* (its call's start, else its
``taken_at``; unknown: it settles nothing). An uncertain send, judged by a later list of the
list its success empties: still listed :data:`SETTLE_MARGIN` after -> ``failed`` (unless listed
with a new RequestDate: a re-issue says nothing); gone after being listed before the send, and
no other send of ours explains it -> ``sent``, inferred; else ``uncertain``, saying why.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from workbench.store.details import pescxml_of
from workbench.store.lists import LISTS, request_date
from workbench.store.schema import (
    ACKNOWLEDGMENT_FIELDS,
    RESPONSE_FIELDS,
    TRANSCRIPT_SENT_FIELDS,
    dicts,
    dumps,
    scalar,
    utc_text,
)

BLOCKING = ("pending", "sent", "uncertain")  # states that refuse a second send
# Far longer than a partner takes to finish a send a client gave up on ("gone" needs none:
# inferring "sent" never allows a resend).
SETTLE_MARGIN = timedelta(minutes=15)
_FILED = {
    "send_response": ("responses", RESPONSE_FIELDS, "sent_at"),
    "send_transcript": ("transcripts_sent", TRANSCRIPT_SENT_FIELDS, "sent_at"),
    "send_acknowledgment": ("acknowledgments", ACKNOWLEDGMENT_FIELDS, "recorded_at"),
}


def _marks(values: tuple[str, ...]) -> str:
    return ", ".join("?" * len(values))


def explaining(
    conn: sqlite3.Connection, list_name: str, ids: Iterable[str], *, requested: str
) -> set[str]:
    """The ids whose departure a send of ours explains: begun before ``requested``, pending,
    sent or uncertain, and not listed since."""
    operations, ids = LISTS[list_name].operations, list(ids)
    if not operations or not ids:
        return set()
    sends = conn.execute(
        f"SELECT request_id, created_at FROM outbox WHERE operation IN ({_marks(operations)}) "
        "AND state IN (?, ?, ?) AND created_at < ? "
        "AND request_id IN (SELECT value FROM json_each(?))",
        (*operations, *BLOCKING, requested, dumps(ids)),
    ).fetchall()
    last = _last_listed(conn, list_name, {i for i, _ in sends}, before=requested)
    return {i for i, created in sends if _can_explain(created, last.get(i))}


def _last_listed(
    conn: sqlite3.Connection, list_name: str, ids: Iterable[str], *, before: str
) -> dict[str, str]:
    return dict(
        conn.execute(
            "SELECT i.item_key, max(s.taken_at) FROM snapshot_items i "
            "JOIN snapshots s ON s.id = i.snapshot_id WHERE s.list_name = ? "
            "AND s.taken_at < ? AND i.item_key IN (SELECT value FROM json_each(?)) "
            "GROUP BY i.item_key",
            (list_name, before, dumps(list(ids))),
        ).fetchall()
    )


def _can_explain(created_at: str, last_listed: str | None) -> bool:
    """Not when a list :data:`SETTLE_MARGIN` after the send began still showed the item."""
    if last_listed is None:
        return True
    return datetime.fromisoformat(last_listed) - SETTLE_MARGIN < datetime.fromisoformat(created_at)


def resolve(
    conn: sqlite3.Connection, list_name: str, listed: set[str], *, at: str, requested: str | None
) -> list[dict[str, Any]]:
    """Settle the uncertain sends ``list_name`` speaks of (None ``requested``: none); the
    decisions."""
    operations = LISTS[list_name].operations
    if not operations or requested is None:
        return []
    uncertain = conn.execute(
        "SELECT id, operation, request_id, state, payload, payload_flat, created_at, updated_at, "
        f"call_id FROM outbox WHERE state = 'uncertain' AND operation IN ({_marks(operations)}) "
        "AND updated_at < ? ORDER BY id",
        (*operations, requested),
    )
    decisions = []
    for entry in dicts(uncertain):
        state, note = _decide(conn, list_name, entry, listed, at, requested)
        if state == "uncertain":
            conn.execute("UPDATE outbox SET resolution = ? WHERE id = ?", (note, entry["id"]))
        else:
            conn.execute(
                "UPDATE outbox SET state = ?, resolution = ?, resolved_at = ?, updated_at = ? "
                "WHERE id = ?",
                (state, note, at, at, entry["id"]),
            )
        if state == "sent":
            record_document(conn, entry, at=at, inferred=True, reply=None)
        decisions.append({"entry_id": entry["id"], "operation": entry["operation"],
                          "request_id": entry["request_id"], "state": state,
                          "resolution": note})  # fmt: skip
    return decisions


def _decide(
    conn: sqlite3.Connection,
    list_name: str,
    entry: dict[str, Any],
    listed: set[str],
    at: str,
    requested: str,
) -> tuple[str, str]:
    request_id = entry["request_id"]
    before = conn.execute(  # the last snapshot before the send, and the item in it
        "SELECT s.taken_at, (SELECT i.item_json FROM snapshot_items i WHERE i.snapshot_id = s.id "
        "AND i.item_key = ? LIMIT 1) FROM snapshots s WHERE s.list_name = ? AND s.taken_at < ? "
        "ORDER BY s.taken_at DESC, s.id DESC LIMIT 1",
        (request_id, list_name, entry["created_at"]),
    ).fetchone()
    if request_id in listed:
        shown = conn.execute(
            "SELECT i.item_json FROM snapshots s JOIN snapshot_items i ON i.snapshot_id = s.id "
            "WHERE s.list_name = ? AND s.taken_at = ? AND i.item_key = ? "
            "ORDER BY s.id DESC LIMIT 1",
            (list_name, at, request_id),
        ).fetchone()
        was, now = (
            _listed_date(before[1] if before else None),
            _listed_date(shown[0] if shown else None),
        )
        if was and now and was != now:
            return "uncertain", (
                f"on {list_name} at {at}, but with a new document (RequestDate {now}, "
                f"{was} before the send), which says nothing of this send; the "
                "lists cannot tell whether it took effect: ask the partner, and do not send it "
                "again unless it did not"
            )
        decidable = utc_text(datetime.fromisoformat(entry["updated_at"]) + SETTLE_MARGIN) or ""
        if requested < decidable:
            return "uncertain", (
                f"still on {list_name} at {at}, but too soon to tell: the partner may still be "
                f"processing the send (uncertain since {entry['updated_at']}). A list requested "
                f"from {decidable} on can tell; until then, do not send it again"
            )
        return "failed", f"still on {list_name} at {at}: the send did not take effect"
    operations = LISTS[list_name].operations
    others = conn.execute(
        "SELECT id, created_at FROM outbox WHERE request_id = ? AND id != ? AND state = 'sent' "
        f"AND created_at < ? AND operation IN ({_marks(operations)}) ORDER BY id",
        (request_id, entry["id"], requested, *operations),
    ).fetchall()
    last = _last_listed(conn, list_name, [request_id], before=requested).get(request_id)
    other = next((o for o in others if _can_explain(o[1], last)), None)
    if before and before[1] is not None and not other:
        return "sent", (
            f"gone from {list_name} at {at} after being listed at {before[0]}, before the send: "
            "inferred sent"
        )
    why = (
        f"outbox entry {other[0]} already explains its departure"
        if other
        else "no snapshot before the send showed it listed"
    )
    return "uncertain", (
        f"gone from {list_name} at {at}, but {why}, so the lists cannot tell whether this send "
        "took effect; ask the partner, or send again with force=True"
    )


def _listed_date(item_json: str | None) -> str | None:
    return request_date(json.loads(item_json)) if item_json else None


def record_document(
    conn: sqlite3.Connection,
    entry: Mapping[str, Any],
    *,
    at: str,
    inferred: bool,
    reply: tuple[str | None, str | None, int | None] | None,
) -> None:
    """File a sent entry's document, and the acknowledgment a transcript's answer carried
    (``reply``: body, flat JSON, call), when readable."""
    table, fields, when = _FILED[entry["operation"]]
    row: dict[str, Any] = {"outbox_id": entry["id"], "request_id": entry["request_id"], when: at}
    if table == "acknowledgments":
        row.update(direction="sent", call_id=reply[2] if reply else entry.get("call_id"))
    _file(conn, table, row, fields, entry["payload"], entry["payload_flat"], inferred)
    if table == "transcripts_sent" and reply is not None and reply[1]:
        body, flat, call_id = reply
        row = {"outbox_id": entry["id"], "request_id": entry["request_id"], "recorded_at": at,
               "direction": "received", "call_id": call_id}  # fmt: skip
        _file(conn, "acknowledgments", row, ACKNOWLEDGMENT_FIELDS, body, flat, inferred)


def _file(
    conn: sqlite3.Connection,
    table: str,
    row: Mapping[str, Any],
    fields: tuple[str, ...],
    body: str | None,
    flat_text: str | None,
    inferred: bool,
) -> None:
    flat = json.loads(flat_text) if flat_text else {}
    values = {**row, "inferred": int(inferred), "pescxml": pescxml_of(body)[0] if body else None,
              "pesc_json": flat_text, **{f: scalar(flat.get(f)) for f in fields}}  # fmt: skip
    conn.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(values)}) VALUES ({_marks(tuple(values))})",
        list(values.values()),
    )


def unfile_inferred(conn: sqlite3.Connection, entry_id: int) -> None:
    """A send inferred sent, now known otherwise: its filed document goes."""
    for table in ("responses", "transcripts_sent", "acknowledgments"):
        conn.execute(f"DELETE FROM {table} WHERE outbox_id = ? AND inferred = 1", (entry_id,))
