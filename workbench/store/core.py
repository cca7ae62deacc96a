"""The snapshot store: one SQLite file holding everything the workbench saw and sent."""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import sqlite_utils

from workbench.errors import StoreError
from workbench.redact import Redactor, is_document, is_sent_document
from workbench.store import details, entities, identity, lock, settle
from workbench.store.cells import dumps, now_text, partner_time, row_id, utc_text
from workbench.store.connection import Connection
from workbench.store.events import event_keys, events_seen, read_events
from workbench.store.history import History
from workbench.store.lists import EVENT_SOURCES, LISTS, list_info
from workbench.store.migrations import ensure_schema, read_version, refuse_newer
from workbench.store.outbox import Outbox
from workbench.store.record import SnapshotDiff, item_key, request_id_from_url, workbench_version
from workbench.store.schema import SCHEMA_VERSION

RUN_STATUSES = ("ok", "partial", "failed")
_CALL_SQL = (
    "INSERT INTO calls (run_id, request_id, interface, operation, method, url, attempt, "
    "started_at, duration_s, status, error, request_headers, request_body, response_headers, "
    "response_body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_CALL_TEXTS = ("url", "error", "request_body", "response_body")
_CALL_HEADERS = ("request_headers", "response_headers")
Details = Mapping[str, Iterable[Mapping[str, Any]]]


class Store(History):
    """Runs, calls, list snapshots, entities and the outbox, in one SQLite file.

    Opening creates the database, or migrates an older one in place. Thread-safe: the threads
    of a pull share one store. Every write is its own transaction. ``read_only=True`` opens an
    existing database for reading only (bundles, reports): it creates, migrates and settles
    nothing, and writes raise ``StoreError``; an older store is read from a private migrated
    copy (:meth:`Connection.read_copy`), its file left as it was. Its read side (``table``,
    ``as_of``, ``diff``, ``timeline``, ``versions``, ``document``, ``meta``) is
    :class:`History`'s. ``file`` is the file read.

    >>> store = Store("data/workbench.db", secrets=["s3cret"])  # doctest: +SKIP
    >>> run = store.begin_run(kind="pull", profile="sandbox")  # doctest: +SKIP
    >>> diff = store.record_snapshot(run, "supplier_requests", items)  # doctest: +SKIP
    >>> store.as_of("2026-03-02T09:00Z")["supplier_requests"]  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | Path,
        *,
        secrets: Iterable[str] = (),
        busy_timeout_s: float = 30.0,
        stale_pending_s: float = 900.0,
        read_only: bool = False,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._scrub = Redactor(secrets)
        super().__init__(Connection(self.path, busy_timeout_s=busy_timeout_s, read_only=read_only))
        try:
            self.schema_version = self._open_schema()
            self.outbox = Outbox(self._c, self._scrub, stale_after_s=stale_pending_s)
            if not read_only:
                self.recover()
        except BaseException:
            self._c.close()
            raise

    def _open_schema(self) -> int:
        with self._c.read() as conn:
            found = read_version(conn)
        if found == SCHEMA_VERSION:  # the usual case: no write lock needed
            return found
        migrate = partial(ensure_schema, path=str(self.path), version=workbench_version())
        if not self.read_only:
            with self._c.write() as conn:
                return migrate(conn)
        refuse_newer(found, path=str(self.path), version=workbench_version())
        if found == 0:
            raise StoreError(
                f"The database {self.path} holds no workbench store (nothing was ever pulled "
                "into it); run `workbench pull` first, or point at another database."
            )
        self._c.read_copy(migrate)  # an older store: read, migrated, from a private copy
        return SCHEMA_VERSION

    # -- housekeeping -------------------------------------------------------------------------

    @property
    def file(self) -> Path:
        """The database file read: ``path``, or the private migrated copy of an older store
        opened read-only (removed on close)."""
        return self._c.file

    @property
    def db(self) -> sqlite_utils.Database:
        """The ``sqlite_utils.Database`` on the store's connection (for ad hoc queries)."""
        return self._c.db

    def add_secret(self, value: str | None) -> None:
        """Mask ``value`` in everything written from now on (e.g. a token just issued)."""
        self._scrub.add(value)

    def set_meta(self, key: str, value: str | None) -> None:
        """Set a value of the ``meta`` table (``None`` removes it)."""
        with self._c.write() as conn:
            if value is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def claim_partner(self, wanted: Mapping[str, str]) -> None:
        """Record whom the store holds (``identity.PARTNER_KEYS``) where it records nothing yet;
        ``ConfigError``, writing nothing, when it holds another partner."""
        with self._c.write() as conn:
            identity.claim_partner(conn, self.path, wanted)

    def recover(self) -> dict[str, list[int]]:
        """Settle what a crash left behind: stale pending sends become uncertain, runs whose
        process is gone become failed. Runs on open and when a pull takes the lock."""
        stale = self.outbox.sweep_stale()
        rows = self._c.rows("SELECT id, pid, host FROM runs WHERE status = 'running'")
        dead = [r[0] for r in rows if lock.process_alive(r[1], r[2]) is False]
        if dead:
            with self._c.write() as conn:
                conn.executemany(
                    "UPDATE runs SET status = 'failed', finished_at = ?, summary = ? "
                    "WHERE id = ? AND status = 'running'",
                    [
                        (now_text(), dumps({"error": "interrupted: its process ended"}), run_id)
                        for run_id in dead
                    ],
                )
        return {"outbox_uncertain": stale, "runs_failed": dead}

    @contextmanager
    def run_lock(self, *, timeout_s: float = 60.0) -> Iterator[None]:
        """Only one pull at a time per database: wait up to ``timeout_s``, then ``StoreError``.

        >>> with store.run_lock(timeout_s=10):  # doctest: +SKIP
        ...     pull(store)
        """
        with lock.run_lock(self._c, timeout_s=timeout_s):
            self.recover()
            yield

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Group the writes of the block into one transaction: all or nothing, and one commit
        instead of many (other threads' writes wait for the block, so keep it short and never
        wait on the network inside it).

        >>> with store.batch():  # doctest: +SKIP
        ...     for item in parsed:
        ...         store.upsert_transcript(item.id, detail=item.detail, flat=item.flat)
        """
        with self._c.write():
            yield

    def close(self) -> None:
        self._c.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # -- runs, calls, snapshots ---------------------------------------------------------------

    def begin_run(self, *, kind: str = "pull", profile: str | None = None) -> int:
        """Start a run (status ``running``); its id."""
        with self._c.write() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (kind, profile, started_at, status, workbench_version, pid, "
                "host) VALUES (?, ?, ?, 'running', ?, ?, ?)",
                (kind, profile, now_text(), workbench_version(), os.getpid(), socket.gethostname()),
            )
            return int(cursor.lastrowid or 0)

    def finish_run(self, run_id: int, *, status: str, summary: Any = None) -> None:
        """End a run: ``status`` ok / partial / failed, ``summary`` any JSON-able value."""
        run_id = row_id(run_id) or 0
        if status not in RUN_STATUSES:
            raise StoreError(f"Run status {status!r} is not one of {', '.join(RUN_STATUSES)}.")
        text = dumps(self._scrub.data(summary)) if summary is not None else None
        with self._c.write() as conn:
            cursor = conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, summary = coalesce(?, summary) "
                "WHERE id = ?",
                (now_text(), status, text, run_id),
            )
            if cursor.rowcount == 0:
                raise StoreError(f"There is no run {run_id} in {self.path}.")

    def record_call(
        self, exchange: Any, *, run_id: int | None = None, request_id: str | None = None
    ) -> int:
        """Append one HTTP exchange (any object with ``Exchange``'s attributes); its call id.

        ``request_id`` defaults to the ``:id`` of a transcript-exchange by-id URL.
        Usable as a session recorder: ``functools.partial(store.record_call, run_id=run)``.
        """
        url, error, request_body, response_body = (
            _as_text(getattr(exchange, name, None)) for name in _CALL_TEXTS
        )
        # The session masked it already; a database is forever, so again, by the same rule.
        interface, status = getattr(exchange, "interface", None), getattr(exchange, "status", None)
        document = is_sent_document(interface, getattr(exchange, "method", None))
        answered = is_document(interface, status)
        sent, received = (getattr(exchange, name, None) for name in _CALL_HEADERS)
        texts = [
            self._scrub.url(url) if url else url,
            self._scrub.text(error),
            dumps(self._scrub.headers(sent)),
            self._scrub.answer(request_body, document=document),
            dumps(self._scrub.headers(received, document=answered)),
            self._scrub.answer(response_body, document=answered),
        ]
        url, error, request_headers, request_body, response_headers, response_body = texts
        started = getattr(exchange, "started_at", None)
        params = (
            row_id(run_id),
            request_id if request_id is not None else request_id_from_url(url),
            getattr(exchange, "interface", None),
            getattr(exchange, "operation", None),
            getattr(exchange, "method", None),
            url,
            getattr(exchange, "attempt", None),
            (partner_time(started) or now_text())
            if isinstance(started, datetime | str)
            else now_text(),
            getattr(exchange, "duration_s", None),
            getattr(exchange, "status", None),
            error,
            request_headers,
            request_body,
            response_headers,
            response_body,
        )
        return self._c.insert(_CALL_SQL, params)

    def record_snapshot(
        self,
        run_id: int | None,
        list_name: str,
        items: Iterable[Any],
        *,
        call_id: int | None = None,
        key: str | None = None,
        taken_at: Any = None,
        event_fields: Mapping[str, str] | None = None,
    ) -> SnapshotDiff:
        """Append what a list showed; the diff against its previous snapshot.

        In the same transaction it keeps the entity tables in step: listed ids get
        ``on_list``/``last_seen_at``; ids no longer listed get ``left_at`` and ``left_reason``
        (``outbox`` when a send of ours explains it, else ``elsewhere``); uncertain sends of
        this list are settled, if the list was requested after they became uncertain: it was
        requested when its call ``call_id`` started, else at ``taken_at`` if given, else at an
        unknown time (nothing is settled). Only call it with a complete list from a successful
        call.
        ``key``: the item field naming an item (default ``RequestID``; events: their id, else
        a content hash). ``event_fields``: where the partner puts an event's id, type and time
        (the profile's setting), tried before the common names.
        """
        run_id, call_id = row_id(run_id), row_id(call_id)
        info = list_info(list_name)
        key = key if key is not None else info.key
        taken = utc_text(taken_at) if taken_at is not None else now_text()
        assert taken is not None
        items = list(items)
        texts = [self._scrub.document(dumps(item)) for item in items]
        said = read_events(items, event_fields) if info.source is not None else []
        if key is None:  # an event list
            keys = event_keys(str(info.source), said, texts)
        else:
            keys = [item_key(item, key, text) for item, text in zip(items, texts, strict=True)]
        current = dict(zip(keys, texts, strict=True))
        with self._c.write() as conn:
            found = conn.execute(
                "SELECT id FROM snapshots WHERE list_name = ? "
                "ORDER BY taken_at DESC, id DESC LIMIT 1",
                (list_name,),
            ).fetchone()
            previous_id = found[0] if found else None
            before: dict[str, str] = {}
            if previous_id is not None:
                before = dict(
                    conn.execute(
                        "SELECT item_key, item_json FROM snapshot_items WHERE snapshot_id = ?",
                        (previous_id,),
                    ).fetchall()
                )
            appeared = tuple(k for k in current if k not in before)
            vanished = tuple(k for k in before if k not in current)
            changed = tuple(k for k in current if k in before and before[k] != current[k])
            unchanged = tuple(k for k in current if k in before and before[k] == current[k])
            snapshot_id = int(
                conn.execute(
                    "INSERT INTO snapshots (run_id, call_id, list_name, taken_at, key, "
                    "item_count, previous_id, appeared, vanished, changed) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        call_id,
                        list_name,
                        taken,
                        key,
                        len(keys),
                        previous_id,
                        len(appeared),
                        len(vanished),
                        len(changed),
                    ),
                ).lastrowid
                or 0
            )
            conn.executemany(
                "INSERT INTO snapshot_items (snapshot_id, position, item_key, item_json) "
                "VALUES (?, ?, ?, ?)",
                [(snapshot_id, i, k, t) for i, (k, t) in enumerate(zip(keys, texts, strict=True))],
            )
            if info.source is None:
                entities.list_seen(conn, info, items, keys, at=taken)
            else:
                events_seen(conn, info.source, said, keys, texts, at=taken, listed=True)
            # A list speaks only of the sends begun before it was requested (see settle.py).
            requested = settle.requested_at(conn, call_id) or (
                taken if taken_at is not None else None
            )
            resolved = settle.resolve(conn, list_name, set(keys), at=taken, requested=requested)
            left = entities.mark_unlisted(conn, info, snapshot_id, at=taken, requested=requested)
        return SnapshotDiff(
            snapshot_id=snapshot_id,
            list_name=list_name,
            taken_at=taken,
            previous_id=previous_id,
            appeared=appeared,
            vanished=vanished,
            changed=changed,
            unchanged=unchanged,
            left=left,
            resolved=tuple(resolved),
        )

    # -- entities -----------------------------------------------------------------------------

    def upsert_request(
        self,
        request_id: str,
        *,
        request_date: Any = None,
        seen_at: Any = None,
        detail: Any = None,
        flat: Mapping[str, Any] | None = None,
        children: Details | None = None,
        call_id: int | None = None,
        parse_error: Any = None,
        validation: Any = None,
    ) -> None:
        """Store a transcript request's detail: the item, its parsed PESC ``flat`` record and
        ``children`` (``{"recipients": [...], ...}``)."""
        self._upsert("supplier_requests", request_id, request_date=request_date, seen_at=seen_at,
                     detail=detail, flat=flat, children=children, call_id=call_id,
                     parse_error=parse_error, validation=validation)  # fmt: skip

    def upsert_transcript(
        self,
        transcript_id: str,
        *,
        request_date: Any = None,
        seen_at: Any = None,
        detail: Any = None,
        flat: Mapping[str, Any] | None = None,
        children: Details | None = None,
        call_id: int | None = None,
        parse_error: Any = None,
        validation: Any = None,
    ) -> None:
        """Store a received transcript's detail (children: ``courses``, ``awards``, ...)."""
        self._upsert("consumer_transcripts", transcript_id, request_date=request_date,
                     seen_at=seen_at, detail=detail, flat=flat, children=children,
                     call_id=call_id, parse_error=parse_error, validation=validation)  # fmt: skip

    def prepare_detail(self, list_name: str, item_id: str, **values: Any) -> details.PreparedDetail:
        """The scrubbing and layout of an ``upsert_request``/``upsert_transcript`` (same
        keywords), done before any lock is taken; ``write_details`` writes a group of them.

        >>> store.write_details([store.prepare_detail("supplier_requests", rid, flat=flat)])
        ... # doctest: +SKIP
        """
        values["call_id"] = row_id(values.get("call_id"))
        return details.prepare_detail(self._scrub, LISTS[list_name], item_id, **values)

    def write_details(self, prepared: Iterable[details.PreparedDetail]) -> None:
        """Write prepared details in one transaction (all or nothing)."""
        with self._c.write() as conn:
            for one in prepared:
                details.write_detail(self._c, conn, one)

    def _upsert(self, list_name: str, item_id: str, **values: Any) -> None:
        """One detail: the grouped path of a pull, with a group of one."""
        self.write_details([self.prepare_detail(list_name, item_id, **values)])

    def upsert_events(
        self,
        source: str,
        events: Iterable[Any],
        *,
        seen_at: Any = None,
        event_fields: Mapping[str, str] | None = None,
    ) -> dict[str, list[str]]:
        """Upsert events of ``placement`` or ``domestic``, deduplicated by id (else content);
        ``{"new": [...], "seen": [...]}`` keys. ``record_snapshot`` of an events list does this
        by itself. ``event_fields`` as for ``record_snapshot``."""
        if source not in EVENT_SOURCES:
            raise StoreError(f"Unknown event source {source!r}; one of: placement, domestic.")
        events = list(events)
        texts = [self._scrub.document(dumps(event)) for event in events]
        said = read_events(events, event_fields)
        keys = event_keys(source, said, texts)
        at = utc_text(seen_at) if seen_at is not None else now_text()
        assert at is not None
        with self._c.write() as conn:
            new = events_seen(conn, source, said, keys, texts, at=at, listed=False)
        return {"new": new, "seen": [k for k in dict.fromkeys(keys) if k not in set(new)]}

    def mark_left(
        self, list_name: str, ids: Iterable[str], *, at: Any = None, reason: str | None = None
    ) -> dict[str, str]:
        """Mark ids as gone from a list (``record_snapshot`` does it by itself); ``reason``
        ``outbox`` / ``elsewhere``, or None to ask the outbox. Returns id -> reason."""
        info = list_info(list_name)
        when = utc_text(at) if at is not None else now_text()
        assert when is not None
        with self._c.write() as conn:
            return entities.mark_left(conn, info, ids, at=when, reason=reason)

    def missing_details(
        self, list_name: str, ids: Iterable[str], dates: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The ids (in order) whose detail is to be fetched: not stored, last fetch failed,
        back on the list since it was fetched, or (``dates``: id -> RequestDate as listed) a
        RequestDate other than when it was fetched."""
        info = list_info(list_name, details=True)
        wanted = list(dict.fromkeys(str(i) for i in ids))
        with self._c.read() as conn:
            have = dict(
                conn.execute(
                    f"SELECT e.{info.id_column}, e.detail_request_date FROM {info.table} e "
                    f"WHERE e.{info.id_column} IN (SELECT value FROM json_each(?)) "
                    "AND e.detail_fetched_at IS NOT NULL "
                    "AND (e.detail_failed_at IS NULL "
                    "OR e.detail_failed_at <= e.detail_fetched_at) "
                    "AND NOT EXISTS (SELECT 1 FROM departures d WHERE d.item_id = "
                    f"e.{info.id_column} AND d.list_name = ? "
                    "AND d.left_at >= e.detail_fetched_at)",
                    (dumps(wanted), info.name),
                ).fetchall()
            )
        dates = dates or {}
        return [
            i
            for i in wanted
            if i not in have or (dates.get(i) is not None and partner_time(dates[i]) != have[i])
        ]

    def record_detail_failure(
        self, list_name: str, request_id: str, error: Any, *, run_id: int | None = None
    ) -> None:
        """Remember a failed detail fetch; ``missing_details`` offers the id again."""
        info, item_id, at = list_info(list_name, details=True), str(request_id), now_text()
        text = self._scrub.text(str(error)) if error is not None else None
        with self._c.write() as conn:
            conn.execute(
                "INSERT INTO detail_failures (list_name, item_id, run_id, failed_at, error) "
                "VALUES (?, ?, ?, ?, ?)",
                (info.name, item_id, row_id(run_id), at, text),
            )
            conn.execute(
                f"INSERT INTO {info.table} ({info.id_column}, first_seen_at, last_seen_at, "
                "detail_failed_at, detail_error) VALUES (?, ?, ?, ?, ?) "
                f"ON CONFLICT({info.id_column}) DO UPDATE SET "
                "detail_failed_at = excluded.detail_failed_at, "
                "detail_error = excluded.detail_error",
                (item_id, at, at, at, text),
            )


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
