"""Schema versions: create a fresh database, or migrate an older one in place.

A fresh database gets :data:`~workbench.store.schema.CURRENT` in one transaction. An older one
is brought up to date, when it is opened, by the ordered :data:`MIGRATIONS` (all of them in the
caller's one transaction, so a failure leaves the old version intact). A database newer than
this code is refused with advice. Views are recreated by every migration (they hold no data).
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable

from workbench.errors import StoreError
from workbench.http.events import event_fields
from workbench.store.cells import now_text, pescxml_of, sha256, unescaped_once, utc_text
from workbench.store.schema import (
    CHILDREN,
    CURRENT,
    DOCUMENTS,
    OPERATIONS,
    REQUEST_FIELDS,
    SCHEMA_VERSION,
    SENT,
    TRANSCRIPT_FIELDS,
    TRANSCRIPTS_SENT,
    column_type,
    statements,
)
from workbench.store.settle import file_transcript_sent
from workbench.store.views import VIEWS

ENTITY_IDS = {"transcript_requests": "request_id", "transcripts_received": "transcript_id"}

# The v1 entity tables had these PESC columns; v2 added the rest of REQUEST/TRANSCRIPT_FIELDS.
V1_FIELDS = (
    "message_type", "version", "document_id", "created_at", "request_tracking_id",
    "student_first_name", "student_last_name", "student_birth_date",
)  # fmt: skip


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """v2: list bookkeeping (on_list, left_reason), failures, PESC columns, sent documents."""
    for table, fields in (
        ("transcript_requests", REQUEST_FIELDS),
        ("transcripts_received", TRANSCRIPT_FIELDS),
    ):
        added = [
            "on_list INTEGER NOT NULL DEFAULT 0",
            "left_reason TEXT",
            "detail_failed_at TEXT",
            "detail_error TEXT",
            "detail_json TEXT",
            "parse_error TEXT",
            "validation TEXT",
        ]
        added += [f"{f} {column_type(f)}" for f in fields if f not in V1_FIELDS]
        for column in added:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        conn.execute(f"UPDATE {table} SET on_list = (left_at IS NULL)")
        conn.execute(f"CREATE INDEX {table}_on_list ON {table}(on_list, request_date)")
        conn.execute(f"CREATE INDEX {table}_tracking ON {table}(request_tracking_id)")
    more: dict[str, tuple[str, ...]] = {
        "snapshots": (
            "previous_id INTEGER REFERENCES snapshots(id)",
            "appeared INTEGER",
            "vanished INTEGER",
            "changed INTEGER",
        ),
        "events": ("on_list INTEGER NOT NULL DEFAULT 0", "left_at TEXT", "left_reason TEXT"),
        "outbox": ("pid INTEGER", "host TEXT", "resolution TEXT", "resolved_at TEXT"),
    }
    for table, columns in more.items():
        for column in columns:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    conn.execute("CREATE INDEX events_type ON events(source, event_type, occurred_at)")
    conn.execute("CREATE INDEX outbox_state ON outbox(state)")
    for statement in statements(CHILDREN + SENT + OPERATIONS):
        conn.execute(statement)


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """v3: ``documents`` (every version of a document), each entity's stored document as its
    version 1, and the entity's version columns."""
    conn.execute("DROP VIEW IF EXISTS documents")  # v2's view of the same name: now a table
    for statement in statements(DOCUMENTS):
        conn.execute(statement)
    for table, id_column in (
        ("transcript_requests", "request_id"),
        ("transcripts_received", "transcript_id"),
    ):
        for column in (
            "current_version INTEGER",
            "version_count INTEGER",
            "cancelled_at TEXT",
            "detail_request_date TEXT",
        ):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        conn.execute(f"UPDATE {table} SET detail_request_date = request_date")
        _first_versions(conn, table, id_column)


def _first_versions(conn: sqlite3.Connection, table: str, id_column: str) -> None:
    """The XML an entity row holds inline (or its detail call's body does), as its version 1
    in ``documents``, for the rows with no version yet (v2 and v3 rows)."""
    found = conn.execute(  # read row by row: a large store is never held in memory at once
        f"SELECT e.{id_column}, e.document_id, e.transmission_type, e.request_tracking_id, "
        "e.request_date, e.created_at, coalesce(e.detail_fetched_at, e.first_seen_at), "
        "e.detail_call_id, e.pescxml, c.response_body, e.parse_error, e.validation, "
        f"e.pesc_json FROM {table} e LEFT JOIN calls c ON c.id = e.detail_call_id "
        "WHERE e.detail_fetched_at IS NOT NULL AND e.current_version IS NULL"
    )
    for item_id, *fields, own, body, parse_error, validation, pesc_json in found:
        xml = unescaped_once(own if own is not None or body is None else pescxml_of(body)[0])
        if xml is not None:
            conn.execute(
                "INSERT INTO documents (entity, item_id, version, document_id, "
                "transmission_type, request_tracking_id, request_date, created_at, "
                "first_seen_at, call_id, content_sha256, pescxml, parse_error, validation, "
                "pesc_json) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (table, item_id, *fields, sha256(xml), xml, parse_error, validation, pesc_json),
            )
    conn.execute(
        f"UPDATE {table} SET current_version = 1, version_count = 1, cancelled_at = "
        "CASE WHEN lower(transmission_type) = 'cancellation' THEN coalesce("
        "detail_fetched_at, first_seen_at) END WHERE current_version IS NULL AND EXISTS "
        f"(SELECT 1 FROM documents d WHERE d.entity = ? AND d.item_id = {id_column})",
        (table,),
    )


# v3 entity columns that v4 moves to the current documents row (pescxml: already there), and
# the document_records type that keeps them for a row with no document (nothing is lost).
_MOVED = {"detail_json": "detail", "validation": "validation", "pesc_json": "pesc_json"}


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    """v4: narrow entity tables, whose inline texts move to their current ``documents`` row
    (``detail_json`` is new there), and ``transcripts_sent``, filled from the outbox."""
    if sqlite3.sqlite_version_info < (3, 35, 0):
        raise StoreError(
            f"Migrating this store to schema version 4 needs SQLite 3.35 or later (ALTER TABLE "
            f"DROP COLUMN); this Python has SQLite {sqlite3.sqlite_version}. Use a Python built "
            "with a newer SQLite; the store was left as it was."
        )
    for name in VIEWS:  # recreated afterwards; none may name a column being dropped
        conn.execute(f"DROP VIEW IF EXISTS {name}")
    if "detail_json" not in {row[1] for row in conn.execute("PRAGMA table_info(documents)")}:
        conn.execute("ALTER TABLE documents ADD COLUMN detail_json TEXT")
    for table, id_column in ENTITY_IDS.items():
        _first_versions(conn, table, id_column)  # XML held inline with no version yet
        conn.execute(
            "UPDATE documents SET detail_json = e.detail_json, "
            "validation = coalesce(e.validation, documents.validation), "
            f"pesc_json = coalesce(e.pesc_json, documents.pesc_json) FROM {table} e "
            f"WHERE documents.entity = ? AND documents.item_id = e.{id_column} "
            "AND documents.version = e.current_version",
            (table,),
        )
        for column, record_type in _MOVED.items():
            conn.execute(
                "INSERT OR REPLACE INTO document_records (entity, parent_id, record_type, "
                f"position, record_json) SELECT ?1, e.{id_column}, ?2, 0, e.{column} "
                f"FROM {table} e WHERE e.{column} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
                f"documents d WHERE d.entity = ?1 AND d.item_id = e.{id_column} "
                "AND d.version = e.current_version)",
                (table, record_type),
            )
        # Native DROP COLUMN keeps the table, its indexes and the foreign keys that point at
        # it; sqlite-utils' transform() rebuilds the table, which inside this transaction would
        # fire ON DELETE CASCADE on courses and awards (it refuses to).
        for column in ("detail_json", "pescxml", "validation", "pesc_json"):
            _drop_column(conn, table, column)
    for statement in statements(TRANSCRIPTS_SENT):
        conn.execute(statement)
    cursor = conn.execute(
        "SELECT id, request_id, payload, payload_flat, updated_at, resolved_at FROM outbox "
        "WHERE operation = 'send_transcript' AND state = 'sent' ORDER BY id"
    )
    columns = [d[0] for d in cursor.description]
    for row in cursor:  # one entry at a time (a large outbox is never held in memory)
        entry = dict(zip(columns, row, strict=True))
        # Settled from the lists: resolved_at = updated_at; a later answer moved updated_at.
        inferred = entry["resolved_at"] is not None and entry["resolved_at"] == entry["updated_at"]
        file_transcript_sent(conn, entry, at=entry["updated_at"], inferred=inferred)


def _v4_to_v5(conn: sqlite3.Connection) -> None:
    """v5: ``events.time_is_first_seen``; every event's type and time read again from its
    JSON wherever it keeps them (they were read under a few names only), one without a readable
    time placed at when it was first seen. Keys and ids stay: snapshots name events by them."""
    conn.execute("ALTER TABLE events ADD COLUMN time_is_first_seen INTEGER NOT NULL DEFAULT 0")
    last = 0
    while rows := conn.execute(  # a thousand at a time: a large store never held in memory
        "SELECT rowid, raw_json, first_seen_at FROM events WHERE rowid > ? ORDER BY rowid "
        "LIMIT 1000",
        (last,),
    ).fetchall():
        last = rows[-1][0]
        changes = []
        for rowid, raw, first_seen in rows:
            try:
                found = event_fields(json.loads(raw))
            except (ValueError, RecursionError):  # not JSON (edited by hand): it says nothing
                found = event_fields(None)
            own = utc_text(found.time)
            changes.append((found.type, own or first_seen, int(own is None), rowid))
        conn.executemany(
            "UPDATE events SET event_type = ?, occurred_at = ?, time_is_first_seen = ? "
            "WHERE rowid = ?",
            changes,
        )


# SQLite's message when an object of the user's (not the workbench's) reads a dropped column.
_IN_THE_WAY = re.compile(r"error in (view|trigger|index) (\S+) after drop column")


def _drop_column(conn: sqlite3.Connection, table: str, column: str) -> None:
    """``ALTER TABLE table DROP COLUMN column``. An index of the user's on it is dropped (it
    holds no data); a view or trigger of the user's that reads it is refused with advice, which
    rolls the whole migration back (the caller's one transaction)."""
    while True:
        try:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            return
        except sqlite3.OperationalError as exc:
            found = _IN_THE_WAY.search(str(exc))
            if found is None:
                raise
            kind, name = found[1], found[2].strip('"`[]')
            if kind != "index":
                raise StoreError(
                    f"The {kind} {name!r} in this store (not the workbench's) reads "
                    f"{table}.{column}, which store schema version 4 moves to the documents "
                    f"table (one row per version; see docs/data-dictionary.md). Drop it (DROP "
                    f"{kind.upper()} {name}; in the sqlite3 shell) or rewrite it to read "
                    "documents, then open the store again. The store was left as it was."
                ) from exc
            conn.execute(f'DROP INDEX "{name}"')  # an index of a column that is going away


def _v5_to_v6(conn: sqlite3.Connection) -> None:
    """v6: no table changes; the views (recreated after every migration) give "open" the
    lifecycle's meaning, and ``answered_still_listed`` is new (:mod:`workbench.store.views`)."""


def _v6_to_v7(conn: sqlite3.Connection) -> None:
    """v7: no table changes; the views measure an age from a plausible date only
    (:mod:`workbench.store.views`), so a year-1 RequestDate is not 739,000 days old."""


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    2: _v1_to_v2,
    3: _v2_to_v3,
    4: _v3_to_v4,
    5: _v4_to_v5,
    6: _v5_to_v6,
    7: _v6_to_v7,
}


def read_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database: 0 when it has no ``meta`` table yet."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not found:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


class NewerStore(StoreError):
    """The store was written by a later workbench: this one can neither read nor migrate it."""


def refuse_newer(found: int, *, path: str, version: str) -> None:
    """:class:`NewerStore` when schema version ``found`` is newer than this code knows (a store
    written by a later workbench: migrating or reading it would go wrong)."""
    if found > SCHEMA_VERSION:
        raise NewerStore(
            f"{path} has store schema version {found}, newer than this workbench ({version}) "
            f"knows (up to {SCHEMA_VERSION}). Upgrade workbench (pip install -U workbench) "
            "or open a copy of the database with the version that wrote it."
        )


def ensure_schema(conn: sqlite3.Connection, *, path: str, version: str) -> int:
    """Create or migrate the schema (inside the caller's write transaction); the new version."""
    found = read_version(conn)
    refuse_newer(found, path=path, version=version)
    if found == SCHEMA_VERSION:
        return found
    if found == 0:
        tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'")
        if tables.fetchone()[0]:
            raise StoreError(
                f"{path} is a SQLite database but not a workbench store (it has no meta "
                "table); point WORKBENCH_DB at another file."
            )
        for statement in statements(CURRENT):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('created_at', ?), ('created_by', ?)",
            (now_text(), version),
        )
    else:
        for target in range(found + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[target](conn)
    for name in VIEWS:
        conn.execute(f"DROP VIEW IF EXISTS {name}")
    for name, sql in VIEWS.items():
        conn.execute(f"CREATE VIEW {name} AS {sql}")
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('migrated_at', ?), "
        "('migrated_by', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (str(SCHEMA_VERSION), now_text(), version),
    )
    return SCHEMA_VERSION
