"""Schema versions: create a fresh database, or migrate an older one in place.

A fresh database gets :data:`~workbench.store.schema.CURRENT` in one transaction. An older one
is brought up to date, when it is opened, by the ordered :data:`MIGRATIONS` (all of them in the
caller's one transaction, so a failure leaves the old version intact). A database newer than
this code is refused with advice. Views are recreated by every migration (they hold no data).
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from workbench.errors import StoreError
from workbench.store.cells import now_text, pescxml_of, sha256, unescaped_once
from workbench.store.schema import (
    CHILDREN,
    CURRENT,
    DOCUMENTS,
    OPERATIONS,
    REQUEST_FIELDS,
    SCHEMA_VERSION,
    SENT,
    TRANSCRIPT_FIELDS,
    column_type,
    statements,
)
from workbench.store.views import VIEWS

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
        found = conn.execute(
            f"SELECT e.{id_column}, e.document_id, e.transmission_type, e.request_tracking_id, "
            "e.request_date, e.created_at, coalesce(e.detail_fetched_at, e.first_seen_at), "
            "e.detail_call_id, e.pescxml, c.response_body, e.parse_error, e.validation, "
            f"e.pesc_json FROM {table} e LEFT JOIN calls c ON c.id = e.detail_call_id "
            "WHERE e.detail_fetched_at IS NOT NULL"
        ).fetchall()
        rows = []
        for item_id, *fields, own, body, parse_error, validation, pesc_json in found:
            xml = unescaped_once(own if own is not None or body is None else pescxml_of(body)[0])
            if xml is not None:
                rows.append((table, item_id, *fields, sha256(xml), xml, parse_error, validation,
                             pesc_json))  # fmt: skip
        conn.executemany(
            "INSERT INTO documents (entity, item_id, version, document_id, transmission_type, "
            "request_tracking_id, request_date, created_at, first_seen_at, call_id, "
            "content_sha256, pescxml, parse_error, validation, pesc_json) "
            "VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute(
            f"UPDATE {table} SET current_version = 1, version_count = 1, cancelled_at = "
            "CASE WHEN lower(transmission_type) = 'cancellation' THEN coalesce("
            "detail_fetched_at, first_seen_at) END WHERE EXISTS (SELECT 1 FROM documents d "
            f"WHERE d.entity = ? AND d.item_id = {id_column})",
            (table,),
        )


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {2: _v1_to_v2, 3: _v2_to_v3}


def read_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database: 0 when it has no ``meta`` table yet."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not found:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def ensure_schema(conn: sqlite3.Connection, *, path: str, version: str) -> int:
    """Create or migrate the schema (inside the caller's write transaction); the new version."""
    found = read_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema version {found}, newer than this workbench ({version}) "
            f"knows (up to {SCHEMA_VERSION}). Upgrade workbench (pip install -U workbench) "
            "or open a copy of the database with the version that wrote it."
        )
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
