"""Entity tables: transcript requests, transcripts received, their child records, and events.

Rows are upserted: ``first_seen_at`` keeps the earliest sighting, ``last_seen_at`` the latest.
List membership (``on_list``, ``left_at``, ``left_reason``) is kept by the snapshots
(:func:`list_seen`, :func:`mark_unlisted`), in the snapshot's own transaction, so a crash can
never leave a snapshot recorded but its departures unmarked.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.errors import StoreError
from workbench.store import settle
from workbench.store.connection import Connection
from workbench.store.lists import LEFT_REASONS, ListInfo
from workbench.store.schema import CHILD_TABLES, REQUEST_FIELDS, TRANSCRIPT_FIELDS
from workbench.store.scrub import Scrubber
from workbench.store.values import (
    dumps,
    field,
    now_text,
    partner_time,
    pescxml_of,
    scalar,
    utc_text,
)

FLAT_FIELDS = {"transcript_requests": REQUEST_FIELDS, "transcripts_received": TRANSCRIPT_FIELDS}
_COLUMN_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_RESERVED = frozenset({"position", "extra_json", "request_id", "transcript_id", "rowid"})
_PLAIN = frozenset({str, int, float})
_PROBE = json.JSONEncoder(ensure_ascii=False, default=str)  # unsorted: only scanned, not kept


# -- list membership ----------------------------------------------------------------------------


def list_seen(
    conn: sqlite3.Connection, info: ListInfo, items: Sequence[Any], keys: Sequence[str], *, at: str
) -> None:
    """Every listed id is on the list now: insert new ones, refresh the others."""
    table, id_column = info.table, info.id_column
    conn.executemany(
        f"INSERT INTO {table} ({id_column}, request_date, on_list, first_seen_at, last_seen_at) "
        "VALUES (?, ?, 1, ?, ?) "
        f"ON CONFLICT({id_column}) DO UPDATE SET "
        "request_date = coalesce(excluded.request_date, request_date), on_list = 1, "
        "left_at = NULL, left_reason = NULL, "
        "first_seen_at = min(first_seen_at, excluded.first_seen_at), "
        "last_seen_at = max(last_seen_at, excluded.last_seen_at)",
        [
            (k, partner_time(field(i, "RequestDate")) if isinstance(i, Mapping) else None, at, at)
            for i, k in zip(items, keys, strict=True)
        ],
    )


def mark_unlisted(
    conn: sqlite3.Connection, info: ListInfo, snapshot_id: int, *, at: str
) -> dict[str, str]:
    """Mark every row that is on the list but not in ``snapshot_id`` as left; id -> reason."""
    source = "AND source = ?" if info.source else ""
    params: tuple[Any, ...] = (info.source, snapshot_id) if info.source else (snapshot_id,)
    gone = [
        row[0]
        for row in conn.execute(
            f"SELECT {info.id_column} FROM {info.table} WHERE on_list = 1 {source} "
            f"AND {info.id_column} NOT IN "
            "(SELECT item_key FROM snapshot_items WHERE snapshot_id = ?)",
            params,
        )
    ]
    return mark_left(conn, info, gone, at=at, reason=None, snapshot_id=snapshot_id)


def mark_left(
    conn: sqlite3.Connection,
    info: ListInfo,
    ids: Iterable[str],
    *,
    at: str,
    reason: str | None,
    snapshot_id: int | None = None,
) -> dict[str, str]:
    """Set ``left_at`` (the first one stays) and ``left_reason`` (None: ask the outbox), and
    log the departure in ``departures``. Ids not in the table are ignored."""
    if reason is not None and reason not in LEFT_REASONS:
        raise StoreError(f"left reason {reason!r} is not one of {', '.join(LEFT_REASONS)}.")
    source = "AND source = ?" if info.source else ""
    scope = (info.source,) if info.source else ()
    wanted = dumps(list(dict.fromkeys(str(i) for i in ids)))
    rows = conn.execute(
        f"SELECT {info.id_column}, coalesce(left_at, ?) FROM {info.table} "
        f"WHERE {info.id_column} IN (SELECT value FROM json_each(?)) {source}",
        (at, wanted, *scope),
    ).fetchall()
    explained = (
        settle.explaining(conn, info.name, [r[0] for r in rows]) if reason is None else set()
    )
    reasons = {i: reason or ("outbox" if i in explained else "elsewhere") for i, _ in rows}
    conn.executemany(
        f"UPDATE {info.table} SET on_list = 0, left_at = ?, left_reason = ? "
        f"WHERE {info.id_column} = ? {source}",
        [(left, reasons[i], i, *scope) for i, left in rows],
    )
    conn.executemany(
        "INSERT INTO departures (list_name, item_id, left_at, left_reason, snapshot_id) "
        "VALUES (?, ?, ?, ?, ?)",
        [(info.name, i, left, reasons[i], snapshot_id) for i, left in rows],
    )
    return reasons


# -- details ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreparedDetail:
    """One detail upsert, scrubbed and laid out as SQL (built before the write lock is taken)."""

    table: str
    id_column: str
    item_id: str
    sql: str
    params: list[Any]
    kids: list[_Rows] | None


def prepare_detail(
    scrub: Scrubber,
    info: ListInfo,
    item_id: str,
    *,
    request_date: Any,
    seen_at: Any,
    detail: Any,
    flat: Mapping[str, Any] | None,
    children: Mapping[str, Iterable[Mapping[str, Any]]] | None,
    call_id: int | None,
    parse_error: Any,
    validation: Any,
) -> PreparedDetail:
    """Scrubbing, JSON and rows of one detail upsert, done before the write lock is taken;
    :func:`write_detail` writes it.

    The XML is kept once: in the detail call's response body when ``call_id`` names it (the
    ``documents`` view and ``Store.document`` read it from there), else in ``pescxml``.
    """
    table, id_column = info.table, info.id_column
    seen = utc_text(seen_at) if seen_at is not None else now_text()
    values: dict[str, Any] = {id_column: str(item_id), "first_seen_at": seen, "last_seen_at": seen}
    if request_date is not None:
        values["request_date"] = partner_time(request_date)
    if detail is not None:
        xml, rest = pescxml_of(detail)
        values.update(
            detail_fetched_at=seen,
            detail_call_id=call_id,
            detail_failed_at=None,
            detail_error=None,
            detail_json=scrub.text(dumps(rest)) if rest is not None else None,
            pescxml=scrub.text(xml) if call_id is None else None,
        )
    if detail is not None or parse_error is not None:
        values["parse_error"] = scrub.text(None if parse_error is None else str(parse_error))
    if detail is not None or validation is not None:
        values["validation"] = None if validation is None else scrub.text(dumps(validation))
    if flat is not None:
        raw = dumps(flat)
        text = scrub.text(raw)
        clean = flat if text == raw else json.loads(text or "{}")
        values["pesc_json"] = text
        values.update({f: _plain(clean.get(f)) for f in FLAT_FIELDS[table]})
    elif detail is not None:  # a new document whose fields are unknown: drop the old ones
        values["pesc_json"] = None
        values.update(dict.fromkeys(FLAT_FIELDS[table]))
    kids = (
        _children(scrub, table, id_column, str(item_id), children) if children is not None else None
    )
    columns = list(values)
    updates = ", ".join(
        f"{col} = min({col}, excluded.{col})"
        if col == "first_seen_at"
        else f"{col} = max({col}, excluded.{col})"
        if col == "last_seen_at"
        else f"{col} = excluded.{col}"
        for col in columns[1:]
    )
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT({id_column}) DO UPDATE SET {updates}"
    )
    return PreparedDetail(table, id_column, str(item_id), sql, list(values.values()), kids)


def write_detail(c: Connection, conn: sqlite3.Connection, prepared: PreparedDetail) -> None:
    """Write one prepared detail inside the caller's write transaction."""
    conn.execute(prepared.sql, prepared.params)
    if prepared.kids is not None:
        _replace_children(
            c, conn, prepared.table, prepared.id_column, prepared.item_id, prepared.kids
        )


def _plain(value: Any) -> Any:
    return value if value is None or type(value) in _PLAIN else scalar(value)


@dataclass(frozen=True)
class _Rows:
    """Child rows ready to insert (built before the write lock is taken)."""

    table: str
    columns: list[str]
    names: list[str]  # the field columns, which may have to be added first
    samples: dict[str, Any]  # a non-null value per field column, for its type
    rows: list[tuple[Any, ...]]


def _children(
    scrub: Scrubber,
    table: str,
    id_column: str,
    parent_id: str,
    children: Mapping[str, Iterable[Mapping[str, Any]]],
) -> list[_Rows]:
    """Scrub the child records and lay them out as rows of their tables."""
    plain = {str(name): [dict(r) for r in rows] for name, rows in children.items()}
    # Most documents hold nothing to mask: prove it on an unsorted encoding (the same text
    # per key and value, only cheaper), and do the canonical round trip only when in doubt.
    if scrub.clean(_PROBE.encode(plain)):
        clean = plain
    else:
        raw = dumps(plain)
        text = scrub.text(raw)
        clean = plain if text == raw else json.loads(text or "{}")
    mine = {name for name, (parent, _) in CHILD_TABLES.items() if parent == table}
    laid_out = []
    for name, records in clean.items():
        if not records:
            continue
        if name not in mine:
            rows = [(table, parent_id, name, i, dumps(r)) for i, r in enumerate(records)]
            columns = ["entity", "parent_id", "record_type", "position", "record_json"]
            laid_out.append(_Rows("document_records", columns, [], {}, rows))
            continue
        keys = list(dict.fromkeys(k for r in records for k in r))
        names = [k for k in keys if _COLUMN_NAME.match(k) and k not in _RESERVED and k != id_column]
        others = [k for k in keys if k not in set(names)]
        rows = [
            (
                parent_id,
                i,
                dumps({k: r[k] for k in others if k in r}) if others else None,
                *[v if v is None or type(v) in _PLAIN else scalar(v) for v in map(r.get, names)],
            )
            for i, r in enumerate(records)
        ]
        samples = {n: next((r[n] for r in records if r.get(n) is not None), None) for n in names}
        columns = [id_column, "position", "extra_json", *names]
        laid_out.append(_Rows(name, columns, names, samples, rows))
    return laid_out


def _replace_children(
    c: Connection,
    conn: sqlite3.Connection,
    table: str,
    id_column: str,
    parent_id: str,
    children: list[_Rows],
) -> None:
    """Replace a parent's child records (a re-fetched document replaces its children)."""
    for name, (parent, _) in CHILD_TABLES.items():
        if parent == table:
            conn.execute(f"DELETE FROM {name} WHERE {id_column} = ?", (parent_id,))
    conn.execute(
        "DELETE FROM document_records WHERE entity = ? AND parent_id = ?", (table, parent_id)
    )
    for part in children:
        _ensure_columns(c, conn, part.table, part.names, part.samples)
        marks = ", ".join("?" * len(part.columns))
        conn.executemany(
            f"INSERT INTO {part.table} ({', '.join(part.columns)}) VALUES ({marks})", part.rows
        )


def _ensure_columns(
    c: Connection, conn: sqlite3.Connection, table: str, names: list[str], samples: dict[str, Any]
) -> None:
    """Add the columns a child table lacks (types from sample values); cached per table."""
    known = c.known_columns.get(table)
    if known is not None and set(names) <= known:
        return
    known = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    for name in names:
        if name not in known:
            sample = samples.get(name)
            kind = (
                "INTEGER"
                if isinstance(sample, bool | int)
                else "REAL"
                if isinstance(sample, float)
                else "TEXT"
            )
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
            known.add(name)
    c.known_columns[table] = known


def missing_details(c: Connection, info: ListInfo, ids: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(str(i) for i in ids))
    with c.read() as conn:
        have = {
            row[0]
            for row in conn.execute(
                f"SELECT {info.id_column} FROM {info.table} WHERE {info.id_column} IN "
                "(SELECT value FROM json_each(?)) AND detail_fetched_at IS NOT NULL "
                "AND (detail_failed_at IS NULL OR detail_failed_at <= detail_fetched_at)",
                (dumps(wanted),),
            )
        }
    return [i for i in wanted if i not in have]


def record_detail_failure(
    c: Connection, scrub: Scrubber, info: ListInfo, item_id: str, error: Any, *, run_id: int | None
) -> None:
    at = now_text()
    text = scrub.text(str(error)) if error is not None else None
    with c.write() as conn:
        conn.execute(
            "INSERT INTO detail_failures (list_name, item_id, run_id, failed_at, error) "
            "VALUES (?, ?, ?, ?, ?)",
            (info.name, str(item_id), run_id, at, text),
        )
        conn.execute(
            f"INSERT INTO {info.table} ({info.id_column}, first_seen_at, last_seen_at, "
            "detail_failed_at, detail_error) VALUES (?, ?, ?, ?, ?) "
            f"ON CONFLICT({info.id_column}) DO UPDATE SET "
            "detail_failed_at = excluded.detail_failed_at, detail_error = excluded.detail_error",
            (str(item_id), at, at, at, text),
        )


def document(c: Connection, info: ListInfo, item_id: str) -> str | None:
    """The stored XML of an item's detail: its ``pescxml``, else from the detail call's body."""
    rows = c.rows(
        f"SELECT e.pescxml, c.response_body FROM {info.table} e "
        f"LEFT JOIN calls c ON c.id = e.detail_call_id WHERE e.{info.id_column} = ?",
        (str(item_id),),
    )
    if not rows:
        return None
    xml, body = rows[0]
    return xml if xml is not None or body is None else pescxml_of(body)[0]
