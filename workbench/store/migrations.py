"""Schema versions, in one transaction: what the store lacks of the current schema is added,
the data :data:`STEPS` of the versions it skips run, the views are recreated."""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from functools import partial
from typing import TYPE_CHECKING

from workbench._version import __version__
from workbench.errors import StoreError
from workbench.http.events import event_fields
from workbench.store.lists import DETAIL_LISTS, LISTS
from workbench.store.schema import (
    SCHEMA_VERSION,
    VIEWS,
    create_views,
    fresh,
    now_text,
    sha256,
    utc_text,
)

if TYPE_CHECKING:
    from workbench.store.connection import Connection

ENTITY_IDS = {LISTS[name].table: LISTS[name].id_column for name in DETAIL_LISTS}
INLINE = ("detail_json", "pescxml", "validation", "pesc_json")


def read_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database (0: none)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


class NewerStore(StoreError):
    """The store was written by a later workbench."""


def refuse_newer(found: int, *, path: object) -> None:
    if found > SCHEMA_VERSION:
        raise NewerStore(
            f"{path} has store schema version {found}, newer than this workbench ({__version__}) "
            f"knows (up to {SCHEMA_VERSION}). Upgrade workbench (pip install -U workbench) "
            "or open a copy of the database with the version that wrote it."
        )


def open_schema(c: Connection) -> int:
    """Create or migrate the store of ``c`` (read-only: in a private copy); its version."""
    with c.read() as conn:
        found = read_version(conn)
    refuse_newer(found, path=c.path)
    if found == SCHEMA_VERSION:  # no write lock needed
        return found
    migrate = partial(_migrate, path=c.path)
    if not c.read_only:
        with c.write() as conn:
            migrate(conn)
    elif found == 0:
        raise StoreError(
            f"The database {c.path} holds no workbench store (nothing was ever pulled into "
            "it); run `workbench pull` first, or point at another database."
        )
    else:
        c.read_copy(migrate)
    return SCHEMA_VERSION


def _migrate(conn: sqlite3.Connection, *, path: object) -> None:
    found = read_version(conn)  # again: another process may have migrated it meanwhile
    refuse_newer(found, path=path)
    if found == SCHEMA_VERSION:
        return
    if not found and conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'").fetchone():
        raise StoreError(
            f"{path} is a SQLite database but not a workbench store (it has no meta table); "
            "point WORKBENCH_DB at another file."
        )
    _add_missing(conn)  # a new store: everything
    for step in [step for target, step in STEPS.items() if 0 < found < target]:
        if callable(step):
            step(conn)
        else:
            for statement in step.split(";"):
                conn.execute(statement)
    create_views(conn)
    meta = {"schema_version": str(SCHEMA_VERSION), "migrated_at": now_text(),
            "migrated_by": __version__}  # fmt: skip
    if not found:
        meta.update(created_at=meta["migrated_at"], created_by=__version__)
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())


def _add_missing(conn: sqlite3.Connection) -> None:
    """Add what the store lacks of the current schema; our views (and v2's ``documents``) go."""
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
        if name in VIEWS or name == "documents":
            conn.execute(f"DROP VIEW {name}")
    have = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    with closing(fresh()) as model:
        for kind, name, sql in model.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND type != 'view' "
            "ORDER BY type = 'index', rowid"
        ).fetchall():
            if name not in have:
                conn.execute(sql)
            elif kind == "table":
                info = model.execute(f"PRAGMA table_info({name})").fetchall()
                present = {r[1] for r in conn.execute(f"PRAGMA table_info({name})")}
                keys = model.execute(f"PRAGMA foreign_key_list({name})").fetchall()
                references = {r[3]: f" REFERENCES {r[2]}({r[4]})" for r in keys}
                for _, column, declared, not_null, default, _ in info:
                    if column not in present:
                        conn.execute(
                            f"ALTER TABLE {name} ADD COLUMN {column} {declared}"
                            + (" NOT NULL" if not_null else "")
                            + (f" DEFAULT {default}" if default is not None else "")
                            + references.get(column, "")
                        )


def _v4(conn: sqlite3.Connection) -> None:
    """v4: an entity row's document becomes version 1, its texts move there (or to
    ``document_records``); ``transcripts_sent``. Row by row."""
    from workbench.store.details import pescxml_of, unescaped_once  # they load lxml
    from workbench.store.outbox import record_document

    for table, id_column in ENTITY_IDS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        inline = [c for c in INLINE if c in have]
        text = {c: f"e.{c}" if c in inline else "NULL" for c in INLINE}
        rows = conn.execute(
            f"SELECT e.{id_column}, e.document_id, e.transmission_type, e.request_tracking_id, "
            "e.request_date, e.created_at, coalesce(e.detail_fetched_at, e.first_seen_at), "
            f"e.detail_call_id, {text['pescxml']}, c.response_body, e.parse_error, "
            f"{text['validation']}, {text['pesc_json']} FROM {table} e LEFT JOIN calls c "
            "ON c.id = e.detail_call_id "
            "WHERE e.detail_fetched_at IS NOT NULL AND e.current_version IS NULL"
        )
        for item_id, *fields, own, body, parse_error, validation, pesc_json in rows:
            xml = unescaped_once(own if own is not None or body is None else pescxml_of(body)[0])
            if xml is not None:
                conn.execute(
                    "INSERT INTO documents (entity, item_id, version, document_id, "
                    "transmission_type, request_tracking_id, request_date, created_at, "
                    "first_seen_at, call_id, content_sha256, pescxml, parse_error, validation, "
                    "pesc_json) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (table, item_id, *fields, sha256(xml), xml, parse_error, validation,
                     pesc_json),
                )  # fmt: skip
        conn.execute(
            f"UPDATE {table} SET current_version = 1, version_count = 1, cancelled_at = "
            "CASE WHEN lower(transmission_type) = 'cancellation' THEN coalesce("
            "detail_fetched_at, first_seen_at) END WHERE current_version IS NULL AND EXISTS "
            f"(SELECT 1 FROM documents d WHERE d.entity = ? AND d.item_id = {id_column})",
            (table,),
        )
        conn.execute(
            f"UPDATE documents SET detail_json = {text['detail_json']}, "
            f"validation = coalesce({text['validation']}, documents.validation), "
            f"pesc_json = coalesce({text['pesc_json']}, documents.pesc_json) FROM {table} e "
            f"WHERE documents.entity = ? AND documents.item_id = e.{id_column} "
            "AND documents.version = e.current_version",
            (table,),
        )
        for column, record_type in (("detail_json", "detail"), ("validation", "validation"),
                                    ("pesc_json", "pesc_json")):  # fmt: skip
            if column in inline:  # kept for a row with no document: nothing is lost
                conn.execute(
                    "INSERT OR REPLACE INTO document_records (entity, parent_id, record_type, "
                    f"position, record_json) SELECT ?1, e.{id_column}, ?2, 0, e.{column} "
                    f"FROM {table} e WHERE e.{column} IS NOT NULL AND NOT EXISTS (SELECT 1 "
                    f"FROM documents d WHERE d.entity = ?1 AND d.item_id = e.{id_column} "
                    "AND d.version = e.current_version)",
                    (table, record_type),
                )
        for column in inline:  # DROP COLUMN keeps the table; a rebuild would cascade-delete
            try:  # its child rows inside this transaction
                conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            except sqlite3.OperationalError as exc:  # a user's view, trigger or index reads it
                raise StoreError(
                    f"Store schema version 4 moves {table}.{column} to the documents table "
                    f"(docs/data-dictionary.md), but SQLite {sqlite3.sqlite_version} cannot drop "
                    f"it: {exc}. Drop that view, trigger or index of yours (or rewrite it to read "
                    "documents), or use SQLite 3.35 or later, then open the store again. The "
                    "store was left as it was."
                ) from exc
    sent = conn.execute(
        "SELECT id, operation, request_id, payload, payload_flat, updated_at, resolved_at "
        "FROM outbox WHERE operation = 'send_transcript' AND state = 'sent' ORDER BY id"
    )
    sent.row_factory = sqlite3.Row
    for entry in map(dict, sent):
        inferred = entry["resolved_at"] is not None and entry["resolved_at"] == entry["updated_at"]
        record_document(conn, entry, at=entry["updated_at"], inferred=inferred, reply=None)


def _v5(conn: sqlite3.Connection) -> None:
    """v5: an event's type and time read again (keys stay: snapshots name events by them)."""
    last = 0  # in batches, never updating the table a cursor is stepping through
    while rows := conn.execute(
        "SELECT rowid, raw_json, first_seen_at FROM events WHERE rowid > ? ORDER BY rowid "
        "LIMIT 1000",
        (last,),
    ).fetchall():
        last, changes = rows[-1][0], []
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


# The data step of each version (v6 and v7 changed only views).
STEPS: dict[int, str | Callable[[sqlite3.Connection], None]] = {
    2: ";".join(  # v1 kept only an entity's last departure: it becomes the first of its list
        f"UPDATE {i.table} SET on_list = (left_at IS NULL); INSERT INTO departures (list_name, "
        f"item_id, left_at, left_reason) SELECT '{i.name}', {i.id_column}, left_at, "
        f"coalesce(left_reason, '?') FROM {i.table} WHERE left_at IS NOT NULL"
        for i in map(LISTS.__getitem__, DETAIL_LISTS)
    ),
    3: ";".join(f"UPDATE {t} SET detail_request_date = request_date" for t in ENTITY_IDS),
    4: _v4,
    5: _v5,
}
