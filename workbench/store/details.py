"""A request's or a transcript's detail: every distinct document as a version in ``documents``,
the entity row (the current version's PESC fields), the child records.

A pull stores thousands from several threads: :func:`prepare_detail` masks and lays one out
before any lock is taken, :func:`write_detail` writes it inside the caller's transaction.
Masking (:meth:`Redactor.document`: a document is kept as written, but for echoes of our
tokens) goes value by value where a text shows something to mask, never on JSON text (a secret
``true`` would break its syntax) and never on the item id, which its child rows link by.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any

from workbench.errors import PescError
from workbench.http.masking import Redactor
from workbench.pesc.document import unescape_once
from workbench.pesc.fields import KEYS
from workbench.store.lists import ListInfo
from workbench.store.schema import (
    CHILD_TABLES,
    dumps,
    now_text,
    partner_time,
    scalar,
    sha256,
    utc_text,
)

if TYPE_CHECKING:
    import sqlite_utils

FLAT_FIELDS = {"transcript_requests": KEYS["request"], "transcripts_received": KEYS["transcript"]}
OWN_TABLES = {p: tuple(n for n, (o, _) in CHILD_TABLES.items() if o == p) for p in FLAT_FIELDS}
_COLUMN_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_RESERVED = frozenset({"position", "extra_json", "request_id", "transcript_id", "rowid"})
# A document already kept for the id (same content) keeps its version, first sighting and call,
# and takes the fetch's detail item, parse error and fields, and its validation when it made one
# (a fetch without schemas does not undo a validation of the same content).
_DOCUMENT_SQL = (
    "INSERT INTO documents (entity, item_id, version, document_id, transmission_type, "
    "request_tracking_id, request_date, created_at, first_seen_at, call_id, content_sha256, "
    "pescxml, parse_error, validation, pesc_json, detail_json) "
    "SELECT :entity, :item_id, coalesce(max(version), 0) + 1, :document_id, :transmission_type, "
    ":request_tracking_id, :request_date, :created_at, :first_seen_at, :call_id, "
    ":content_sha256, :pescxml, :parse_error, :validation, :pesc_json, :detail_json "
    "FROM documents WHERE entity = :entity AND item_id = :item_id "
    "ON CONFLICT (entity, item_id, content_sha256) DO UPDATE SET "
    "parse_error = excluded.parse_error, "
    "validation = coalesce(excluded.validation, documents.validation), "
    "pesc_json = excluded.pesc_json, detail_json = excluded.detail_json"
)


def pescxml_of(document: Any) -> tuple[str | None, Any]:
    """A partner JSON body (or its one item) split into its ``PESCXML`` (any case) and the rest;
    a string that is not JSON is taken as the XML itself."""
    if isinstance(document, str | bytes):
        text = document.decode("utf-8", "replace") if isinstance(document, bytes) else document
        try:
            document = json.loads(text)
        except ValueError:
            return (text or None), None
    if isinstance(document, list) and len(document) == 1:
        document = document[0]
    if not isinstance(document, Mapping):
        return None, document
    xml, rest = None, {}
    for key, value in document.items():
        if str(key).lower() == "pescxml" and xml is None and isinstance(value, str):
            xml = value
        else:
            rest[key] = value
    return xml, rest


def unescaped_once(xml: str | None) -> str | None:
    """XML that came XML-escaped (``&lt;...``) unescaped once, as the PESC parser reads it; as
    it is otherwise, or when it cannot be read (escaped twice, say)."""
    if not xml or not xml.lstrip().startswith("&lt;"):
        return xml
    try:
        return unescape_once(xml)
    except PescError:
        return xml


@dataclass(frozen=True, slots=True)
class PreparedDetail:
    """One detail, masked and laid out as rows before the write lock is taken."""

    table: str
    id_column: str
    item_id: str
    row: dict[str, Any]  # the entity row's columns
    document: dict[str, Any] | None  # its documents row (_DOCUMENT_SQL's parameters)
    texts: dict[str, Any]  # detail_json, validation, pesc_json given (None: not given)
    children: dict[str, list[dict[str, Any]]] | None  # None: the child records stay
    detail: bool  # a detail was fetched

    def called(self, call_id: int | None) -> PreparedDetail:
        """The same detail, fetched by the call ``call_id`` (recorded after it was prepared)."""
        row = {**self.row, "detail_call_id": call_id} if self.detail else self.row
        document = None if self.document is None else {**self.document, "call_id": call_id}
        return replace(self, row=row, document=document)


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
    """One detail's rows: each distinct document a ``documents`` version (with the detail item
    less its XML, validation, flat fields), the entity row the current version's fields.
    Without a detail, ``validation`` and ``flat`` amend the current document. ``listed_date``
    (default ``request_date``): the listed RequestDate; a pull refetches when it changes.
    """
    table, id_column, item_id = info.table, info.id_column, str(item_id)
    seen = utc_text(seen_at) if seen_at is not None else now_text()
    row: dict[str, Any] = {id_column: item_id, "first_seen_at": seen, "last_seen_at": seen}
    if request_date is not None:
        row["request_date"] = partner_time(request_date)
    texts: dict[str, Any] = {}
    if detail is not None:
        xml, rest = pescxml_of(detail)
        texts["detail_json"] = None if rest is None else _kept(scrub, rest)[1]
        listed = listed_date if listed_date is not None else request_date
        row.update(detail_fetched_at=seen, detail_call_id=call_id, detail_failed_at=None,
                   detail_error=None, detail_request_date=partner_time(listed))  # fmt: skip
    if detail is not None or parse_error is not None:
        row["parse_error"] = None if parse_error is None else scrub.document(str(parse_error))
    if detail is not None or validation is not None:
        texts["validation"] = None if validation is None else _kept(scrub, validation)[1]
    fields = FLAT_FIELDS[table]
    if flat is not None:
        flat, texts["pesc_json"] = _kept(scrub, flat)
        row.update(zip(fields, map(scalar, (flat.get(f) for f in fields)), strict=True))
    elif detail is not None:  # a new document whose fields are unknown: drop the old ones
        row.update(dict.fromkeys(fields))
    plain = None
    if children is not None:
        plain = {
            str(n): [r if type(r) is dict else dict(r) for r in rs] for n, rs in children.items()
        }
        plain = _kept(scrub, plain)[0]
    document = None
    if detail is not None and pescxml is None:
        pescxml = unescaped_once(xml)
    if detail is not None and (xml := scrub.document(pescxml)) is not None:
        document = {
            "entity": table, "item_id": item_id, "document_id": row.get("document_id"),
            "transmission_type": _transmission_type(row, plain),
            "request_tracking_id": row.get("request_tracking_id"),
            "request_date": row.get("detail_request_date"), "created_at": row.get("created_at"),
            "first_seen_at": seen, "call_id": call_id, "content_sha256": sha256(xml),
            "pescxml": xml, "parse_error": row.get("parse_error"), "validation": None,
            "pesc_json": None, "detail_json": None, **texts,
        }  # fmt: skip
    return PreparedDetail(
        table, id_column, item_id, row, document, texts, plain, detail is not None
    )


def write_detail(db: sqlite_utils.Database, conn: sqlite3.Connection, p: PreparedDetail) -> None:
    """Write one prepared detail inside the caller's transaction (its child records replaced),
    whole or not at all: a failed one leaves the transaction as it found it."""
    conn.execute("SAVEPOINT detail")
    try:
        _write_detail(db, conn, p)
        conn.execute("RELEASE detail")
    except BaseException:
        with suppress(sqlite3.Error):  # gone with the transaction when SQLite ended it
            conn.execute("ROLLBACK TO detail")
            conn.execute("RELEASE detail")
        raise


def _write_detail(db: sqlite_utils.Database, conn: sqlite3.Connection, p: PreparedDetail) -> None:
    table, key = p.table, (p.table, p.item_id)
    if p.document is not None and _served_older(conn, p):
        return
    columns = tuple(p.row)
    updates = ", ".join(
        f"{c} = min({c}, excluded.{c})" if c == "first_seen_at"
        else f"{c} = max({c}, excluded.{c})" if c == "last_seen_at"
        else f"{c} = excluded.{c}"
        for c in columns[1:]
    )  # fmt: skip
    conn.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT({p.id_column}) DO UPDATE SET {updates}",
        list(p.row.values()),
    )
    if p.document is not None:
        conn.execute(_DOCUMENT_SQL, p.document)
        conn.execute(  # the current version is the document just received, new or not
            f"UPDATE {table} SET (current_version, version_count, cancelled_at) = ("
            "SELECT d.version, (SELECT count(*) FROM documents n WHERE n.entity = ?1 "
            "AND n.item_id = ?2), CASE WHEN lower(d.transmission_type) = 'cancellation' "
            "THEN d.first_seen_at END FROM documents d WHERE d.entity = ?1 AND d.item_id = ?2 "
            f"AND d.content_sha256 = ?3) WHERE {p.id_column} = ?2",
            (*key, p.document["content_sha256"]),
        )
    if p.children is not None:
        _write_children(db, conn, p, p.children)  # its document_records rows too
    if p.detail:  # a detail item without a document is kept as a document_records row
        if p.children is None:
            conn.execute(
                "DELETE FROM document_records WHERE entity = ? AND parent_id = ? "
                "AND record_type = 'detail'",
                key,
            )
        if p.document is None and p.texts.get("detail_json") is not None:
            conn.execute(
                "INSERT INTO document_records VALUES (?, ?, 'detail', 0, ?)",
                (*key, p.texts["detail_json"]),
            )
    elif p.texts:  # given without a detail: they amend the current document
        conn.execute(
            "UPDATE documents SET validation = coalesce(?3, validation), pesc_json = "
            "coalesce(?4, pesc_json) WHERE entity = ?1 AND item_id = ?2 AND version = "
            f"(SELECT current_version FROM {table} WHERE {p.id_column} = ?2)",
            (*key, p.texts.get("validation"), p.texts.get("pesc_json")),
        )


def _write_children(
    db: sqlite_utils.Database,
    conn: sqlite3.Connection,
    p: PreparedDetail,
    children: Mapping[str, list[dict[str, Any]]],
) -> None:
    """Replace the item's child records: a column per field in its own child tables (else
    ``extra_json``), other kinds in ``document_records`` as JSON."""
    own = OWN_TABLES[p.table]
    for name in own:
        conn.execute(f"DELETE FROM {name} WHERE {p.id_column} = ?", (p.item_id,))
    conn.execute(
        "DELETE FROM document_records WHERE entity = ? AND parent_id = ?", (p.table, p.item_id)
    )
    for name, records in children.items():
        if not records:
            continue
        if name not in own:
            conn.executemany(
                "INSERT INTO document_records VALUES (?, ?, ?, ?, ?)",
                [(p.table, p.item_id, name, i, dumps(r)) for i, r in enumerate(records)],
            )
            continue
        keys = dict.fromkeys(chain.from_iterable(records))
        names = [k for k in keys if isinstance(k, str) and _COLUMN_NAME.match(k)
                 and k not in _RESERVED and k != p.id_column]  # fmt: skip
        extra = [k for k in keys if k not in names]
        rows = [
            (p.item_id, i, dumps({k: r[k] for k in extra if k in r}) if extra else None,
             *map(scalar, (r.get(k) for k in names)))
            for i, r in enumerate(records)
        ]  # fmt: skip
        columns = (p.id_column, "position", "extra_json", *names)
        sql = f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        try:  # sqlite-utils' insert_all(alter=True), without its per-row work that doubled the
            conn.executemany(sql, rows)  # store's time in bench/store_write.py
        except sqlite3.OperationalError as exc:
            if "has no column named" not in str(exc):
                raise
            db.table(name).add_missing_columns(dict(zip(columns, r, strict=True)) for r in rows)
            conn.executemany(sql, rows)


def _served_older(conn: sqlite3.Connection, p: PreparedDetail) -> bool:
    """Whether the document is an older version than the current one (a lagging copy): then
    only the fetch is recorded, as failed (fetched once more), then as fetched."""
    table, listed = p.table, p.row.get("detail_request_date")
    found = conn.execute(
        f"SELECT d.version, e.current_version, e.detail_request_date IS ?3 "
        "AND e.detail_failed_at > e.detail_fetched_at FROM documents d "
        f"JOIN {table} e ON e.{p.id_column} = d.item_id WHERE d.entity = ?1 AND d.item_id = ?2 "
        "AND d.content_sha256 = ?4 AND d.version < e.current_version",
        (table, p.item_id, listed, p.document and p.document["content_sha256"]),
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
    conn.execute(
        f"UPDATE {table} SET last_seen_at = max(last_seen_at, ?1), "
        f"{'detail_fetched_at' if retried else 'detail_failed_at'} = ?1, "
        f"detail_request_date = ?2, detail_error = ?3 WHERE {p.id_column} = ?4",
        (p.row["last_seen_at"], listed, note, p.item_id),
    )
    return True


def _transmission_type(row: Mapping[str, Any], children: Mapping[str, Any] | None) -> Any:
    """``Cancellation`` however the document says it (DocumentTypeCode ``Cancel``, or
    ``MutuallyDefined`` with a TransmissionData note), else its TransmissionType."""
    kind = row.get("transmission_type")
    if str(row.get("document_type_code") or "").lower() == "cancel":
        return "Cancellation"
    if str(kind or "").lower() == "mutuallydefined" and any(
        str(note.get("note") or "").strip().lower() == "cancellation"
        and "transmissiondata" in str(note.get("context") or "").lower()
        for note in (children or {}).get("notes", ())
    ):
        return "Cancellation"
    return kind


def _kept(scrub: Redactor, value: Any) -> tuple[Any, str]:
    """``value`` with its texts as :meth:`Redactor.document` keeps them, and its JSON: one scan
    of the JSON in the usual case, nothing to mask."""
    text = dumps(value)
    if scrub.document(text) == text:
        return value, text
    value = _documented(scrub, value)
    return value, dumps(value)


def _documented(scrub: Redactor, value: Any) -> Any:
    if isinstance(value, str):
        return scrub.document(value)
    if isinstance(value, Mapping):
        return {k: _documented(scrub, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_documented(scrub, v) for v in value]
    return value
