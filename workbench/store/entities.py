"""Entity tables: transcript requests and transcripts received, and their list membership
(details: :mod:`workbench.store.details`; detail failures: ``Store``).

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
from workbench.store.cells import dumps, field, partner_time
from workbench.store.lists import LEFT_REASONS, ListInfo

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
