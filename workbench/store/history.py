"""The store's read side, :class:`History`: its append-only records as DataFrames."""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pandas as pd

from workbench.errors import StoreError
from workbench.store.connection import Connection
from workbench.store.frames import events_flat, flattened, typed
from workbench.store.lists import DETAIL_LISTS, LIST_NAMES, LISTS, list_info
from workbench.store.schema import now_text, row_id, utc_text

DIFF_COLUMNS = ["list", "key", "change", "before", "after", "snapshot_a", "snapshot_b"]
TIMELINE_COLUMNS = [
    "at", "kind", "list", "description", "run_id", "call_id", "snapshot_id", "outbox_id",
]  # fmt: skip
_LIST_OF = "CASE d.entity " + " ".join(f"WHEN '{LISTS[n].table}' THEN '{n}'" for n in DETAIL_LISTS)
_LIST_OF += " END"
# A request's sent documents of one table, each with ``n``, its version: 1, 2, ... as sent.
_NUMBERED = (
    "(SELECT *, row_number() OVER (ORDER BY sent_at, outbox_id) AS n FROM {} "
    "WHERE request_id = :id)"
)


def snapshot_items(conn: sqlite3.Connection, snapshot_id: int | None) -> list[tuple[str, str]]:
    return conn.execute(
        "SELECT item_key, item_json FROM snapshot_items WHERE snapshot_id = ? ORDER BY position",
        (snapshot_id,),
    ).fetchall()


def _items_frame(conn: sqlite3.Connection, list_name: str, at: str) -> pd.DataFrame:
    """The list's items in its latest snapshot at or before ``at``, flattened."""
    snapshot_id, taken_at = conn.execute(
        "SELECT id, taken_at FROM snapshots WHERE list_name = ? AND taken_at <= ? "
        "ORDER BY taken_at DESC, id DESC",
        (list_name, at),
    ).fetchone() or (None, None)
    items = snapshot_items(conn, snapshot_id)
    records = [json.loads(text) for _, text in items]
    if LISTS[list_name].source:
        flat = events_flat(records)
    else:
        flat = flattened(records)
        base = ["request_id", "request_date"]
        flat = flat.reindex(columns=[*base, *(c for c in flat.columns if c not in base)])
    flat.insert(0, "item_key", [k for k, _ in items])
    flat["snapshot_id"], flat["taken_at"] = snapshot_id, taken_at
    taken = pd.Timestamp(taken_at) if taken_at else None
    return typed(flat.reset_index(drop=True), operation="store.as_of", snapshot_id=snapshot_id,
                 taken_at=taken)  # fmt: skip


def _run_snapshot(conn: sqlite3.Connection, run_id: int, list_name: str) -> int | None:
    """The list as run ``run_id`` left it: its last snapshot, else the latest before it ended."""
    run = conn.execute("SELECT coalesce(finished_at, started_at) FROM runs WHERE id = ?", (run_id,))
    if (end := run.fetchone()) is None:
        raise StoreError(f"There is no run {run_id} in the store.")
    found = conn.execute(
        "SELECT id FROM snapshots WHERE list_name = ?1 AND (run_id = ?2 OR taken_at <= ?3) "
        "ORDER BY run_id IS ?2 DESC, taken_at DESC, id DESC",
        (list_name, run_id, end[0]),
    ).fetchone()
    return int(found[0]) if found else None


# The timeline of request ``:id``, a SELECT per kind of row (TIMELINE_COLUMNS), in this order
# where times tie.
_TIMELINE = (
    "SELECT started_at, 'call', NULL, operation || ': ' || method || ' ' || url || ' -> ' || "
    "coalesce(status, error, '?'), run_id, id, NULL, NULL FROM calls WHERE request_id = :id",
    # each time it appeared on, or vanished from, a list
    "SELECT * FROM (SELECT taken_at, CASE WHEN listed THEN 'appeared' ELSE 'vanished' END, "
    "list_name, CASE WHEN listed THEN 'appeared on ' ELSE 'vanished from ' END || list_name, "
    "run_id, call_id, id, NULL FROM (SELECT *, lag(listed, 1, 0) OVER (PARTITION BY list_name "
    "ORDER BY taken_at, id) AS was FROM (SELECT s.*, EXISTS (SELECT 1 FROM snapshot_items i "
    "WHERE i.snapshot_id = s.id AND i.item_key = :id) AS listed FROM snapshots s)) "
    "WHERE listed != was ORDER BY taken_at, id)",
    *(
        f"SELECT detail_fetched_at, 'detail', '{n}', 'detail stored' || coalesce('; parse error: "
        f"' || parse_error, ''), NULL, detail_call_id, NULL, NULL FROM {LISTS[n].table} "
        f"WHERE {LISTS[n].id_column} = :id AND detail_fetched_at IS NOT NULL"
        for n in DETAIL_LISTS
    ),
    f"SELECT d.first_seen_at, 'document', {_LIST_OF}, 'version ' || d.version || ' received: ' "
    "|| coalesce(d.transmission_type, '?') || ', document ' || coalesce(d.document_id, '?'), "
    "c.run_id, d.call_id, NULL, NULL FROM documents d LEFT JOIN calls c ON c.id = d.call_id "
    "WHERE d.item_id = :id",
    "SELECT left_at, 'left', list_name, 'left the list: ' || left_reason || CASE left_reason "
    "WHEN 'outbox' THEN ' (a send of ours explains it)' ELSE ' (someone else closed it)' END, "
    "NULL, NULL, snapshot_id, NULL FROM departures WHERE item_id = :id",
    "SELECT failed_at, 'detail_failed', list_name, error, run_id, NULL, NULL, NULL "
    "FROM detail_failures WHERE item_id = :id",
    "SELECT created_at, 'outbox', NULL, operation || ': pending' || CASE WHEN forced THEN "
    "' (forced)' ELSE '' END, run_id, NULL, NULL, id FROM outbox WHERE request_id = :id",
    "SELECT updated_at, 'outbox', NULL, operation || ': ' || state || coalesce(' (' || status "
    "|| ')', '') || coalesce('; ' || coalesce(resolution, error), ''), run_id, call_id, NULL, id "
    "FROM outbox WHERE request_id = :id AND state != 'pending'",
    # what we sent, numbered as sent, like the partner's versions
    "SELECT sent_at, 'response', NULL, 'response version ' || n || ': ' || "
    "coalesce(response_status, '?') || ', document ' || coalesce(document_id, '?') || "
    "CASE WHEN inferred THEN ' (inferred)' ELSE '' END, NULL, NULL, NULL, outbox_id "
    f"FROM {_NUMBERED.format('responses')}",
    "SELECT sent_at, 'transcript_sent', NULL, 'transcript sent: version ' || n || ' (' || "
    "coalesce(transmission_type, '?') || '), document ' || coalesce(document_id, '?') || "
    "', awards ' || coalesce(award_count, '?') || ', courses ' || coalesce(course_count, '?') "
    "|| CASE WHEN inferred THEN ' (inferred)' ELSE '' END, NULL, NULL, NULL, outbox_id "
    f"FROM {_NUMBERED.format('transcripts_sent')}",
    "SELECT recorded_at, 'acknowledgment', NULL, 'acknowledgment ' || direction || ': awards ' "
    "|| coalesce(academic_award_total, '?') || ', courses ' || coalesce(course_total, '?'), "
    "NULL, call_id, NULL, outbox_id FROM acknowledgments WHERE request_id = :id",
)


class History:
    """The read side of the store; a ``Store`` is a ``History`` that also writes."""

    def __init__(self, connection: Connection) -> None:
        self._c = connection

    def _frame(self, sql: str, params: Any = (), **attrs: Any) -> pd.DataFrame:
        with self._c.read() as conn:  # SQLite's errors (a bad ``where``) as StoreError
            cursor = conn.execute(sql, params)
            rows = cursor.fetchall()
        return typed(pd.DataFrame.from_records(rows, columns=[d[0] for d in cursor.description]),
                     **attrs)  # fmt: skip

    def table(self, name: str, *, where: str | None = None, params: Any = ()) -> pd.DataFrame:
        """A table or view: ``store.table("calls", where="status >= ?", params=[400])``."""
        with self._c.read():
            names = [*self._c.db.table_names(), *self._c.db.view_names()]
        known = {n for n in names if not n.startswith("sqlite_")}  # SQLite's own are not ours
        if name not in known:
            raise StoreError(
                f"There is no table or view {name!r} in the store; there are: "
                f"{', '.join(sorted(known))}."
            )
        # numpy scalars (from a DataFrame): sqlite3 would bind them as BLOBs
        plain = [
            p.item() if hasattr(p, "item") and hasattr(p, "dtype") else p for p in params or ()
        ]
        sql = f'SELECT * FROM "{name}"' + (f" WHERE {where}" if where else "")
        return self._frame(sql, plain, operation=f"store.table({name})")

    def as_of(self, when: Any = None) -> dict[str, pd.DataFrame]:
        """What each list showed at ``when``; list -> frame."""
        at = utc_text(when) or now_text()
        with self._c.read() as conn:
            return {name: _items_frame(conn, name, at) for name in LIST_NAMES}

    def diff(self, run_a: int, run_b: int) -> pd.DataFrame:
        """Per list, the items that appeared, vanished or changed between two runs."""
        run_a, run_b = row_id(run_a) or 0, row_id(run_b) or 0
        rows: list[tuple[Any, ...]] = []
        with self._c.read() as conn:
            for name in LIST_NAMES:
                a, b = _run_snapshot(conn, run_a, name), _run_snapshot(conn, run_b, name)
                if a is None or b is None or a == b:
                    continue
                before, after = dict(snapshot_items(conn, a)), dict(snapshot_items(conn, b))
                for key in [*after, *(k for k in before if k not in after)]:
                    old, new = before.get(key), after.get(key)
                    if old != new:
                        change = (
                            "appeared" if old is None else "vanished" if new is None else "changed"
                        )
                        rows.append((name, key, change, old, new, a, b))
        frame = pd.DataFrame.from_records(rows, columns=DIFF_COLUMNS)
        frame[["before", "after"]] = frame[["before", "after"]].astype("string")
        return typed(frame, operation="store.diff", run_a=run_a, run_b=run_b)

    def timeline(self, request_id: str) -> pd.DataFrame:
        """Everything that touched ``request_id`` (calls, lists, documents, sends), in order."""
        rid = str(request_id)
        with self._c.read() as conn:
            rows = conn.execute(" UNION ALL ".join(_TIMELINE), {"id": rid}).fetchall()
        frame = pd.DataFrame.from_records(rows, columns=TIMELINE_COLUMNS)
        frame = typed(frame, operation="store.timeline", request_id=rid)
        return frame.sort_values("at", kind="stable").reset_index(drop=True)

    def known(self, request_id: str) -> str:
        """``request_id`` as the store spells it; ``StoreError`` when it holds nothing about it."""
        rid = self.spelling_of(str(request_id))
        if self.timeline(rid).empty and self.document(rid) is None:
            raise StoreError(
                f"The store at {self._c.path} holds nothing about {rid!r}: no call, list entry, "
                "outbox entry or document. Check the id, or pull first (workbench pull)."
            )
        return rid

    def spelling_of(self, typed: str, *, lists: tuple[str, ...] = DETAIL_LISTS) -> str:
        """The store's spelling of ``typed``, a GUID pasted in any case, with or without dashes."""
        from workbench.http.answers import guid_key, resolve_id

        if (key := guid_key(typed)) is None:
            return typed
        sources = [("calls", "request_id"), ("documents", "item_id")]
        sources += [(LISTS[name].table, LISTS[name].id_column) for name in lists]
        union = " UNION ".join(
            f"SELECT {column} FROM {table} WHERE replace(lower({column}), '-', '') = ?"
            for table, column in sources
        )
        return resolve_id(typed, [row[0] for row in self._c.rows(union, [key] * len(sources))])

    def versions(self, item_id: str, *, list_name: str | None = None) -> pd.DataFrame:
        """Every distinct document received for ``item_id``, oldest first."""
        names = [list_name] if list_name else DETAIL_LISTS
        tables = [list_info(name, details=True).table for name in names]
        frame = self._frame(
            f"SELECT {_LIST_OF} AS list_name, d.* FROM documents d WHERE d.item_id = ? "
            "AND d.entity IN (SELECT value FROM json_each(?)) ORDER BY d.entity, d.version",
            (str(item_id), json.dumps(tables)),
            operation="store.versions",
            request_id=str(item_id),
        )
        frame["version"] = frame["version"].astype("Int64")
        return frame

    def sent_versions(self, request_id: str) -> pd.DataFrame:
        """Every response and transcript we sent for ``request_id``, numbered as sent."""
        rid = str(request_id)
        frame = self._frame(
            "SELECT 'response' AS document, n AS version, sent_at, document_id, "
            "NULL AS transmission_type, response_status, inferred, outbox_id "
            f"FROM {_NUMBERED.format('responses')} UNION ALL "
            "SELECT 'transcript', n, sent_at, document_id, transmission_type, NULL, "
            f"inferred, outbox_id FROM {_NUMBERED.format('transcripts_sent')} "
            "ORDER BY sent_at, outbox_id",
            {"id": rid},
            operation="store.sent_versions",
            request_id=rid,
        )
        frame["version"] = frame["version"].astype("Int64")
        return frame

    def document(
        self, item_id: str, *, list_name: str | None = None, version: int | None = None
    ) -> str | None:
        """The PESC XML of an item's current document (or ``version``); None if not stored."""
        item_id, version = str(item_id), row_id(version)
        for name in [list_name] if list_name else DETAIL_LISTS:
            info = list_info(name, details=True)
            for (xml,) in self._c.rows(
                "SELECT pescxml FROM documents WHERE entity = ? AND item_id = ? AND version = "
                f"coalesce(?, (SELECT current_version FROM {info.table} "
                f"WHERE {info.id_column} = ?)) AND pescxml IS NOT NULL",
                (info.table, item_id, version, item_id),
            ):
                return str(xml)
        return None

    def current_documents(
        self, list_name: str, columns: tuple[str, ...] = ("validation",)
    ) -> pd.DataFrame:
        """``columns`` of each item's current ``documents`` row, indexed by ``item_id``."""
        info = list_info(list_name, details=True)
        return self._frame(
            f"SELECT {', '.join(f'd.{c}' for c in ('item_id', *columns))} FROM {info.table} e "
            f"JOIN documents d ON d.entity = ? AND d.item_id = e.{info.id_column} "
            "AND d.version = e.current_version",
            (info.table,),
            operation="store.current_documents",
        ).set_index("item_id")

    def process_codes(self, item_id: str | None = None) -> dict[str | None, int]:
        """How many documents received and sent say each DocumentProcessCode (of ``item_id``)."""
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
        """Whether the store holds the embedded sandbox's data."""
        from workbench.store.identity import is_sandbox_data, read_partner

        with self._c.read() as conn:
            return is_sandbox_data(read_partner(conn))

    def meta(self, key: str) -> str | None:
        """A value of the ``meta`` table (``schema_version``, ``peek_count_learned``...)."""
        rows = self._c.rows("SELECT value FROM meta WHERE key = ? AND value IS NOT NULL", [key])
        return str(rows[0][0]) if rows else None
