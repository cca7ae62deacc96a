"""The outbox: every POST recorded (durably) before it is sent: ``pending`` -> ``sent`` |
``failed`` (did not take effect: may be sent again) | ``uncertain`` (settled from the lists)."""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from workbench.errors import DuplicateSend, StoreError
from workbench.http.masking import Redactor
from workbench.store.connection import Connection, process_alive
from workbench.store.lists import OPERATIONS
from workbench.store.schema import dicts, dumps, now_text, row_id, sha256, utc_text
from workbench.store.settle import BLOCKING, record_document, unfile_inferred

# Far longer than a send takes: a pending entry this old was interrupted.
STALE_PENDING = timedelta(minutes=15)


class Outbox:
    """The outbox of one store: ``store.outbox``."""

    def __init__(self, c: Connection, scrub: Redactor) -> None:
        self._c, self._scrub = c, scrub

    def begin(
        self,
        operation: str,
        request_id: str,
        payload: str | bytes | Mapping[str, Any],
        *,
        force: bool = False,
        flat: Mapping[str, Any] | None = None,
        run_id: int | None = None,
        renews: bool = False,
    ) -> int:
        """Record a send as pending; its entry id. ``DuplicateSend`` while the same send (for one
        that ``renews`` and an acknowledgment: of its DocumentID) blocks, unless ``force``."""
        if operation not in OPERATIONS:
            raise StoreError(f"Unknown operation {operation!r}; one of {', '.join(OPERATIONS)}.")
        if not isinstance(request_id, str) or not request_id:
            raise StoreError("An outbox entry needs a non-empty request id.")
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", "replace")
        text = payload if isinstance(payload, str) else dumps(payload)
        flat = dict(flat) if flat is not None else None
        version = sent_version(operation, flat, renews=renews)
        at, digest = now_text(), sha256(text)
        row = {
            "operation": operation, "request_id": request_id, "state": "pending",
            "payload": self._scrub.document(text),
            "payload_sha256": digest, "payload_flat": None if flat is None else dumps(flat),
            "created_at": at, "updated_at": at, "run_id": row_id(run_id), "pid": os.getpid(),
            "host": socket.gethostname(),
        }  # fmt: skip
        with self._c.write(durable=True) as conn:
            found = _blocking(conn, operation, request_id, version)
            if found and not force:
                this = (flat or {}).get("document_id")
                raise _duplicate(operation, request_id, found, digest, this=this)
            row["forced"] = int(bool(found))
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
        version = sent_version(operation, {"document_id": document_id}, renews=renews)
        with self._c.read() as conn:
            found = _blocking(conn, operation, request_id, version)
        if not found:
            return None
        return _duplicate(operation, request_id, found, None, hint=hint, this=document_id)

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

    def mark_failed(
        self, entry_id: int, *, error: Any, status: int | None = None, call_id: int | None = None
    ) -> None:
        """The send did not take effect (refused, or never left)."""
        self._mark(entry_id, "failed", error, status=status, call_id=call_id)

    def mark_uncertain(self, entry_id: int, *, error: Any, call_id: int | None = None) -> None:
        """The send may have reached the partner."""
        self._mark(entry_id, "uncertain", error, call_id=call_id)

    def _mark(
        self, entry_id: int, state: str, error: Any, *, status: Any = None, call_id: Any = None
    ) -> None:
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

    def get(self, entry_id: int) -> dict[str, Any]:
        with self._c.read() as conn:
            return _entry(conn, row_id(entry_id) or 0)

    def sweep_stale(self) -> list[int]:
        """Pending entries whose process or run ended, or older than :data:`STALE_PENDING`, become
        uncertain; their ids."""
        rows = self._c.rows(
            "SELECT o.id, o.created_at, o.pid, o.host, r.status FROM outbox o "
            "LEFT JOIN runs r ON r.id = o.run_id WHERE o.state = 'pending'"
        )
        limit = utc_text(datetime.now(UTC) - STALE_PENDING) or ""
        stale = [
            (entry_id, pid)
            for entry_id, created, pid, host, run_status in rows
            if process_alive(pid, host) is False
            or created < limit
            or run_status not in (None, "running")
        ]
        if not stale:
            return []
        at, swept = now_text(), []
        with self._c.write(durable=True) as conn:
            for entry_id, pid in stale:  # one settled meanwhile by another process stays settled
                changed = conn.execute(
                    "UPDATE outbox SET state = 'uncertain', updated_at = ?, error = ? "
                    "WHERE id = ? AND state = 'pending'",
                    (at, f"interrupted: still pending when found at {at} (process {pid} is gone, "
                     f"its run ended, or it is older than {STALE_PENDING.total_seconds():g} s); "
                     "it may have reached the partner", entry_id),
                ).rowcount  # fmt: skip
                swept += [entry_id] * changed
        return swept


def sent_version(
    operation: str, flat: Mapping[str, Any] | None, *, renews: bool = False
) -> str | None:
    """The DocumentID a send's duplicates carry; None: any earlier send is one."""
    if not (operation == "send_acknowledgment" or renews) or not flat:
        return None
    value = flat.get("document_id")
    return str(value) if value not in (None, "") else None


def _blocking(
    conn: sqlite3.Connection, operation: str, request_id: str, version: str | None
) -> tuple[Any, ...] | None:
    return conn.execute(
        "SELECT id, state, updated_at, payload_sha256, pid, document_id FROM "
        "(SELECT *, json_extract(payload_flat, '$.document_id') AS document_id "
        " FROM outbox WHERE operation = ? AND request_id = ? AND state IN (?, ?, ?)) "
        "WHERE ? IS NULL OR document_id IS NULL OR document_id = ? "
        "ORDER BY id DESC LIMIT 1",
        (operation, request_id, *BLOCKING, version, version),
    ).fetchone()


def _duplicate(
    operation: str,
    request_id: str,
    found: tuple[Any, ...],
    digest: str | None,
    *,
    hint: str = "",
    this: Any = None,
) -> DuplicateSend:
    entry_id, state, since, sent_digest, pid, document_id = found
    version = f"DocumentID {document_id!r}" if document_id else "a DocumentID not recorded"
    entry = f"outbox entry {entry_id}"
    if digest is not None:
        entry += ", the same payload" if sent_digest == digest else ", a different payload"
    subject = repr(request_id)
    if operation == "send_acknowledgment":  # refused per version (see sent_version)
        subject += f" that acknowledges {version}"
    else:
        entry += f", {version}"
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
    found = dicts(conn.execute("SELECT * FROM outbox WHERE id = ?", (entry_id,)))
    if not found:
        raise StoreError(f"There is no outbox entry {entry_id}.")
    entry = found[0]
    if target and entry["state"] not in ("pending", "uncertain") and entry["resolved_at"] is None:
        raise StoreError(
            f"Outbox entry {entry_id} ({entry['operation']} for {entry['request_id']!r}) is "
            f"already {entry['state']}; it cannot become {target}. Start a new entry instead."
        )
    return entry
