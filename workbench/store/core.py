"""The snapshot store: one SQLite file holding everything the workbench saw and sent."""

# ruff: noqa: S608  (SQL identifiers here are our own constants, never data; values are bound)

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import sqlite_utils

from workbench.errors import StoreError
from workbench.http.events import event_fields as read_event
from workbench.http.masking import Redactor, is_document, is_sent_document
from workbench.store import details, identity, outbox
from workbench.store.connection import Connection, process_alive, run_lock
from workbench.store.history import History, snapshot_items
from workbench.store.lists import ListInfo, event_keys, events_seen, item_key, list_info, list_seen
from workbench.store.migrations import open_schema
from workbench.store.schema import dumps, now_text, partner_time, row_id, run_row, utc_text

RUN_STATUSES = ("ok", "partial", "failed")  # how a run ends ("running" until then)
_CALL_FIELDS = (
    "interface", "operation", "method", "url", "attempt", "started_at", "duration_s", "status",
    "error", "request_headers", "request_body", "response_headers", "response_body",
)  # fmt: skip


@dataclass(frozen=True)
class SnapshotDiff:
    """What a list snapshot changed (``left``: id -> reason)."""

    snapshot_id: int
    list_name: str
    taken_at: str
    previous_id: int | None
    appeared: tuple[str, ...]
    vanished: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    left: dict[str, str] = field(default_factory=dict)
    resolved: tuple[dict[str, Any], ...] = ()


def request_id_from_url(url: str | None) -> str | None:
    """The ``:id`` of a transcript-exchange by-id path, or None (lists, tokens, events)."""
    path = (url or "").split("?", 1)[0].split("#", 1)[0].split("://", 1)[-1]
    parts = [p for p in path.split("/")[1:] if p]  # [0] is the host
    for here, following in itertools.pairwise(parts):
        if (
            here.lower() in ("transcriptrequests", "transcripts")
            and following.lower() != "no_response"
        ):
            return unquote(following)
    return None


class Store(History):
    """Runs, calls, list snapshots, documents, events and the outbox in one SQLite file,
    created or migrated on open; thread-safe, each write one transaction."""

    def __init__(
        self,
        path: str | Path,
        *,
        secrets: Iterable[str] = (),
        busy_timeout_s: float = 30.0,
        read_only: bool = False,
    ) -> None:
        self.path, self.read_only, self._secrets = Path(path), read_only, tuple(secrets)
        self._scrub = Redactor(self._secrets)
        super().__init__(Connection(self.path, busy_timeout_s=busy_timeout_s, read_only=read_only))
        try:
            self.schema_version = open_schema(self._c)
            self.outbox = outbox.Outbox(self._c, self._scrub)
            if not read_only:
                self.recover()
        except BaseException:
            self._c.close()
            raise

    def reopener(self) -> Callable[[], Store]:
        """Opens this database again, masking alike: picklable, for another process."""
        timeout = self._c.busy_timeout_s
        return partial(Store, self.path.resolve(), secrets=self._secrets, busy_timeout_s=timeout)

    @property
    def file(self) -> Path:
        """The file read: ``path``, or an older store's private migrated copy."""
        return self._c.file

    @property
    def db(self) -> sqlite_utils.Database:
        """The ``sqlite_utils.Database`` on the store's connection."""
        return self._c.db

    def set_meta(self, key: str, value: str | None) -> None:
        with self._c.write() as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            if value is not None:
                conn.execute("INSERT INTO meta VALUES (?, ?)", (key, value))

    def claim_partner(self, wanted: Mapping[str, str]) -> None:
        with self._c.write() as conn:
            identity.claim_partner(conn, self.path, wanted)

    def recover(self) -> list[int]:
        """Runs whose process is gone become failed; pending sends whose process or run ended,
        or older than :data:`.outbox.STALE_PENDING`, uncertain: their ids."""
        runs = self._c.rows("SELECT id, pid, host FROM runs WHERE status = 'running'")
        sends = self._c.rows(
            "SELECT o.id, o.created_at, o.pid, o.host, r.status FROM outbox o "
            "LEFT JOIN runs r ON r.id = o.run_id WHERE o.state = 'pending'"
        )
        dead = [i for i, pid, host in runs if process_alive(pid, host) is False]
        limit = utc_text(datetime.now(UTC) - outbox.STALE_PENDING) or ""
        stale = [(i, pid) for i, created, pid, host, run in sends if created < limit
                 or process_alive(pid, host) is False or run not in (None, "running")]  # fmt: skip
        if not dead and not stale:
            return []
        at, swept = now_text(), []
        with self._c.write(durable=True) as conn:
            conn.executemany(
                "UPDATE runs SET status = 'failed', finished_at = ?, summary = ? "
                "WHERE id = ? AND status = 'running'",
                [(at, '{"error": "interrupted: its process ended"}', i) for i in dead],
            )
            for entry_id, pid in stale:  # one settled meanwhile by another process stays settled
                swept += [entry_id] * conn.execute(
                    "UPDATE outbox SET state = 'uncertain', updated_at = ?, error = ? "
                    "WHERE id = ? AND state = 'pending'",
                    (at, f"interrupted: still pending when found at {at} (process {pid} is gone, "
                     f"its run ended, or it is older than {outbox.STALE_PENDING.total_seconds():g}"
                     " s); it may have reached the partner", entry_id),
                ).rowcount  # fmt: skip
        return swept

    @contextmanager
    def run_lock(self, *, timeout_s: float = 60.0) -> Iterator[None]:
        """One pull at a time per database: wait up to ``timeout_s``, then ``StoreError``."""
        with run_lock(self._c, timeout_s=timeout_s):
            self.recover()
            yield

    @contextmanager
    def batch(self) -> Iterator[None]:
        """The block's writes as one transaction (others wait: never wait on the network)."""
        with self._c.write():
            yield

    def close(self) -> None:
        self._c.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    def begin_run(self, *, kind: str = "pull", profile: str | None = None) -> int:
        return self._c.insert("runs", run_row(kind, profile))

    def finish_run(self, run_id: int, *, status: str, summary: Any = None) -> None:
        """End a run: ``status`` ok / partial / failed, ``summary`` any JSON value."""
        if status not in RUN_STATUSES:
            raise StoreError(f"Run status {status!r} is not one of {', '.join(RUN_STATUSES)}.")
        text = dumps(self._scrub.data(summary)) if summary is not None else None
        with self._c.write() as conn:
            if not conn.execute(
                "UPDATE runs SET finished_at = ?, status = ?, summary = coalesce(?, summary) "
                "WHERE id = ?",
                (now_text(), status, text, row_id(run_id)),
            ).rowcount:
                raise StoreError(f"There is no run {run_id} in {self.path}.")

    def record_call(
        self, exchange: Any, *, run_id: int | None = None, request_id: str | None = None
    ) -> int:
        """Append one HTTP exchange (``Exchange``'s attributes), masked again; its call id."""
        row = {name: getattr(exchange, name, None) for name in _CALL_FIELDS}
        text = {k: _text(row[k]) for k in ("url", "error", "request_body", "response_body")}
        # The session masked it already; a database is forever: again, by the same rule.
        sent, answered = (is_sent_document(row["interface"], row["method"]),
                          is_document(row["interface"], row["status"]))  # fmt: skip
        url = self._scrub.url(text["url"]) if text["url"] else text["url"]
        started = row["started_at"]
        row.update(
            url=url, error=self._scrub.text(text["error"]), run_id=row_id(run_id),
            request_id=request_id_from_url(url) if request_id is None else request_id,
            request_headers=dumps(self._scrub.headers(row["request_headers"])),
            request_body=self._scrub.answer(text["request_body"], document=sent),
            response_headers=dumps(self._scrub.headers(row["response_headers"], document=answered)),
            response_body=self._scrub.answer(text["response_body"], document=answered),
            started_at=(partner_time(started) if isinstance(started, datetime | str) else None)
            or now_text(),
        )  # fmt: skip
        return self._c.insert("calls", row)

    def record_snapshot(
        self,
        run_id: int | None,
        list_name: str,
        items: Iterable[Any],
        *,
        call_id: int | None = None,
        taken_at: Any = None,
        event_fields: Mapping[str, str] | None = None,
    ) -> SnapshotDiff:
        """Append what a complete list showed; the diff against the previous snapshot. Its rows
        follow (left: ``outbox`` when a send of ours explains it, else ``elsewhere``) and
        uncertain sends are settled (:mod:`.outbox`), in one transaction."""
        run_id, call_id, info = row_id(run_id), row_id(call_id), list_info(list_name)
        key = info.key
        taken = utc_text(taken_at) or now_text()
        items = list(items)
        texts = [self._scrub.document(dumps(item)) for item in items]
        said = [read_event(i, event_fields) for i in items] if info.source else []
        keys = (
            event_keys(str(info.source), said, texts) if key is None
            else [item_key(i, key, t) for i, t in zip(items, texts, strict=True)]
        )  # fmt: skip
        now = dict(zip(keys, texts, strict=True))
        with self._c.write() as conn:
            found = conn.execute(
                "SELECT id FROM snapshots WHERE list_name = ? ORDER BY taken_at DESC, id DESC",
                (list_name,),
            ).fetchone()
            previous_id = found[0] if found else None
            before = dict(snapshot_items(conn, previous_id))
            appeared = tuple(k for k in now if k not in before)
            vanished = tuple(k for k in before if k not in now)
            changed = tuple(k for k in now if k in before and before[k] != now[k])
            unchanged = tuple(k for k in now if k in before and before[k] == now[k])
            snapshot_id = self._c.insert("snapshots", {
                "run_id": run_id, "call_id": call_id, "list_name": list_name, "taken_at": taken,
                "key": key, "item_count": len(keys), "previous_id": previous_id,
                "appeared": len(appeared), "vanished": len(vanished), "changed": len(changed),
            })  # fmt: skip
            conn.executemany(
                "INSERT INTO snapshot_items VALUES (?, ?, ?, ?)",
                [(snapshot_id, i, k, t) for i, (k, t) in enumerate(now.items())],
            )
            if info.source:
                events_seen(conn, info.source, said, keys, texts, at=taken)
            else:
                list_seen(conn, info, items, keys, at=taken)
            call = conn.execute("SELECT started_at FROM calls WHERE id = ?", (call_id,)).fetchone()
            requested = call[0] if call else (None if taken_at is None else taken)
            resolved = outbox.resolve(conn, list_name, set(keys), at=taken, requested=requested)
            left = _left(conn, info, snapshot_id, at=taken, requested=requested)
        return SnapshotDiff(snapshot_id, list_name, taken, previous_id, appeared, vanished,
                            changed, unchanged, left, tuple(resolved))  # fmt: skip

    def prepare_detail(self, list_name: str, item_id: str, **values: Any) -> details.PreparedDetail:
        """A detail (:func:`.details.prepare_detail`'s keywords) laid out for
        :meth:`write_details`, before any lock is taken."""
        values["call_id"] = row_id(values.get("call_id"))
        info = list_info(list_name, details=True)
        return details.prepare_detail(self._scrub, info, item_id, **values)

    def write_details(self, prepared: Iterable[details.PreparedDetail]) -> None:
        """Write prepared details in one transaction (all or nothing)."""
        with self._c.write() as conn:
            for one in prepared:
                details.write_detail(self.db, conn, one)

    def missing_details(
        self, list_name: str, ids: Iterable[str], dates: Mapping[str, Any] | None = None
    ) -> list[str]:
        """The ids whose detail to fetch: not stored, failed, or listed again since, or (``dates``:
        id -> RequestDate) with another RequestDate."""
        info, dates = list_info(list_name, details=True), dates or {}
        wanted = list(dict.fromkeys(str(i) for i in ids))
        have = dict(
            self._c.rows(
                f"SELECT e.{info.id_column}, e.detail_request_date FROM {info.table} e "
                f"WHERE e.{info.id_column} IN (SELECT value FROM json_each(?)) "
                "AND e.detail_fetched_at IS NOT NULL "
                "AND (e.detail_failed_at IS NULL OR e.detail_failed_at <= e.detail_fetched_at) "
                "AND NOT EXISTS (SELECT 1 FROM departures d WHERE d.item_id = "
                f"e.{info.id_column} AND d.list_name = ? AND d.left_at >= e.detail_fetched_at)",
                (dumps(wanted), info.name),
            )
        )
        return [i for i in wanted if i not in have
                or (dates.get(i) is not None and partner_time(dates[i]) != have[i])]  # fmt: skip

    def record_detail_failure(
        self, list_name: str, request_id: str, error: Any, *, run_id: int | None = None
    ) -> None:
        """Remember a failed detail fetch; ``missing_details`` offers the id again."""
        info, item_id, at = list_info(list_name, details=True), str(request_id), now_text()
        text = self._scrub.text(str(error)) if error is not None else None
        with self._c.write() as conn:
            conn.execute(
                "INSERT INTO detail_failures (list_name, item_id, run_id, failed_at, error) "
                "VALUES (?, ?, ?, ?, ?)",
                (info.name, item_id, row_id(run_id), at, text),
            )
            conn.execute(
                f"INSERT INTO {info.table} ({info.id_column}, first_seen_at, last_seen_at, "
                "detail_failed_at, detail_error) VALUES (?1, ?2, ?2, ?2, ?3) "
                f"ON CONFLICT({info.id_column}) DO UPDATE SET "
                "detail_failed_at = ?2, detail_error = ?3",
                (item_id, at, text),
            )


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _left(
    conn: sqlite3.Connection, info: ListInfo, snapshot_id: int, *, at: str, requested: str | None
) -> dict[str, str]:
    """Mark what the snapshot no longer lists as left; id -> reason."""
    source = f"AND source = '{info.source}'" if info.source else ""
    gone = [
        row[0]
        for row in conn.execute(
            f"SELECT {info.id_column} FROM {info.table} WHERE on_list = 1 {source} AND "
            f"{info.id_column} NOT IN (SELECT item_key FROM snapshot_items WHERE snapshot_id = ?)",
            (snapshot_id,),
        )
    ]
    explained = outbox.explaining(conn, info.name, gone, requested=requested or at)
    reasons = {i: "outbox" if i in explained else "elsewhere" for i in gone}
    conn.executemany(
        f"UPDATE {info.table} SET on_list = 0, left_at = coalesce(left_at, ?), left_reason = ? "
        f"WHERE {info.id_column} = ? {source}",
        [(at, reasons[i], i) for i in gone],
    )
    conn.executemany(
        "INSERT INTO departures (list_name, item_id, left_at, left_reason, snapshot_id) "
        f"SELECT ?, ?, left_at, ?, ? FROM {info.table} WHERE {info.id_column} = ? {source}",
        [(info.name, i, reasons[i], snapshot_id, i) for i in gone],
    )
    return reasons
