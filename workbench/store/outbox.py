"""The outbox: every POST recorded (durably) before it is sent: ``pending`` -> ``sent`` |
``failed`` (did not take effect: may be sent again) | ``uncertain``, settled from the partner's
lists (never by resending); what was sent filed.

A list speaks only of the sends begun before it was *requested* (its call's start, else its
``taken_at``; unknown: it settles nothing). An uncertain send, judged by a later list of the
list its success empties: still listed :data:`SETTLE_MARGIN` after -> ``failed`` (unless listed
with a new RequestDate: a re-issue says nothing); gone after being listed before the send, and
no other send of ours explains it -> ``sent``, inferred; else ``uncertain``, saying why.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from workbench.errors import DuplicateSend, StoreError
from workbench.http.masking import Redactor
from workbench.store.connection import Connection
from workbench.store.details import pescxml_of
from workbench.store.lists import LISTS, request_date
from workbench.store.schema import (
    ACKNOWLEDGMENT_FIELDS,
    RESPONSE_FIELDS,
    TRANSCRIPT_SENT_FIELDS,
    dumps,
    now_text,
    row_id,
    scalar,
    sha256,
    utc_text,
)

BLOCKING = ("pending", "sent", "uncertain")  # states that refuse a second send


class Outbox:
    """The outbox of one store: ``store.outbox``."""

    def __init__(self, c: Connection, scrub: Redactor) -> None:
        self._c, self._scrub = c, scrub

    def begin(
        self,
        operation: str,
        request_id: str,
        payload: str | Mapping[str, Any],
        *,
        force: bool = False,
        flat: Mapping[str, Any] | None = None,
        run_id: int | None = None,
        renews: bool = False,
    ) -> int:
        """Record a send as pending; its entry id. ``DuplicateSend`` while the same send (for one
        that ``renews`` and an acknowledgment: of its DocumentID) blocks, unless ``force``."""
        if not isinstance(request_id, str) or not request_id:
            raise StoreError("An outbox entry needs a non-empty request id.")
        text = payload if isinstance(payload, str) else dumps(payload)
        flat = dict(flat) if flat is not None else None
        at, digest = now_text(), sha256(text)
        row = {
            "operation": operation, "request_id": request_id, "state": "pending",
            "payload": self._scrub.document(text),
            "payload_sha256": digest, "payload_flat": None if flat is None else dumps(flat),
            "created_at": at, "updated_at": at, "run_id": row_id(run_id), "pid": os.getpid(),
            "host": socket.gethostname(),
        }  # fmt: skip
        with self._c.write(durable=True) as conn:
            this = (flat or {}).get("document_id")
            refusal = _duplicate(conn, operation, request_id, this, renews=renews, digest=digest)
            if refusal and not force:
                raise refusal
            row["forced"] = int(refusal is not None)
            return self._c.insert("outbox", row)

    def duplicate_of(
        self,
        operation: str,
        request_id: str,
        *,
        document_id: str | None = None,
        renews: bool = False,
        hint: str = "",
    ) -> DuplicateSend | None:
        """The refusal ``begin`` would raise now, or None; ``hint``: how to force it."""
        with self._c.read() as conn:
            return _duplicate(conn, operation, request_id, document_id, renews=renews, hint=hint)

    def mark_sent(
        self,
        entry_id: int,
        *,
        status: int | None,
        response_body: Any,
        call_id: int | None = None,
        reply_flat: Mapping[str, Any] | None = None,
    ) -> None:
        """The partner accepted it (``reply_flat``: the acknowledgment it answered)."""
        entry_id, call_id, status = row_id(entry_id) or 0, row_id(call_id), row_id(status)
        body = response_body if isinstance(response_body, str | None) else dumps(response_body)
        body = self._scrub.document(body)
        reply = dumps(dict(reply_flat)) if reply_flat is not None else None
        with self._c.write(durable=True) as conn:
            entry, at = _entry(conn, entry_id, "sent"), now_text()
            conn.execute(
                "UPDATE outbox SET state = 'sent', status = ?, response_body = ?, "
                "call_id = coalesce(?, call_id), error = NULL, updated_at = ? WHERE id = ?",
                (status, body, call_id, at, entry_id),
            )
            record_document(conn, entry, at=at, inferred=False, reply=(body, reply, call_id))

    def mark(
        self, entry_id: int, state: str, *, error: Any, status: Any = None, call_id: Any = None
    ) -> None:
        """The send ``failed`` (did not take effect: refused, or never left) or is ``uncertain``
        (it may have reached the partner)."""
        if state not in ("failed", "uncertain"):
            raise StoreError(f"Mark a send failed or uncertain (sent: mark_sent), not {state!r}.")
        entry_id, call_id, status = row_id(entry_id) or 0, row_id(call_id), row_id(status)
        text = self._scrub.text(None if error is None else str(error))
        with self._c.write(durable=True) as conn:
            _entry(conn, entry_id, state)
            conn.execute(
                "UPDATE outbox SET state = ?, error = ?, status = coalesce(?, status), "
                "call_id = coalesce(?, call_id), updated_at = ? WHERE id = ?",
                (state, text, status, call_id, now_text(), entry_id),
            )
            unfile_inferred(conn, entry_id)


def _duplicate(
    conn: sqlite3.Connection,
    operation: str,
    request_id: str,
    this: Any,
    *,
    renews: bool,
    digest: str | None = None,
    hint: str = "",
) -> DuplicateSend | None:
    """The refusal of a send of DocumentID ``this`` (None: none blocks it): an earlier send
    pending, sent or uncertain (for one that ``renews`` and an acknowledgment: of ``this``)."""
    per_version = operation == "send_acknowledgment" or renews
    version = str(this) if per_version and this not in (None, "") else None
    found = conn.execute(
        "SELECT id, state, updated_at, payload_sha256, pid, document_id FROM "
        "(SELECT *, json_extract(payload_flat, '$.document_id') AS document_id "
        " FROM outbox WHERE operation = ? AND request_id = ? AND state IN (?, ?, ?)) "
        "WHERE ? IS NULL OR document_id IS NULL OR document_id = ? "
        "ORDER BY id DESC LIMIT 1",
        (operation, request_id, *BLOCKING, version, version),
    ).fetchone()
    if found is None:
        return None
    entry_id, state, since, sent_digest, pid, document_id = found
    sent = f"DocumentID {document_id!r}" if document_id else "a DocumentID not recorded"
    entry = f"outbox entry {entry_id}"
    if digest is not None:
        entry += ", the same payload" if sent_digest == digest else ", a different payload"
    subject = repr(request_id)
    if operation == "send_acknowledgment":  # refused per version
        subject += f" that acknowledges {sent}"
    else:
        entry += f", {sent}"
    what = {
        "sent": f"was already sent at {since}",
        "uncertain": (
            f"may already have reached the partner (uncertain since {since}); run a pull to "
            "settle it from the partner's lists,"
        ),
        "pending": (
            f"is being sent right now, or its sender was interrupted (pending since {since}, "
            f"pid {pid}); if that process is gone the next pull settles it,"
        ),
    }[state]
    renewal = (
        "To send a corrected transcript, give it a new DocumentID and TransmissionType Reissue"
        if not (this and document_id and str(this) != str(document_id))
        else f"This one has another DocumentID ({this!r}) but its TransmissionType is not "
        "Reissue: to send it as a correction, make it Reissue"
    )
    again = {
        "send_transcript": f"{renewal}: a re-issue is a send of its own. ",
        "send_response": "A response to the request's cancellation is a send of its own (pull "
        "first if the store does not hold the cancellation yet). ",
    }.get(operation, "")
    return DuplicateSend(
        f"{operation} for {subject} {what} ({entry}). Sending it again could duplicate it at "
        f"the partner. {again}Else {hint or 'pass force=True'} to send it anyway.",
        entry_id=entry_id,
        state=state,
    )


def _entry(conn: sqlite3.Connection, entry_id: int, target: str | None = None) -> dict[str, Any]:
    """Entry ``entry_id``; with a ``target`` state, if pending, uncertain or settled from the
    lists (a late answer overrides an inference)."""
    cursor = conn.execute("SELECT * FROM outbox WHERE id = ?", (entry_id,))
    cursor.row_factory = sqlite3.Row
    if (found := cursor.fetchone()) is None:
        raise StoreError(f"There is no outbox entry {entry_id}.")
    entry = dict(found)
    if target and entry["state"] not in ("pending", "uncertain") and entry["resolved_at"] is None:
        raise StoreError(
            f"Outbox entry {entry_id} ({entry['operation']} for {entry['request_id']!r}) is "
            f"already {entry['state']}; it cannot become {target}. Start a new entry instead."
        )
    return entry


# Far longer than a partner takes to finish a send a client gave up on ("gone" needs none:
# inferring "sent" never allows a resend), or a send takes (a pending entry this old was
# interrupted).
SETTLE_MARGIN = STALE_PENDING = timedelta(minutes=15)
_FILED = {
    "send_response": ("responses", RESPONSE_FIELDS, "sent_at"),
    "send_transcript": ("transcripts_sent", TRANSCRIPT_SENT_FIELDS, "sent_at"),
    "send_acknowledgment": ("acknowledgments", ACKNOWLEDGMENT_FIELDS, "recorded_at"),
}


def explaining(
    conn: sqlite3.Connection, list_name: str, ids: Iterable[str], *, requested: str
) -> set[str]:
    """The ids whose departure a send of ours explains: begun before ``requested``, pending,
    sent or uncertain, and not listed since."""
    operations, ids = LISTS[list_name].operations, list(ids)
    if not operations or not ids:
        return set()
    sends = conn.execute(
        "SELECT request_id, created_at FROM outbox WHERE operation IN (SELECT value FROM "
        "json_each(?)) AND state IN (?, ?, ?) AND created_at < ? "
        "AND request_id IN (SELECT value FROM json_each(?))",
        (dumps(operations), *BLOCKING, requested, dumps(ids)),
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
        "call_id FROM outbox WHERE state = 'uncertain' AND operation IN (SELECT value FROM "
        "json_each(?)) AND updated_at < ? ORDER BY id",
        (dumps(operations), requested),
    )
    uncertain.row_factory, decisions = sqlite3.Row, []
    for entry in map(dict, uncertain.fetchall()):
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
    others = conn.execute(
        "SELECT id, created_at FROM outbox WHERE request_id = ? AND id != ? AND state = 'sent' "
        "AND created_at < ? AND operation IN (SELECT value FROM json_each(?)) ORDER BY id",
        (request_id, entry["id"], requested, dumps(LISTS[list_name].operations)),
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
    marks = ", ".join("?" * len(values))
    sql = f"INSERT OR REPLACE INTO {table} ({', '.join(values)}) VALUES ({marks})"
    conn.execute(sql, list(values.values()))


def unfile_inferred(conn: sqlite3.Connection, entry_id: int) -> None:
    """A send inferred sent, now known otherwise: its filed document goes."""
    for table in ("responses", "transcripts_sent", "acknowledgments"):
        conn.execute(f"DELETE FROM {table} WHERE outbox_id = ? AND inferred = 1", (entry_id,))
