"""Entity tables: transcript requests and transcripts received, their list membership and
detail failures (details themselves: :mod:`workbench.store.details`).

Rows are upserted: ``first_seen_at`` keeps the earliest sighting, ``last_seen_at`` the latest.
List membership (``on_list``, ``left_at``, ``left_reason``) is kept by the snapshots
(:func:`list_seen`, :func:`mark_unlisted`), in the snapshot's own transaction, so a crash can
never leave a snapshot recorded but its departures unmarked.
"""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.errors import StoreError
from workbench.store import settle
from workbench.store.connection import Connection
from workbench.store.lists import LEFT_REASONS, ListInfo
from workbench.store.scrub import Scrubber
from workbench.store.values import (
    dumps,
    field,
    now_text,
    partner_time,
    pescxml_of,
    unescaped_once,
)

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
    conn: sqlite3.Connection,
    info: ListInfo,
    snapshot_id: int,
    *,
    at: str,
    requested: str | None = None,
) -> dict[str, str]:
    """Mark every row that is on the list but not in ``snapshot_id`` as left; id -> reason.
    ``requested``: when that list was requested (default ``at``)."""
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
    return mark_left(
        conn, info, gone, at=at, reason=None, snapshot_id=snapshot_id, requested=requested
    )


def mark_left(
    conn: sqlite3.Connection,
    info: ListInfo,
    ids: Iterable[str],
    *,
    at: str,
    reason: str | None,
    snapshot_id: int | None = None,
    requested: str | None = None,
) -> dict[str, str]:
    """Set ``left_at`` (the first one stays) and ``left_reason`` (None: ask the outbox about
    the sends begun before the list was ``requested``, default ``at``), and log the departure
    in ``departures``. Ids not in the table are ignored."""
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
        settle.explaining(conn, info.name, [r[0] for r in rows], requested=requested or at)
        if reason is None
        else set()
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


# -- details (their upserts: details.py) -------------------------------------------------------


def missing_details(
    c: Connection, info: ListInfo, ids: Iterable[str], dates: Mapping[str, Any] | None = None
) -> list[str]:
    """The ids (in order) whose detail is to be fetched: not stored, last fetch failed, back on
    the list since it was fetched, or listed (``dates``: id -> RequestDate as listed) with
    another RequestDate than when it was fetched."""
    wanted = list(dict.fromkeys(str(i) for i in ids))
    with c.read() as conn:
        have = dict(
            conn.execute(
                f"SELECT e.{info.id_column}, e.detail_request_date FROM {info.table} e "
                f"WHERE e.{info.id_column} IN (SELECT value FROM json_each(?)) "
                "AND e.detail_fetched_at IS NOT NULL "
                "AND (e.detail_failed_at IS NULL OR e.detail_failed_at <= e.detail_fetched_at) "
                "AND NOT EXISTS (SELECT 1 FROM departures d WHERE d.item_id = "
                f"e.{info.id_column} AND d.list_name = ? AND d.left_at >= e.detail_fetched_at)",
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


def document(
    c: Connection, info: ListInfo, item_id: str, *, version: int | None = None
) -> str | None:
    """The XML of an item's document, unescaped once: ``version`` (default: the current one)
    from ``documents``; a detail stored without one (no XML) from its row or call body."""
    rows = c.rows(
        "SELECT pescxml FROM documents WHERE entity = ? AND item_id = ? AND version = "
        f"coalesce(?, (SELECT current_version FROM {info.table} WHERE {info.id_column} = ?))",
        (info.table, str(item_id), version, str(item_id)),
    )
    if rows or version is not None:
        return rows[0][0] if rows else None
    rows = c.rows(
        f"SELECT e.pescxml, c.response_body FROM {info.table} e "
        f"LEFT JOIN calls c ON c.id = e.detail_call_id WHERE e.{info.id_column} = ?",
        (str(item_id),),
    )
    if not rows:
        return None
    xml, body = rows[0]
    return unescaped_once(xml if xml is not None or body is None else pescxml_of(body)[0])
