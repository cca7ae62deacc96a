"""Details: a request's or a transcript's detail, its parsed PESC fields and child records.

A pull stores thousands of these, from several threads, so the work is split in two:
:func:`prepare_detail` scrubs and lays out the rows before any lock is taken, and
:func:`write_detail` only runs the SQL, inside the caller's transaction. Preparing is built for
the common case, a document with nothing to mask: one scan of every text the detail will write
proves it clean. Child rows go in through sqlite-utils, which adds the columns a table lacks.

When something is to be masked, values are masked one by one before they become JSON or rows
(:meth:`Redactor.data`), never the JSON text itself (a secret ``true`` would break its syntax),
and never the ids: an item id is the key its child rows link to, and a secret that happens to
occur inside it (``2024-0001`` in ``R-2024-0001``) must not cut that link.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

from workbench.http.masking import Redactor
from workbench.store.cells import (
    dumps,
    now_text,
    partner_time,
    pescxml_of,
    scalar,
    sha256,
    unescaped_once,
    utc_text,
)
from workbench.store.connection import Connection
from workbench.store.lists import ListInfo
from workbench.store.schema import CHILD_TABLES, REQUEST_FIELDS, TRANSCRIPT_FIELDS

FLAT_FIELDS = {"transcript_requests": REQUEST_FIELDS, "transcripts_received": TRANSCRIPT_FIELDS}
_COLUMN_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_RESERVED = frozenset({"position", "extra_json", "request_id", "transcript_id", "rowid"})
# Types SQLite binds as they are. A row set is checked against it at once, and only a set holding
# something else goes through scalar() value by value (a parsed document holds plain values:
# scalar() on each of them was most of bench/store_write.py's regression in issue #12).
_SQL_TYPES = frozenset({str, int, float, bool, type(None)})
# dumps() for child records: plain data from a parsed document, with no cycles to guard against.
_RECORD = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str, check_circular=False)
# The child records as one text for the scan: every key and value, in no particular order.
_SCAN = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)
_OWN_TABLES = {
    parent: tuple(name for name, (owner, _) in CHILD_TABLES.items() if owner == parent)
    for parent in FLAT_FIELDS
}
# A document already kept for the id (same content) keeps its version, first sighting and call,
# and takes the fetch's detail item, parse error and fields, and its validation when it made one
# (a fetch without schemas does not undo a validation of the same content): one statement.
_DOCUMENT_SQL = (
    "INSERT INTO documents (entity, item_id, version, document_id, transmission_type, "
    "request_tracking_id, request_date, created_at, first_seen_at, call_id, content_sha256, "
    "pescxml, parse_error, validation, pesc_json, detail_json) "
    "SELECT ?1, ?2, coalesce(max(version), 0) + 1, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
    "?13, ?14, ?15 FROM documents WHERE entity = ?1 AND item_id = ?2 "
    "ON CONFLICT (entity, item_id, content_sha256) DO UPDATE SET "
    "parse_error = excluded.parse_error, "
    "validation = coalesce(excluded.validation, documents.validation), "
    "pesc_json = excluded.pesc_json, detail_json = excluded.detail_json"
)
# Texts a detail keeps in its documents row, not in the entity row (which stays narrow).
_DOCUMENT_TEXTS = ("detail_json", "validation", "pesc_json")


@dataclass(frozen=True, slots=True)
class ChildRows:
    """Rows of one child table, ready to insert: ``columns`` name the values of each row."""

    table: str
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class PreparedDetail:
    """One detail upsert, scrubbed and laid out as SQL (built before the write lock is taken)."""

    table: str
    id_column: str
    item_id: str
    sql: str
    params: list[Any]
    kids: list[ChildRows] | None
    document: tuple[Any, ...] | None = None  # its documents row (_DOCUMENT_SQL's parameters)
    content_sha256: str | None = None  # of that document's pescxml
    listed_date: str | None = None  # the RequestDate listed when it was fetched
    seen_at: str | None = None
    # Statements run after the row: the current document amended (validation or fields given
    # without a detail), or a detail item without a document kept in document_records.
    after: tuple[tuple[str, tuple[Any, ...]], ...] = ()


def prepare_detail(
    scrub: Redactor,
    info: ListInfo,
    item_id: str,
    *,
    request_date: Any = None,
    seen_at: Any = None,
    detail: Any = None,
    flat: Mapping[str, Any] | None = None,
    children: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
    call_id: int | None = None,
    parse_error: Any = None,
    validation: Any = None,
    listed_date: Any = None,
    pescxml: str | None = None,
) -> PreparedDetail:
    """Scrubbing, JSON and rows of one detail upsert; :func:`write_detail` writes it.

    Every distinct document goes to ``documents`` (unescaped once: ``pescxml`` when the caller
    parsed it, else the detail's as sent) with the detail item without its XML, the validation
    and the flattened fields; the entity row keeps the fields of the current version. Given
    without a detail, ``validation`` and ``flat`` amend the current document. A detail with no
    XML keeps its item in ``document_records`` (record type ``detail``). ``listed_date``: the
    RequestDate the list showed (default ``request_date``); a later pull fetches the detail
    again when it changes.
    """
    table, id_column = info.table, info.id_column
    seen = utc_text(seen_at) if seen_at is not None else now_text()
    values: dict[str, Any] = {id_column: str(item_id), "first_seen_at": seen, "last_seen_at": seen}
    if request_date is not None:
        values["request_date"] = partner_time(request_date)
    document_xml = None
    # Every text the row will hold, scanned at once below: clean (the usual case) means kept.
    texts: dict[str, str | None] = {}
    decoded: dict[str, Any] = {}  # what the JSON texts were made from, masked value by value
    if detail is not None:
        xml, rest = pescxml_of(detail)
        texts["detail_json"] = dumps(rest) if rest is not None else None
        decoded["detail_json"] = rest
        document_xml = scrub.document(pescxml if pescxml is not None else unescaped_once(xml))
        values.update(detail_fetched_at=seen, detail_call_id=call_id, detail_failed_at=None,
                      detail_error=None, detail_request_date=partner_time(
                          listed_date if listed_date is not None else request_date))  # fmt: skip
    if detail is not None or parse_error is not None:
        texts["parse_error"] = None if parse_error is None else str(parse_error)
    if detail is not None or validation is not None:
        texts["validation"] = None if validation is None else dumps(validation)
        decoded["validation"] = validation
    if flat is not None:
        texts["pesc_json"] = dumps(flat)
        decoded["pesc_json"] = flat
    plain = None
    if children is not None:
        plain = {
            str(name): [r if type(r) is dict else dict(r) for r in rows]
            for name, rows in children.items()
        }
    fields = FLAT_FIELDS[table]
    found = _flat_values(flat, fields) if flat is not None else []
    scanned = _scanned(texts, found, plain)
    if scrub.document(scanned) == scanned:  # the usual case: no token of ours echoed
        values.update(texts)
    else:
        for name, text in texts.items():
            if text is not None and name in decoded:
                decoded[name] = _documented(scrub, decoded[name])
                values[name] = dumps(decoded[name])
            else:
                values[name] = scrub.document(text)
        if flat is not None:
            found = _flat_values(decoded["pesc_json"], fields)
        if plain:
            plain = {name: _documented(scrub, records) for name, records in plain.items()}
    # The item id is a key (child rows and document_records link to it): never masked.
    kids = _children(table, id_column, str(item_id), plain) if plain is not None else None
    if flat is not None:
        values.update(zip(fields, found, strict=True))
    elif detail is not None:  # a new document whose fields are unknown: drop the old ones
        values.update(dict.fromkeys(fields))
    kept = {name: values.pop(name) for name in _DOCUMENT_TEXTS if name in values}
    sql = _upsert_sql(table, id_column, tuple(values))
    document = digest = None
    after: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    if document_xml is not None:
        digest = sha256(document_xml)
        document = (
            table, str(item_id), values.get("document_id"), _transmission_type(values, plain),
            values.get("request_tracking_id"), values.get("detail_request_date"),
            values.get("created_at"), seen, call_id, digest, document_xml,
            values.get("parse_error"), kept.get("validation"), kept.get("pesc_json"),
            kept.get("detail_json"),
        )  # fmt: skip
        if kids is None:  # no child rows to replace (they clear document_records): its item
            after = _detail_record(table, str(item_id), None)  # is the document's now
    elif detail is not None:
        after = _detail_record(table, str(item_id), kept.get("detail_json"))
    elif kept:
        after = ((_amend_sql(table, id_column), (table, str(item_id), kept.get("validation"),
                                                 kept.get("pesc_json"))),)  # fmt: skip
    return PreparedDetail(
        table, id_column, str(item_id), sql, list(values.values()), kids, document, digest,
        values.get("detail_request_date"), seen, after,
    )  # fmt: skip


def write_detail(c: Connection, conn: sqlite3.Connection, prepared: PreparedDetail) -> None:
    """Write one prepared detail inside the caller's write transaction; a re-fetched document
    replaces its child records. A document kept as an earlier version than the current one
    changes nothing but its fetch (see :func:`_served_older`)."""
    if prepared.document is not None and _served_older(conn, prepared):
        return
    conn.execute(prepared.sql, prepared.params)
    if prepared.document is not None:
        conn.execute(_DOCUMENT_SQL, prepared.document)
        conn.execute(
            _current_sql(prepared.table, prepared.id_column),
            (prepared.table, prepared.item_id, prepared.content_sha256),
        )
    for statement, params in prepared.after:
        conn.execute(statement, params)
    if prepared.kids is None:
        return
    parent_id = (prepared.item_id,)
    for name in _OWN_TABLES[prepared.table]:
        conn.execute(f"DELETE FROM {name} WHERE {prepared.id_column} = ?", parent_id)
    conn.execute(
        "DELETE FROM document_records WHERE entity = ? AND parent_id = ?",
        (prepared.table, prepared.item_id),
    )
    for part in prepared.kids:
        _insert(c, conn, part)


def _insert(c: Connection, conn: sqlite3.Connection, part: ChildRows) -> None:
    """Insert child rows; a field the table lacks becomes a column, typed by sqlite-utils.

    This is ``Table.insert_all(alter=True)`` (insert, and on "no such column" add the missing
    columns and insert again) without its savepoint, table lookup and per-value conversion on
    every call: with them, bench/store_write.py's first pull took twice as long.
    """
    columns = ", ".join(part.columns)
    sql = f"INSERT INTO {part.table} ({columns}) VALUES ({', '.join('?' * len(part.columns))})"
    try:
        conn.executemany(sql, part.rows)
    except sqlite3.OperationalError as exc:
        if "has no column named" not in str(exc):
            raise
        c.db.table(part.table).add_missing_columns(
            dict(zip(part.columns, r, strict=True)) for r in part.rows
        )
        conn.executemany(sql, part.rows)


def _served_older(conn: sqlite3.Connection, prepared: PreparedDetail) -> bool:
    """Whether the document is one already kept as an earlier version than the current one
    (a partner answering from a lagging copy): if so, record only the fetch.

    The current version is the latest received: an older one coming back is nothing new, so
    neither the row, its child records nor ``documents`` change. ``detail_error`` says what
    happened, and the detail is fetched once more by the next pull (a failed fetch, for the
    listed RequestDate); served again for that date, it is not fetched again until the list
    shows another RequestDate.
    """
    table, id_column = prepared.table, prepared.id_column
    found = conn.execute(
        f"SELECT d.version, e.current_version, e.detail_request_date IS ?3 "
        "AND e.detail_failed_at > e.detail_fetched_at FROM documents d "
        f"JOIN {table} e ON e.{id_column} = d.item_id WHERE d.entity = ?1 AND d.item_id = ?2 "
        "AND d.content_sha256 = ?4 AND d.version < e.current_version",
        (table, prepared.item_id, prepared.listed_date, prepared.content_sha256),
    ).fetchone()
    if found is None:
        return False
    version, current, retried = found
    then = (
        "it is not fetched again until its RequestDate changes"
        if retried
        else "the next pull fetches it again"
    )
    note = (
        f"the partner answered with version {version} again, older than the current version "
        f"{current}, which is kept; {then}"
    )
    fetched = "detail_fetched_at" if retried else "detail_failed_at"
    conn.execute(
        f"UPDATE {table} SET last_seen_at = max(last_seen_at, ?1), {fetched} = ?1, "
        f"detail_request_date = ?2, detail_error = ?3 WHERE {id_column} = ?4",
        (prepared.seen_at, prepared.listed_date, note, prepared.item_id),
    )
    return True


def _current_sql(table: str, id_column: str) -> str:
    """The entity row's version columns (parameters: entity, item id, content sha256): the
    current version is the document just received, new or seen before; a Cancellation closes
    the item from when it was first seen."""
    return (
        f"UPDATE {table} SET (current_version, version_count, cancelled_at) = ("
        "SELECT d.version, (SELECT count(*) FROM documents n WHERE n.entity = ?1 "
        "AND n.item_id = ?2), CASE WHEN lower(d.transmission_type) = 'cancellation' "
        "THEN d.first_seen_at END FROM documents d WHERE d.entity = ?1 AND d.item_id = ?2 "
        f"AND d.content_sha256 = ?3) WHERE {id_column} = ?2"
    )


def _amend_sql(table: str, id_column: str) -> str:
    """Validation and flattened fields given without a detail, on the current document
    (parameters: entity, item id, validation, pesc_json; None keeps what it has)."""
    return (
        "UPDATE documents SET validation = coalesce(?3, validation), pesc_json = "
        "coalesce(?4, pesc_json) WHERE entity = ?1 AND item_id = ?2 AND version = "
        f"(SELECT current_version FROM {table} WHERE {id_column} = ?2)"
    )


def _detail_record(
    table: str, item_id: str, detail_json: str | None
) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """A detail item that held no document: kept as the item's ``document_records`` row of
    type ``detail`` (replacing an earlier one), as there is no ``documents`` row to hold it."""
    key = (table, item_id)
    drop = (
        "DELETE FROM document_records WHERE entity = ? AND parent_id = ? AND record_type = 'detail'"
    )
    if detail_json is None:
        return ((drop, key),)
    keep = (
        "INSERT INTO document_records (entity, parent_id, record_type, position, record_json) "
        "VALUES (?, ?, 'detail', 0, ?)"
    )
    return ((drop, key), (keep, (*key, detail_json)))


def _upsert_sql(table: str, id_column: str, columns: tuple[str, ...]) -> str:
    updates = ", ".join(
        f"{col} = min({col}, excluded.{col})"
        if col == "first_seen_at"
        else f"{col} = max({col}, excluded.{col})"
        if col == "last_seen_at"
        else f"{col} = excluded.{col}"
        for col in columns[1:]
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT({id_column}) DO UPDATE SET {updates}"
    )


def _transmission_type(
    values: Mapping[str, Any], children: Mapping[str, list[dict[str, Any]]] | None
) -> Any:
    """A version's ``transmission_type``: the document's TransmissionType, except that a
    cancellation is ``Cancellation`` however the document says it. PESC's TransmissionType has
    no Cancellation, so it may also come as DocumentTypeCode ``Cancel`` (CoreMain 1.14), or as
    ``MutuallyDefined`` with a TransmissionData NoteMessage ``Cancellation`` (the sandbox)."""
    kind = values.get("transmission_type")
    if str(values.get("document_type_code") or "").lower() == "cancel":
        return "Cancellation"
    if str(kind or "").lower() == "mutuallydefined" and any(
        str(note.get("note") or "").strip().lower() == "cancellation"
        and "transmissiondata" in str(note.get("context") or "").lower()
        for note in (children or {}).get("notes", ())
    ):
        return "Cancellation"
    return kind


def _flat_values(flat: Mapping[str, Any], fields: tuple[str, ...]) -> list[Any]:
    """The values of the flat PESC fields kept as columns, as SQLite takes them."""
    return _for_sql(list(map(flat.get, fields)))


def _for_sql(values: list[Any]) -> list[Any]:
    """``values`` as SQLite takes them: as they are when it takes them all (the usual case),
    else each one it does not take through :func:`scalar`."""
    if _SQL_TYPES.issuperset(map(type, values)):
        return values
    return [v if type(v) in _SQL_TYPES else scalar(v) for v in values]


def _scanned(
    texts: Mapping[str, str | None],
    found: list[Any],
    children: Mapping[str, list[dict[str, Any]]] | None,
) -> str:
    """Everything a detail writes as text, in one string for one scan: the JSON and error
    texts, the flat field values, and the child records' keys (column names) and values as
    JSON (the Redactor looks for secrets as JSON escapes them too)."""
    parts = [t for t in texts.values() if t]
    parts.extend(map(str, found))  # str() of a number or None only risks a needless slow path
    if children:
        parts.append(_SCAN.encode(children))
    return "\x00".join(parts)


def _documented(scrub: Redactor, value: Any) -> Any:
    """JSON-able ``value`` with each of its texts as :meth:`Redactor.document` keeps them."""
    if isinstance(value, str):
        return scrub.document(value)
    if isinstance(value, Mapping):
        return {k: _documented(scrub, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_documented(scrub, v) for v in value]
    return value


def _children(
    table: str, id_column: str, parent_id: str, children: Mapping[str, list[dict[str, Any]]]
) -> list[ChildRows]:
    """Child records as rows: a child table of this parent gets a column per field (names that
    cannot be columns go to its ``extra_json``); records of any other kind go to
    ``document_records`` as canonical JSON."""
    own = _OWN_TABLES[table]
    laid_out = []
    others: list[tuple[Any, ...]] = []
    for name, records in children.items():
        if not records:
            continue
        if name not in own:
            others.extend(
                (table, parent_id, name, i, _RECORD.encode(r)) for i, r in enumerate(records)
            )
            continue
        keys = tuple(dict.fromkeys(chain.from_iterable(records)))
        names = _column_names(id_column, keys)
        extra = [k for k in keys if k not in names]
        rows = [
            (parent_id, i, dumps({k: r[k] for k in extra if k in r}) if extra else None,
             *map(r.get, names))
            for i, r in enumerate(records)
        ]  # fmt: skip
        if not _SQL_TYPES.issuperset(map(type, chain.from_iterable(rows))):
            rows = [tuple(_for_sql(list(row))) for row in rows]
        laid_out.append(ChildRows(name, (id_column, "position", "extra_json", *names), rows))
    if others:
        columns = ("entity", "parent_id", "record_type", "position", "record_json")
        laid_out.append(ChildRows("document_records", columns, others))
    return laid_out


def _column_names(id_column: str, keys: tuple[Any, ...]) -> tuple[str, ...]:
    """Which of the fields ``keys`` of a child table are columns; the others (names that cannot
    be columns) go to ``extra_json``."""
    return tuple(
        k for k in keys
        if isinstance(k, str) and _COLUMN_NAME.match(k) and k not in _RESERVED and k != id_column
    )  # fmt: skip
