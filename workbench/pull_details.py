"""The pull's detail pipeline: fetched details are parsed and prepared on one thread, then
written a group per transaction.

Parsing and preparing are CPU work, which threads cannot share (the GIL): the fetching threads
only wait for the partner and hand each detail over, and one thread does that work with fewer
hand-overs than eight would. A crash (``kill -9``) loses at most what is queued or in the last
group: those ids have their calls recorded but no stored detail, so the next pull fetches them
again.
"""

from __future__ import annotations

import queue
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from workbench import pesc
from workbench.api.frames import parse_pescxml, split_pescxml

if TYPE_CHECKING:
    from workbench.store import Store

GROUP_SIZE = 50  # details written per transaction (see GroupWriter)
GROUP_S = 0.1  # ... or fewer, when this many seconds have passed since the last group


class DetailProcessor:
    """Parses and prepares the details fetching threads ``put``, on a thread of its own, and
    hands them to ``writer``. Its backlog is bounded: fetchers wait when it falls behind, so
    memory stays flat. A detail it cannot process fails alone (``writer.failed``).

    >>> processor = DetailProcessor(store, "supplier_requests", {}, writer, backlog=16)
    ... # doctest: +SKIP
    >>> processor.put(request_id, detail, call_id); processor.close()  # doctest: +SKIP
    """

    _DONE = None

    def __init__(
        self,
        store: Store,
        list_name: str,
        dates: dict[str, Any],
        writer: GroupWriter,
        *,
        backlog: int,
    ) -> None:
        self._store, self._list_name, self._dates, self._writer = store, list_name, dates, writer
        self._queue: queue.Queue[tuple[str, dict[str, Any], Any] | None] = queue.Queue(backlog)
        self._thread = threading.Thread(target=self._run, name="wb-details", daemon=True)
        self._thread.start()

    def put(self, request_id: str, detail: dict[str, Any], call_id: Any) -> None:
        self._queue.put((request_id, detail, call_id))

    def close(self) -> None:
        """Process what is queued, then stop."""
        self._queue.put(self._DONE)
        self._thread.join()

    def _run(self) -> None:
        while (job := self._queue.get()) is not self._DONE:
            request_id, detail, call_id = job
            try:
                prepared = self._prepare(request_id, detail, call_id)
            except Exception as exc:  # one bad detail must not stop the others
                self._writer.fail(request_id, exc)
            else:
                self._writer.add(request_id, prepared)  # which records what it cannot write

    def _prepare(self, request_id: str, detail: dict[str, Any], call_id: Any) -> Any:
        value, fields = split_pescxml(detail)
        _, document, parse_error = parse_pescxml(value)
        listed = self._dates.get(request_id)
        return self._store.prepare_detail(
            self._list_name,
            request_id,
            request_date=fields.get("RequestDate", listed),
            listed_date=listed,
            pescxml=document.text if document else None,
            seen_at=datetime.now(UTC),
            detail=detail,
            flat=pesc.flatten(document) if document else None,
            children=pesc.records(document) if document else None,
            call_id=call_id,
            parse_error=parse_error,
            validation=_validation(document) if value else None,
        )


class GroupWriter:
    """Writes the details of a pull in groups: one transaction per ``GROUP_SIZE`` details or
    ``GROUP_S`` seconds, instead of one each.

    Only the detail upserts are grouped; each call is still recorded in its own transaction as
    it happens. A group that fails is retried item by item, so one bad detail fails alone, in
    ``failed``, and is never counted as stored.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._pending: list[tuple[str, Any]] = []
        self._since = time.monotonic()
        self.failed: dict[str, str] = {}  # id -> error, for details not processed or written

    def add(self, item_id: str, prepared: Any) -> None:
        with self._lock:
            self._pending.append((item_id, prepared))
            if len(self._pending) < GROUP_SIZE and time.monotonic() - self._since < GROUP_S:
                return
            group = self._take()
        self._write(group)

    def flush(self) -> None:
        with self._lock:
            group = self._take()
        self._write(group)

    def _take(self) -> list[tuple[str, Any]]:
        group, self._pending = self._pending, []
        self._since = time.monotonic()
        return group

    def _write(self, group: list[tuple[str, Any]]) -> None:
        if not group:
            return
        if len(group) > 1:
            try:
                self._store.write_details([p for _, p in group])
                return
            except Exception:  # noqa: S110  retried one by one below, failures recorded there
                pass
        for item_id, prepared in group:  # find the one(s) that cannot be written
            try:
                self._store.write_details([prepared])
            except Exception as exc:
                self.fail(item_id, exc)

    def fail(self, item_id: str, exc: BaseException) -> None:
        with self._lock:
            self.failed[item_id] = f"{type(exc).__name__}: {exc}"


def _validation(document: pesc.PescDocument | None) -> dict[str, Any]:
    """A document's validation against ``WORKBENCH_PESC_SCHEMAS`` when set ("not validated"
    otherwise): it reports, it never keeps a document out of the store."""
    if document is None:
        return {"status": "invalid", "note": "not parsed"}
    result = pesc.validate(document)
    return {
        "status": result.status,
        "schema": result.schema,
        "note": result.note,
        "errors": [str(e) for e in result.errors[:20]],
    }
