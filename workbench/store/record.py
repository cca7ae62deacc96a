"""Append-only records: runs, calls (every HTTP exchange) and snapshots of the partner's lists.

Scrubbing and serialising happen before the write lock is taken, so threads recording calls
in parallel only queue for the insert itself.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as default
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import unquote

from workbench.errors import StoreError
from workbench.store import entities, settle
from workbench.store.connection import Connection
from workbench.store.events import events_seen
from workbench.store.lists import EVENT_ID_FIELDS, list_info
from workbench.store.scrub import Scrubber, headers_text
from workbench.store.values import field, now_text, partner_time, sha256, utc_text

RUN_STATUSES = ("ok", "partial", "failed")
_ID_PATHS = ("transcriptrequests", "transcripts")
_NOT_IDS = frozenset({"no_response"})


def workbench_version() -> str:
    try:
        return version("workbench")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0"


# -- runs ---------------------------------------------------------------------------------------


def begin_run(c: Connection, *, kind: str, profile: str | None) -> int:
    with c.write() as conn:
        cursor = conn.execute(
            "INSERT INTO runs (kind, profile, started_at, status, workbench_version, pid, host) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?)",
            (kind, profile, now_text(), workbench_version(), os.getpid(), socket.gethostname()),
        )
        return int(cursor.lastrowid or 0)


def finish_run(
    c: Connection, scrub: Scrubber, run_id: int, *, status: str, summary: Any = None
) -> None:
    if status not in RUN_STATUSES:
        raise StoreError(f"Run status {status!r} is not one of {', '.join(RUN_STATUSES)}.")
    text = scrub.dumps([summary])[0] if summary is not None else None
    with c.write() as conn:
        cursor = conn.execute(
            "UPDATE runs SET finished_at = ?, status = ?, summary = coalesce(?, summary) "
            "WHERE id = ?",
            (now_text(), status, text, run_id),
        )
        if cursor.rowcount == 0:
            raise StoreError(f"There is no run {run_id} in {c.path}.")


# -- calls --------------------------------------------------------------------------------------

_CALL_SQL = (
    "INSERT INTO calls (run_id, request_id, interface, operation, method, url, attempt, "
    "started_at, duration_s, status, error, request_headers, request_body, response_headers, "
    "response_body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def record_call(
    c: Connection, scrub: Scrubber, exchange: Any, *, run_id: int | None, request_id: str | None
) -> int:
    url, error, request_body, response_body = (
        _as_text(getattr(exchange, name, None)) for name in _TEXTS
    )
    # One scan proves the lot clean (the usual case): the body is most of it, and scanned once.
    url, error, request_headers, request_body, response_headers, response_body = scrub.texts(
        [
            url,
            error,
            headers_text(getattr(exchange, "request_headers", None)),
            request_body,
            headers_text(getattr(exchange, "response_headers", None)),
            response_body,
        ]
    )
    started = getattr(exchange, "started_at", None)
    params = (
        run_id,
        request_id if request_id is not None else request_id_from_url(url),
        getattr(exchange, "interface", None),
        getattr(exchange, "operation", None),
        getattr(exchange, "method", None),
        url,
        getattr(exchange, "attempt", None),
        (partner_time(started) or now_text())
        if isinstance(started, datetime | str)
        else now_text(),
        getattr(exchange, "duration_s", None),
        getattr(exchange, "status", None),
        error,
        request_headers,
        request_body,
        response_headers,
        response_body,
    )
    return c.insert(_CALL_SQL, params)


_TEXTS = ("url", "error", "request_body", "response_body")


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def request_id_from_url(url: str | None) -> str | None:
    """The ``:id`` of a transcript-exchange by-id path, or None (lists, tokens, events)."""
    if not url or "/transcript" not in url.lower():
        return None
    path = url.split("?", 1)[0].split("#", 1)[0].split("://", 1)[-1]
    parts = [p for p in path.split("/")[1:] if p]  # [0] is the host
    for here, following in itertools.pairwise(parts):
        if here.lower() in _ID_PATHS and following.lower() not in _NOT_IDS:
            return unquote(following)
    return None


# -- snapshots ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotDiff:
    """What one list snapshot changed, against the previous snapshot of the same list.

    ``left`` maps the ids that left the list to their reason (``outbox``/``elsewhere``);
    ``resolved`` lists the uncertain sends this snapshot settled.
    """

    snapshot_id: int
    list_name: str
    taken_at: str
    previous_id: int | None
    appeared: tuple[str, ...]
    vanished: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    left: dict[str, str] = default(default_factory=dict)
    resolved: tuple[dict[str, Any], ...] = ()

    def __int__(self) -> int:
        return self.snapshot_id


def item_key(item: Any, key: str | None, text: str) -> str:
    """An item's key: its ``key`` field (any case), an event id, else a content hash."""
    if isinstance(item, Mapping):
        value = field(item, key) if key else field(item, *EVENT_ID_FIELDS)
        if value is not None and not isinstance(value, Mapping | list):
            return str(value)
    return "sha256:" + sha256(text)


def record_snapshot(
    c: Connection,
    scrub: Scrubber,
    run_id: int | None,
    list_name: str,
    items: Iterable[Any],
    *,
    call_id: int | None,
    key: str | None,
    taken_at: Any,
) -> SnapshotDiff:
    info = list_info(list_name)
    key = key if key is not None else info.key
    taken = utc_text(taken_at) if taken_at is not None else now_text()
    assert taken is not None
    items = list(items)
    texts = scrub.dumps(items)
    keys = [item_key(item, key, text) for item, text in zip(items, texts, strict=True)]
    current = dict(zip(keys, texts, strict=True))
    with c.write() as conn:
        found = conn.execute(
            "SELECT id FROM snapshots WHERE list_name = ? ORDER BY taken_at DESC, id DESC LIMIT 1",
            (list_name,),
        ).fetchone()
        previous_id = found[0] if found else None
        before: dict[str, str] = {}
        if previous_id is not None:
            before = dict(
                conn.execute(
                    "SELECT item_key, item_json FROM snapshot_items WHERE snapshot_id = ?",
                    (previous_id,),
                ).fetchall()
            )
        appeared = tuple(k for k in current if k not in before)
        vanished = tuple(k for k in before if k not in current)
        changed = tuple(k for k in current if k in before and before[k] != current[k])
        unchanged = tuple(k for k in current if k in before and before[k] == current[k])
        snapshot_id = int(
            conn.execute(
                "INSERT INTO snapshots (run_id, call_id, list_name, taken_at, key, item_count, "
                "previous_id, appeared, vanished, changed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    call_id,
                    list_name,
                    taken,
                    key,
                    len(keys),
                    previous_id,
                    len(appeared),
                    len(vanished),
                    len(changed),
                ),
            ).lastrowid
            or 0
        )
        conn.executemany(
            "INSERT INTO snapshot_items (snapshot_id, position, item_key, item_json) "
            "VALUES (?, ?, ?, ?)",
            [(snapshot_id, i, k, t) for i, (k, t) in enumerate(zip(keys, texts, strict=True))],
        )
        if info.source is None:
            entities.list_seen(conn, info, items, keys, at=taken)
        else:
            events_seen(conn, info.source, items, keys, texts, at=taken, listed=True)
        # A list speaks only of the sends begun before it was requested (see settle.py).
        requested = settle.requested_at(conn, call_id) or (taken if taken_at is not None else None)
        resolved = settle.resolve(conn, list_name, set(keys), at=taken, requested=requested)
        left = entities.mark_unlisted(conn, info, snapshot_id, at=taken, requested=requested)
    return SnapshotDiff(
        snapshot_id=snapshot_id,
        list_name=list_name,
        taken_at=taken,
        previous_id=previous_id,
        appeared=appeared,
        vanished=vanished,
        changed=changed,
        unchanged=unchanged,
        left=left,
        resolved=tuple(resolved),
    )
