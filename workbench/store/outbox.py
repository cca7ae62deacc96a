"""The outbox: every POST to the partner is recorded before it is sent, then marked.

States: ``pending`` (recorded, being sent) -> ``sent`` | ``failed`` (known not to have taken
effect; sending again is allowed) | ``uncertain`` (it may have reached the partner).

- The same operation for the same request is refused (:class:`DuplicateSend`) while an entry is
  pending, sent or uncertain, unless ``force=True``. A send that renews an earlier one is
  refused per DocumentID instead: an acknowledgment (of a transcript re-issued since, it
  carries another DocumentID), a re-issued transcript, a response to a request's
  cancellation (``renews=True``). Of those, only one carrying the DocumentID of an earlier
  send is a duplicate; one whose DocumentID is unknown is refused by, and refuses, every
  other. The check and the insert are one transaction, so two processes cannot both pass it.
- A crash between ``begin`` and ``mark_*`` leaves ``pending``. :meth:`Outbox.sweep_stale` (run
  when a store opens and when a pull takes the lock) turns a pending entry into ``uncertain``
  when its process is gone (same host), its run has ended, or it is older than
  ``stale_after_s``.
- Uncertain entries are settled from the partner's lists, never by resending
  (:func:`resolve`): still listed -> ``failed`` (it did not take effect, since every send takes
  its item off the list), but only in a list requested ``SETTLE_MARGIN`` (15 minutes) or more
  after the entry became uncertain, since the partner may still be processing it; gone ->
  ``sent`` (inferred), but only if the item was listed in the last snapshot taken before the
  send and no other send of ours explains its departure; otherwise it stays ``uncertain`` and
  ``resolution`` says why the lists cannot tell. Only lists requested after the entry became
  uncertain count: one requested earlier may show the partner before the send was processed,
  however late its answer arrives.
- Outbox writes are ``durable``: ``synchronous=FULL``, so they survive a power cut.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

import pandas as pd

from workbench.errors import DuplicateSend, StoreError
from workbench.http.masking import Redactor
from workbench.store.cells import dumps, now, now_text, row_id, sha256, utc_text
from workbench.store.connection import Connection
from workbench.store.frames import query_frame
from workbench.store.lists import OPERATIONS, list_info
from workbench.store.lock import process_alive
from workbench.store.settle import (
    BLOCKING,
    explaining,
    record_document,
    resolve,
    unfile_inferred,
)


class Outbox:
    """The outbox of one store: ``store.outbox``."""

    def __init__(self, c: Connection, scrub: Redactor, *, stale_after_s: float) -> None:
        self._c = c
        self._scrub = scrub
        self.stale_after_s = stale_after_s

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
        """Record a send as pending, before it goes out; its entry id.

        ``flat`` is the flattened PESC record of the document being sent (it fills
        ``responses``/``acknowledgments`` once sent). Raises ``DuplicateSend`` when the same
        operation for the same request is pending, sent or uncertain, unless ``force``; for
        an acknowledgment, or a send that ``renews`` an earlier one (a re-issued transcript, a
        response to a cancellation), only when that one carries the same ``document_id``.

        >>> entry = store.outbox.begin("send_response", "R1", {"PESCXML": xml})  # doctest: +SKIP
        """
        run_id = row_id(run_id)
        if operation not in OPERATIONS:
            raise StoreError(f"Unknown operation {operation!r}; one of {', '.join(OPERATIONS)}.")
        if not isinstance(request_id, str) or not request_id:
            raise StoreError("An outbox entry needs a non-empty request id.")
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", "replace")
        text = payload if isinstance(payload, str) else dumps(payload)
        digest = sha256(text)
        # A document we send is kept as written (redact.Redactor.document).
        clean = self._scrub.document(text)
        clean_flat = dict(flat) if flat is not None else None
        flat_text = dumps(clean_flat) if clean_flat is not None else None
        version = sent_version(operation, clean_flat, renews=renews)
        at = now_text()
        with self._c.write(durable=True) as conn:
            found = _blocking(conn, operation, request_id, version)
            if found and not force:
                this = (clean_flat or {}).get("document_id")
                raise _duplicate(operation, request_id, found, digest, this=this)
            cursor = conn.execute(
                "INSERT INTO outbox (operation, request_id, state, forced, payload, "
                "payload_sha256, payload_flat, created_at, updated_at, run_id, pid, host) "
                "VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    operation,
                    request_id,
                    int(bool(found)),
                    clean,
                    digest,
                    flat_text,
                    at,
                    at,
                    run_id,
                    os.getpid(),
                    socket.gethostname(),
                ),
            )
            return int(cursor.lastrowid or 0)

    def duplicate_of(
        self,
        operation: str,
        request_id: str,
        *,
        document_id: str | None = None,
        renews: bool = False,
        hint: str = "",
    ) -> DuplicateSend | None:
        """The refusal ``begin`` would raise for this send now (``document_id``: its
        DocumentID, ``renews``: as for ``begin``), or None: lets a caller say so before it asks
        anyone. ``hint`` replaces the advice to pass ``force=True`` (a CLI says ``--force``)."""
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
        """The partner answered with success. ``reply_flat``: the flattened reply document
        (the acknowledgment ``send_transcript`` returns)."""
        entry_id, call_id, status = row_id(entry_id) or 0, row_id(call_id), row_id(status)
        body = response_body if isinstance(response_body, str | None) else dumps(response_body)
        body = self._scrub.document(body)  # a 2xx answer: the partner's document
        reply = dumps(dict(reply_flat)) if reply_flat is not None else None
        with self._c.write(durable=True) as conn:
            entry = _entry(conn, entry_id, "sent")
            at = now_text()
            conn.execute(
                "UPDATE outbox SET state = 'sent', status = ?, response_body = ?, "
                "call_id = coalesce(?, call_id), error = NULL, updated_at = ? WHERE id = ?",
                (status, body, call_id, at, entry_id),
            )
            record_document(conn, entry, at=at, inferred=False, reply=(body, reply, call_id))

    def mark_failed(
        self, entry_id: int, *, error: Any, status: int | None = None, call_id: int | None = None
    ) -> None:
        """The send is known not to have taken effect (refused, or never left): may be retried."""
        self._mark(entry_id, "failed", error, status=status, call_id=call_id)

    def mark_uncertain(self, entry_id: int, *, error: Any, call_id: int | None = None) -> None:
        """The send may have reached the partner (the connection broke after sending);
        ``call_id``: the call that may have carried it."""
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
        """One outbox entry as a dict."""
        with self._c.read() as conn:
            cursor = conn.execute("SELECT * FROM outbox WHERE id = ?", (row_id(entry_id),))
            row = cursor.fetchone()
            if row is None:
                raise StoreError(f"There is no outbox entry {entry_id} in {self._c.path}.")
            return dict(zip([d[0] for d in cursor.description], row, strict=True))

    def pending_or_uncertain(self) -> pd.DataFrame:
        """Entries still pending or uncertain, oldest first: never resend these blindly."""
        with self._c.read() as conn:
            return query_frame(
                conn,
                "SELECT * FROM outbox WHERE state IN ('pending', 'uncertain') ORDER BY id",
                operation="store.outbox.pending_or_uncertain",
            )

    def resolve_uncertain(
        self, list_name: str, listed_ids: Iterable[str], *, at: Any
    ) -> pd.DataFrame:
        """Settle uncertain sends from a list the partner showed when asked at ``at``; the
        decisions. Entries that became uncertain after ``at`` are left alone.

        Pass the complete list from a successful call (an empty list counts: nothing listed)
        and the time that call was started. ``record_snapshot`` does this by itself for the
        lists it records.
        """
        list_info(list_name)
        when = utc_text(at) or now_text()
        listed = {str(i) for i in listed_ids}
        with self._c.write(durable=True) as conn:
            decisions = resolve(conn, list_name, listed, at=when, requested=when)
        columns = ["entry_id", "operation", "request_id", "state", "resolution"]
        frame = pd.DataFrame.from_records(decisions, columns=columns)
        frame["entry_id"] = frame["entry_id"].astype("Int64")
        frame["request_id"] = frame["request_id"].astype("string")
        return frame

    def explains(self, list_name: str, request_id: str) -> bool:
        """Did we send (or may we have sent) something that takes ``request_id`` off the list?"""
        list_info(list_name)
        with self._c.read() as conn:
            return request_id in explaining(conn, list_name, [request_id], requested=now_text())

    def sweep_stale(self) -> list[int]:
        """Pending entries whose process is gone, whose run has ended, or older than
        ``stale_after_s`` become uncertain; their ids."""
        rows = self._c.rows(
            "SELECT o.id, o.created_at, o.pid, o.host, r.status FROM outbox o "
            "LEFT JOIN runs r ON r.id = o.run_id WHERE o.state = 'pending'"
        )
        limit = utc_text(now() - timedelta(seconds=self.stale_after_s)) or ""
        stale = [
            (entry_id, pid)
            for entry_id, created, pid, host, run_status in rows
            if process_alive(pid, host) is False
            or created < limit
            or run_status not in (None, "running")
        ]
        if not stale:
            return []
        at = now_text()
        with self._c.write(durable=True) as conn:
            conn.executemany(
                "UPDATE outbox SET state = 'uncertain', updated_at = ?, error = ? "
                "WHERE id = ? AND state = 'pending'",
                [
                    (
                        at,
                        f"interrupted: still pending when found at {at} (process {pid} is gone, "
                        f"its run ended, or it is older than {self.stale_after_s:g} s); it may "
                        "have reached the partner",
                        entry_id,
                    )
                    for entry_id, pid in stale
                ],
            )
        return [entry_id for entry_id, _ in stale]

    def last_sent(self, operation: str, request_id: str) -> dict[str, Any] | None:
        """The newest entry of ``operation`` for ``request_id`` that is sent, pending or
        uncertain (``id``, ``state``, ``updated_at``, ``document_id``); None when there is none.
        A send that renews it says so."""
        with self._c.read() as conn:
            cursor = conn.execute(
                "SELECT id, state, updated_at, json_extract(payload_flat, '$.document_id') AS "
                "document_id FROM outbox WHERE operation = ? AND request_id = ? "
                "AND state IN (?, ?, ?) ORDER BY id DESC LIMIT 1",
                (operation, request_id, *BLOCKING),
            )
            row = cursor.fetchone()
            columns = [d[0] for d in cursor.description]
        return dict(zip(columns, row, strict=True)) if row else None


def sent_version(
    operation: str, flat: Mapping[str, Any] | None, *, renews: bool = False
) -> str | None:
    """The DocumentID a send's duplicates carry, when they are told by it: an acknowledgment
    (it copies the transcript version's), or a send that renews an earlier one. None: any
    earlier send of the operation is a duplicate (a first send, or a DocumentID unknown)."""
    if not (operation == "send_acknowledgment" or renews) or not flat:
        return None
    value = flat.get("document_id")
    return str(value) if value not in (None, "") else None


def _blocking(
    conn: sqlite3.Connection, operation: str, request_id: str, version: str | None
) -> tuple[Any, ...] | None:
    """The newest entry that blocks this send: the same operation and request, pending, sent
    or uncertain (with a ``version``, :func:`sent_version`: of that DocumentID or unknown)."""
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
    """The refusal of a send that ``found`` (the entry blocking it) already made; ``this``:
    the DocumentID of the document refused, to say how it differs."""
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


def _entry(conn: sqlite3.Connection, entry_id: int, target: str) -> dict[str, Any]:
    cursor = conn.execute(
        "SELECT id, operation, request_id, state, payload, payload_flat, resolved_at "
        "FROM outbox WHERE id = ?",
        (entry_id,),
    )
    row = cursor.fetchone()
    if row is None:
        raise StoreError(f"There is no outbox entry {entry_id}.")
    entry = dict(zip([d[0] for d in cursor.description], row, strict=True))
    movable = entry["state"] in ("pending", "uncertain") or entry["resolved_at"] is not None
    if not movable:  # a settled entry moves again only when the lists had inferred it
        raise StoreError(
            f"Outbox entry {entry_id} ({entry['operation']} for {entry['request_id']!r}) is "
            f"already {entry['state']}; it cannot become {target}. Start a new entry instead."
        )
    return entry
