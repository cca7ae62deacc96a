"""The snapshot store: one SQLite file holding everything the workbench saw and sent."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import sqlite_utils

from workbench.errors import StoreError
from workbench.store import details, entities, history, identity, lock, record
from workbench.store.connection import Connection
from workbench.store.events import events_seen
from workbench.store.lists import DETAIL_LISTS, EVENT_SOURCES, LISTS, list_info
from workbench.store.migrations import ensure_schema, read_version
from workbench.store.outbox import Outbox
from workbench.store.record import SnapshotDiff
from workbench.store.schema import SCHEMA_VERSION
from workbench.store.scrub import Scrubber
from workbench.store.values import dumps, now_text, row_id, utc_text

Details = Mapping[str, Iterable[Mapping[str, Any]]]


class Store:
    """Runs, calls, list snapshots, entities and the outbox, in one SQLite file.

    Opening creates the database, or migrates an older one in place. Thread-safe: the threads
    of a pull share one store. Every write is its own transaction. ``read_only=True`` opens an
    existing database for reading only (bundles, reports): it creates, migrates and settles
    nothing, and writes raise ``StoreError``.

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
        self._scrub = Scrubber(secrets)
        self._c = Connection(self.path, busy_timeout_s=busy_timeout_s, read_only=read_only)
        self._db: sqlite_utils.Database | None = None
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
        if self.read_only:
            raise StoreError(
                f"The database {self.path} has schema version {found}, this workbench reads "
                f"{SCHEMA_VERSION}: run `workbench pull` on it once (it migrates), or upgrade."
            )
        with self._c.write() as conn:
            return ensure_schema(conn, path=str(self.path), version=record.workbench_version())

    # -- housekeeping -------------------------------------------------------------------------

    @property
    def db(self) -> sqlite_utils.Database:
        """The ``sqlite_utils.Database`` on the store's connection (for ad hoc queries)."""
        if self._db is None:
            self._db = sqlite_utils.Database(self._c.conn, execute_plugins=False)
        return self._db

    def add_secret(self, value: str | None) -> None:
        """Mask ``value`` in everything written from now on (e.g. a token just issued)."""
        self._scrub.add(value)

    def meta(self, key: str) -> str | None:
        """A value of the ``meta`` table (``schema_version``, ``peek_count_learned``...)."""
        rows = self._c.rows("SELECT value FROM meta WHERE key = ?", [key])
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

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
        return record.begin_run(self._c, kind=kind, profile=profile)

    def finish_run(self, run_id: int, *, status: str, summary: Any = None) -> None:
        """End a run: ``status`` ok / partial / failed, ``summary`` any JSON-able value."""
        record.finish_run(self._c, self._scrub, row_id(run_id) or 0, status=status, summary=summary)

    def record_call(
        self, exchange: Any, *, run_id: int | None = None, request_id: str | None = None
    ) -> int:
        """Append one HTTP exchange (any object with ``Exchange``'s attributes); its call id.

        ``request_id`` defaults to the ``:id`` of a transcript-exchange by-id URL.
        Usable as a session recorder: ``functools.partial(store.record_call, run_id=run)``.
        """
        return record.record_call(
            self._c, self._scrub, exchange, run_id=row_id(run_id), request_id=request_id
        )

    def record_snapshot(
        self,
        run_id: int | None,
        list_name: str,
        items: Iterable[Any],
        *,
        call_id: int | None = None,
        key: str | None = None,
        taken_at: Any = None,
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
        a content hash).
        """
        return record.record_snapshot(
            self._c,
            self._scrub,
            row_id(run_id),
            list_name,
            items,
            call_id=row_id(call_id),
            key=key,
            taken_at=taken_at,
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
        self, source: str, events: Iterable[Any], *, seen_at: Any = None
    ) -> dict[str, list[str]]:
        """Upsert events of ``placement`` or ``domestic``, deduplicated by id (else content);
        ``{"new": [...], "seen": [...]}`` keys. ``record_snapshot`` of an events list does this
        by itself."""
        if source not in EVENT_SOURCES:
            raise StoreError(f"Unknown event source {source!r}; one of: placement, domestic.")
        events = list(events)
        texts = self._scrub.dumps(events)
        keys = [record.item_key(e, None, t) for e, t in zip(events, texts, strict=True)]
        at = utc_text(seen_at) if seen_at is not None else now_text()
        assert at is not None
        with self._c.write() as conn:
            new = events_seen(conn, source, events, keys, texts, at=at, listed=False)
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
        return entities.missing_details(self._c, list_info(list_name, details=True), ids, dates)

    def record_detail_failure(
        self, list_name: str, request_id: str, error: Any, *, run_id: int | None = None
    ) -> None:
        """Remember a failed detail fetch; ``missing_details`` offers the id again."""
        info = list_info(list_name, details=True)
        entities.record_detail_failure(
            self._c, self._scrub, info, request_id, error, run_id=row_id(run_id)
        )

    # -- reading ------------------------------------------------------------------------------

    def document(
        self, item_id: str, *, list_name: str | None = None, version: int | None = None
    ) -> str | None:
        """The PESC XML of a request's (or a received transcript's) document, unescaped once:
        its current version, or ``version`` (see :meth:`versions`); None when not stored.

        >>> store.document("7c1d0b52...")  # doctest: +SKIP
        '<?xml version="1.0" ...'
        """
        names = [list_name] if list_name else list(DETAIL_LISTS)
        for name in names:
            info = list_info(name, details=True)
            xml = entities.document(self._c, info, item_id, version=row_id(version))
            if xml is not None:
                return xml
        return None

    def versions(self, item_id: str, *, list_name: str | None = None) -> pd.DataFrame:
        """Every distinct document received for ``item_id``, oldest first: its ``version``,
        ``document_id``, ``transmission_type`` (Original, Reissue, Cancellation ...), when it
        was ``first_seen_at``, the ``call_id`` that brought it and its ``pescxml``.

        >>> store.versions("7c1d0b52...")[["version", "transmission_type"]]  # doctest: +SKIP
        """
        names = [list_name] if list_name else list(DETAIL_LISTS)
        tables = [list_info(name, details=True).table for name in names]
        return history.versions(self._c, str(item_id), tables)

    def table(self, name: str, *, where: str | None = None, params: Any = ()) -> pd.DataFrame:
        """A table or view as a DataFrame: ``store.table("calls", where="status >= ?",
        params=[400])``."""
        return history.table(self._c, name, where=where, params=params)

    def as_of(self, when: Any = None) -> dict[str, pd.DataFrame]:
        """What each list showed at ``when`` (its latest snapshot at or before); list -> frame."""
        return history.as_of(self._c, when)

    def diff(self, run_a: int, run_b: int) -> pd.DataFrame:
        """Per list, the items that appeared, vanished or changed between two runs."""
        return history.diff(self._c, row_id(run_a) or 0, row_id(run_b) or 0)

    def timeline(self, request_id: str) -> pd.DataFrame:
        """Every call, list appearance, detail, failure, outbox entry and document touching
        ``request_id``, in time order."""
        return history.timeline(self._c, request_id)

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` when the file is sound."""
        rows = self._c.rows("PRAGMA integrity_check")
        return "; ".join(str(r[0]) for r in rows)
