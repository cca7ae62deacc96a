"""History questions, answered from the append-only records, as DataFrames: :class:`History`,
the read side of the store.

- :meth:`History.as_of`: what each list showed at a moment (its latest snapshot at or before);
- :meth:`History.diff`: what appeared, vanished or changed in each list between two runs;
- :meth:`History.timeline`: everything that touched one id (calls, list appearances and
  departures, details, failures, outbox entries, documents sent and received), in time order;
- :meth:`History.versions`, :meth:`History.document`, :meth:`History.current_documents`: the
  documents received (XML, flattened fields, validation, detail item), which the entity rows
  do not carry.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pandas as pd

from workbench.errors import StoreError
from workbench.store.cells import now_text, row_id, utc_text
from workbench.store.connection import Connection
from workbench.store.events import events_flat
from workbench.store.frames import query_frame, snake, typed
from workbench.store.lists import DETAIL_LISTS, LIST_NAMES, LISTS, list_info

ITEM_COLUMNS = {  # of the request lists (events: EVENT_COLUMNS)
    "supplier_requests": ["request_id", "request_date"],
    "consumer_transcripts": ["request_id", "request_date"],
}
DIFF_COLUMNS = ["list", "key", "change", "before", "after", "snapshot_a", "snapshot_b"]
# The list whose items a ``documents`` row's entity holds (SQL, for ``documents d``).
_LIST_OF_ENTITY = (
    "CASE d.entity "
    + " ".join(f"WHEN '{i.table}' THEN '{i.name}'" for i in (LISTS[n] for n in DETAIL_LISTS))
    + " END"
)
# A request's sent documents of one table, each with ``n``, its version: 1, 2, ... as sent.
_NUMBERED = (
    "SELECT *, row_number() OVER (ORDER BY sent_at, outbox_id) AS n FROM {table} "
    "WHERE request_id = ?"
)
TIMELINE_COLUMNS = [
    "at", "kind", "list", "description", "run_id", "call_id", "snapshot_id", "outbox_id",
]  # fmt: skip


def _plain(params: Any) -> tuple[Any, ...]:
    """Parameters as sqlite3 binds them: numpy scalars (from a DataFrame) become Python ones,
    or sqlite3 would bind them as BLOBs and the filter would silently match nothing."""
    return tuple(
        p.item() if hasattr(p, "item") and hasattr(p, "dtype") else p for p in params or ()
    )


def _latest(conn: sqlite3.Connection, list_name: str, before: str) -> tuple[Any, ...] | None:
    return conn.execute(
        "SELECT id, taken_at FROM snapshots WHERE list_name = ? AND taken_at <= ? "
        "ORDER BY taken_at DESC, id DESC LIMIT 1",
        (list_name, before),
    ).fetchone()


def _items(conn: sqlite3.Connection, snapshot_id: int | None) -> list[tuple[str, str]]:
    if snapshot_id is None:
        return []
    return conn.execute(
        "SELECT item_key, item_json FROM snapshot_items WHERE snapshot_id = ? ORDER BY position",
        (snapshot_id,),
    ).fetchall()


def items_frame(
    list_name: str, items: list[tuple[str, str]], snapshot_id: int | None, taken_at: str | None
) -> pd.DataFrame:
    """A list's items, flattened (``json_normalize``, snake_case), with their ``item_key``;
    events with their id, type and time wherever they keep them (``events_flat``)."""
    records = [json.loads(text) for _, text in items]
    if LISTS[list_name].source is not None:
        flat = events_flat(records)
    else:
        records = [r if isinstance(r, dict) else {"value": r} for r in records]
        flat = pd.json_normalize(records, sep="_") if records else pd.DataFrame()
        flat = flat.rename(columns=snake)
        flat = flat.loc[:, ~flat.columns.duplicated()]
        base = ITEM_COLUMNS[list_name]
        for column in base:
            if column not in flat.columns:
                flat[column] = None
        flat = flat[[*base, *(c for c in flat.columns if c not in base)]]
    flat.insert(0, "item_key", [k for k, _ in items])
    flat["snapshot_id"] = snapshot_id
    flat["taken_at"] = taken_at
    return typed(
        flat.reset_index(drop=True),
        operation="store.as_of",
        snapshot_id=snapshot_id,
        taken_at=pd.Timestamp(taken_at) if taken_at else None,
    )


def _run_snapshot(conn: sqlite3.Connection, run_id: int, list_name: str) -> int | None:
    """The list as run ``run_id`` left it: its own last snapshot, else the latest before it
    ended."""
    run = conn.execute("SELECT started_at, finished_at FROM runs WHERE id = ?", (run_id,))
    found = run.fetchone()
    if found is None:
        raise StoreError(f"There is no run {run_id} in the store.")
    own = conn.execute(
        "SELECT id FROM snapshots WHERE list_name = ? AND run_id = ? "
        "ORDER BY taken_at DESC, id DESC LIMIT 1",
        (list_name, run_id),
    ).fetchone()
    if own:
        return int(own[0])
    latest = _latest(conn, list_name, found[1] or found[0])
    return int(latest[0]) if latest else None


def _appearances(conn: sqlite3.Connection, rid: str) -> list[tuple[Any, ...]]:
    """One row each time ``rid`` appeared on, or vanished from, a list."""
    present = conn.execute(
        "SELECT s.list_name, s.id, s.taken_at FROM snapshot_items i "
        "JOIN snapshots s ON s.id = i.snapshot_id WHERE i.item_key = ? ORDER BY s.taken_at",
        (rid,),
    ).fetchall()
    first: dict[str, str] = {}
    seen: set[int] = set()
    for list_name, snapshot_id, taken_at in present:
        first.setdefault(list_name, taken_at)
        seen.add(snapshot_id)
    rows = []
    for list_name, since in first.items():
        was = False
        for snapshot_id, taken_at, run_id, call_id in conn.execute(
            "SELECT id, taken_at, run_id, call_id FROM snapshots WHERE list_name = ? "
            "AND taken_at >= ? ORDER BY taken_at, id",
            (list_name, since),
        ):
            listed = snapshot_id in seen
            if listed != was:
                what = "appeared on" if listed else "vanished from"
                rows.append(
                    (taken_at, "appeared" if listed else "vanished", list_name,
                     f"{what} {list_name}", run_id, call_id, snapshot_id, None)
                )  # fmt: skip
            was = listed
    return rows


class History:
    """The read side of the store: what the records say, as DataFrames and documents.

    :class:`~workbench.store.Store` is a ``History`` that also writes; a read-only store
    answers the same questions.
    """

    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def table(self, name: str, *, where: str | None = None, params: Any = ()) -> pd.DataFrame:
        """A table or view as a DataFrame: ``store.table("calls", where="status >= ?",
        params=[400])``."""
        with self._c.read() as conn:
            known = {
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                    "AND name NOT LIKE 'sqlite_%'"
                )
            }
            if name not in known:
                raise StoreError(
                    f"There is no table or view {name!r} in the store; there are: "
                    f"{', '.join(sorted(known))}."
                )
            # The name was checked against the schema; ``where`` is the analyst's own SQL.
            sql = f'SELECT * FROM "{name}"' + (f" WHERE {where}" if where else "")
            return query_frame(conn, sql, _plain(params), operation=f"store.table({name})")

    def as_of(self, when: Any = None) -> dict[str, pd.DataFrame]:
        """What each list showed at ``when`` (its latest snapshot at or before); list -> frame."""
        at = utc_text(when) if when is not None else now_text()
        assert at is not None
        frames = {}
        with self._c.read() as conn:
            for list_name in LIST_NAMES:
                found = _latest(conn, list_name, at)
                snapshot_id, taken = found if found else (None, None)
                items = _items(conn, snapshot_id)
                frames[list_name] = items_frame(list_name, items, snapshot_id, taken)
        return frames

    def diff(self, run_a: int, run_b: int) -> pd.DataFrame:
        """Per list, the items that appeared, vanished or changed between two runs."""
        run_a, run_b = row_id(run_a) or 0, row_id(run_b) or 0
        rows: list[dict[str, Any]] = []
        with self._c.read() as conn:
            for list_name in LIST_NAMES:
                snap_a = _run_snapshot(conn, run_a, list_name)
                snap_b = _run_snapshot(conn, run_b, list_name)
                if snap_a is None or snap_b is None or snap_a == snap_b:
                    continue
                before, after = dict(_items(conn, snap_a)), dict(_items(conn, snap_b))
                for key in [*after, *(k for k in before if k not in after)]:
                    old, new = before.get(key), after.get(key)
                    change = (
                        "appeared"
                        if old is None
                        else "vanished"
                        if new is None
                        else "changed"
                        if old != new
                        else None
                    )
                    if change:
                        rows.append(
                            dict(
                                zip(
                                    DIFF_COLUMNS,
                                    (list_name, key, change, old, new, snap_a, snap_b),
                                    strict=True,
                                )
                            )
                        )
        frame = pd.DataFrame.from_records(rows, columns=DIFF_COLUMNS)
        frame["before"] = frame["before"].astype("string")
        frame["after"] = frame["after"].astype("string")
        return typed(frame, operation="store.diff", run_a=run_a, run_b=run_b)

    def timeline(self, request_id: str) -> pd.DataFrame:
        """Every call, list appearance, detail, failure, outbox entry and document touching
        ``request_id``, in time order."""
        rid = str(request_id)
        rows: list[tuple[Any, ...]] = []
        with self._c.read() as conn:
            rows += conn.execute(
                "SELECT started_at, 'call', NULL, operation || ': ' || method || ' ' || url || "
                "' -> ' || coalesce(status, error, '?'), run_id, id, NULL, NULL "
                "FROM calls WHERE request_id = ?",
                (rid,),
            ).fetchall()
            rows += _appearances(conn, rid)
            for info in (LISTS["supplier_requests"], LISTS["consumer_transcripts"]):
                rows += conn.execute(
                    f"SELECT detail_fetched_at, 'detail', ?, 'detail stored' || "
                    "coalesce('; parse error: ' || parse_error, ''), NULL, detail_call_id, NULL, "
                    f"NULL FROM {info.table} WHERE {info.id_column} = ? "
                    "AND detail_fetched_at IS NOT NULL "
                    # a departure before the departures table existed (databases migrated)
                    "UNION ALL SELECT left_at, 'left', ?, 'left the list: ' || "
                    f"coalesce(left_reason, '?'), NULL, NULL, NULL, NULL FROM {info.table} "
                    f"WHERE {info.id_column} = ? AND left_at IS NOT NULL AND NOT EXISTS "
                    "(SELECT 1 FROM departures d WHERE d.item_id = ? AND d.list_name = ?)",
                    (info.name, rid, info.name, rid, rid, info.name),
                ).fetchall()
            rows += conn.execute(
                f"SELECT d.first_seen_at, 'document', {_LIST_OF_ENTITY}, "
                "'version ' || d.version || "
                "' received: ' || coalesce(d.transmission_type, '?') || ', document ' || "
                "coalesce(d.document_id, '?'), c.run_id, d.call_id, NULL, NULL FROM documents d "
                "LEFT JOIN calls c ON c.id = d.call_id WHERE d.item_id = ?",
                (rid,),
            ).fetchall()
            rows += conn.execute(
                "SELECT left_at, 'left', list_name, 'left the list: ' || left_reason || "
                "CASE left_reason WHEN 'outbox' THEN ' (a send of ours explains it)' "
                "ELSE ' (someone else closed it)' END, NULL, NULL, snapshot_id, NULL "
                "FROM departures WHERE item_id = ?",
                (rid,),
            ).fetchall()
            rows += conn.execute(
                "SELECT failed_at, 'detail_failed', list_name, error, run_id, NULL, NULL, NULL "
                "FROM detail_failures WHERE item_id = ?",
                (rid,),
            ).fetchall()
            rows += conn.execute(
                "SELECT created_at, 'outbox', NULL, operation || ': pending' || "
                "CASE WHEN forced THEN ' (forced)' ELSE '' END, run_id, NULL, NULL, id "
                "FROM outbox WHERE request_id = ? "
                "UNION ALL SELECT updated_at, 'outbox', NULL, operation || ': ' || state || "
                "coalesce(' (' || status || ')', '') || "
                "coalesce('; ' || coalesce(resolution, error), ''), run_id, call_id, NULL, id "
                "FROM outbox WHERE request_id = ? AND state != 'pending'",
                (rid, rid),
            ).fetchall()
            # Each response and transcript we sent is a version of our side: numbered in the
            # order sent (a re-issue, a response to a cancellation), like the partner's.
            rows += conn.execute(
                "SELECT sent_at, 'response', NULL, 'response version ' || n || ': ' || "
                "coalesce(response_status, '?') || ', document ' || coalesce(document_id, '?') || "
                "CASE WHEN inferred THEN ' (inferred)' ELSE '' END, NULL, NULL, NULL, outbox_id "
                f"FROM ({_NUMBERED.format(table='responses')}) UNION ALL "
                "SELECT sent_at, 'transcript_sent', NULL, 'transcript sent: version ' || n || "
                "' (' || coalesce(transmission_type, '?') || '), document ' || "
                "coalesce(document_id, '?') || ', awards ' || coalesce(award_count, '?') || "
                "', courses ' || coalesce(course_count, '?') || "
                "CASE WHEN inferred THEN ' (inferred)' ELSE '' END, NULL, NULL, NULL, outbox_id "
                f"FROM ({_NUMBERED.format(table='transcripts_sent')}) UNION ALL "
                "SELECT recorded_at, 'acknowledgment', NULL, 'acknowledgment ' || direction || "
                "': awards ' || coalesce(academic_award_total, '?') || ', courses ' || "
                "coalesce(course_total, '?'), NULL, call_id, NULL, outbox_id "
                "FROM acknowledgments WHERE request_id = ?",
                (rid, rid, rid),
            ).fetchall()
        frame = pd.DataFrame.from_records(rows, columns=TIMELINE_COLUMNS)
        frame = typed(frame, operation="store.timeline", request_id=rid)
        return frame.sort_values("at", kind="stable").reset_index(drop=True)

    def spelling_of(self, typed: str, *, lists: tuple[str, ...] = DETAIL_LISTS) -> str:
        """The store's spelling of ``typed`` when it is a hex GUID pasted with or without
        dashes, in any case (:func:`workbench.ids.resolve_id`), looked up in the calls, the
        documents and ``lists``' tables; else ``typed``."""
        from workbench.http.answers import guid_key, resolve_id

        key = guid_key(typed)
        if key is None:
            return typed
        sources = [("calls", "request_id"), ("documents", "item_id")] + [
            (LISTS[name].table, LISTS[name].id_column) for name in lists
        ]
        union = " UNION ".join(  # our own table and column names only
            f"SELECT {column} FROM {table} WHERE replace(lower({column}), '-', '') = ?"
            for table, column in sources
        )
        with self._c.read() as conn:
            known = [row[0] for row in conn.execute(union, [key] * len(sources)).fetchall()]
        return resolve_id(typed, known)

    def versions(self, item_id: str, *, list_name: str | None = None) -> pd.DataFrame:
        """Every distinct document received for ``item_id``, oldest first: its ``version``,
        ``document_id``, ``transmission_type`` (Original, Reissue, Cancellation ...), when it
        was ``first_seen_at``, the ``call_id`` that brought it and its ``pescxml``.

        >>> store.versions("7c1d0b52...")[["version", "transmission_type"]]  # doctest: +SKIP
        """
        item_id = str(item_id)
        names = [list_name] if list_name else list(DETAIL_LISTS)
        tables = [list_info(name, details=True).table for name in names]
        with self._c.read() as conn:
            frame = query_frame(
                conn,
                f"SELECT {_LIST_OF_ENTITY} AS list_name, d.* FROM documents d "
                "WHERE d.item_id = ? AND d.entity IN (SELECT value FROM json_each(?)) "
                "ORDER BY d.entity, d.version",
                (item_id, json.dumps(tables)),
                operation="store.versions",
                request_id=item_id,
            )
        frame["version"] = frame["version"].astype("Int64")
        return frame

    def sent_versions(self, request_id: str) -> pd.DataFrame:
        """Every response and transcript we sent for ``request_id``, each a ``version`` of its
        kind (1, 2, ... in the order sent: a transcript re-issued, a response to the request's
        cancellation): ``document`` (response or transcript), ``version``, ``sent_at``,
        ``document_id``, ``transmission_type``, ``response_status``, ``inferred`` (settled
        from the lists), ``outbox_id``.

        >>> store.sent_versions("7c1d0b52...")[["document", "version"]]  # doctest: +SKIP
        """
        rid = str(request_id)
        with self._c.read() as conn:
            frame = query_frame(
                conn,
                "SELECT 'response' AS document, n AS version, sent_at, document_id, "
                "NULL AS transmission_type, response_status, inferred, outbox_id "
                f"FROM ({_NUMBERED.format(table='responses')}) UNION ALL "
                "SELECT 'transcript', n, sent_at, document_id, transmission_type, NULL, "
                f"inferred, outbox_id FROM ({_NUMBERED.format(table='transcripts_sent')}) "
                "ORDER BY sent_at, outbox_id",
                (rid, rid),
                operation="store.sent_versions",
                request_id=rid,
            )
        frame["version"] = frame["version"].astype("Int64")
        return frame

    def document(
        self, item_id: str, *, list_name: str | None = None, version: int | None = None
    ) -> str | None:
        """The PESC XML of a request's (or a received transcript's) document, unescaped once:
        its current version, or ``version`` (see :meth:`versions`); None when not stored.

        >>> store.document("7c1d0b52...")  # doctest: +SKIP
        '<?xml version="1.0" ...'
        """
        item_id, version = str(item_id), row_id(version)
        for name in [list_name] if list_name else DETAIL_LISTS:
            info = list_info(name, details=True)
            rows = self._c.rows(
                "SELECT pescxml FROM documents WHERE entity = ? AND item_id = ? AND version = "
                f"coalesce(?, (SELECT current_version FROM {info.table} "
                f"WHERE {info.id_column} = ?))",
                (info.table, item_id, version, item_id),
            )
            if rows and rows[0][0] is not None:
                return str(rows[0][0])
        return None

    def current_documents(
        self, list_name: str, columns: tuple[str, ...] = ("validation",)
    ) -> pd.DataFrame:
        """The current version's ``documents`` row of every item of ``list_name``
        (``supplier_requests`` or ``consumer_transcripts``) that has one: ``item_id`` and
        ``columns`` (e.g. ``pescxml``, ``pesc_json``, ``validation``, ``detail_json``), indexed
        by ``item_id``.

        >>> store.current_documents("supplier_requests")["validation"]  # doctest: +SKIP
        """
        info = list_info(list_name, details=True)
        picked = ", ".join(f"d.{c}" for c in ("item_id", *columns))
        with self._c.read() as conn:
            known = {row[1] for row in conn.execute("PRAGMA table_info(documents)")}
            if unknown := [c for c in columns if c not in known]:
                raise StoreError(
                    f"documents has no column {', '.join(map(repr, unknown))}; it has: "
                    f"{', '.join(sorted(known))}."
                )
            frame = query_frame(
                conn,
                f"SELECT {picked} FROM {info.table} e JOIN documents d ON d.entity = ? "
                f"AND d.item_id = e.{info.id_column} AND d.version = e.current_version",
                (info.table,),
                operation="store.current_documents",
            )
        return frame.set_index("item_id")

    def process_codes(self, item_id: str | None = None) -> dict[str | None, int]:
        """How many stored documents say each DocumentProcessCode (TEST, PRODUCTION; None: none
        stated): every version received, and every document we sent; of ``item_id`` only, when
        given. :func:`workbench.pesc.fields.environment_of` says it in a word.

        >>> environment_of(store.process_codes())  # doctest: +SKIP
        'TEST'
        """
        rows = self._c.rows(
            "SELECT upper(trim(code)), count(*) FROM ("
            "SELECT json_extract(pesc_json, '$.process_code') AS code FROM documents "
            "WHERE ?1 IS NULL OR item_id = ?1 UNION ALL "
            "SELECT json_extract(payload_flat, '$.process_code') FROM outbox "
            "WHERE state = 'sent' AND (?1 IS NULL OR request_id = ?1)) GROUP BY 1",
            (None if item_id is None else str(item_id),),
        )
        return {code or None: int(count) for code, count in rows}

    def holds_sandbox_data(self) -> bool:
        """Whether the store holds the embedded sandbox's data (it records it as its partner)."""
        from workbench.store.identity import is_sandbox_data, read_partner

        with self._c.read() as conn:
            return is_sandbox_data(read_partner(conn))

    def meta(self, key: str) -> str | None:
        """A value of the ``meta`` table (``schema_version``, ``peek_count_learned``...)."""
        rows = self._c.rows("SELECT value FROM meta WHERE key = ?", [key])
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` when the file is sound."""
        rows = self._c.rows("PRAGMA integrity_check")
        return "; ".join(str(r[0]) for r in rows)
