"""Pull everything into the store: both no-response lists, both event feeds, missing details.

>>> summary = w.pull()          # doctest: +SKIP
>>> print(summary)              # new, changed, vanished, failed per list

Incremental: details are fetched only for ids the store does not hold yet (or whose last fetch
failed), so a pull with no partner change makes only the list and event calls. Details are
fetched on ``concurrency`` threads and parsed, once, on one more, then land in the entity tables
with their child records, a group per transaction (:mod:`workbench.pull_details`). A detail
that fails is recorded and retried by the next pull; the run is then ``partial``. A pull that
could read no list and no event feed at all (an outage, a revoked credential) is ``failed``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from workbench import spec
from workbench.api.batch import fetch_all
from workbench.api.ids import request_path
from workbench.errors import WorkbenchError
from workbench.partner_json import Listed, detail_items, listed_requests
from workbench.pull_details import DetailProcessor, GroupWriter
from workbench.terminal import printable

if TYPE_CHECKING:
    from workbench.client import Workbench
    from workbench.store import Store

PEEK_COUNT = 100  # the most the domestic interface hands out at once (DESIGN §3)


@dataclass(frozen=True)
class _Source:
    """One list the pull reads, and how its details are fetched and stored."""

    list_name: str
    role: str
    list_path: str
    empty_message: str
    detail_path: str
    operation: str


SOURCES = (
    _Source(
        "supplier_requests",
        "supplier",
        spec.SUPPLIER_PENDING_PATH,
        spec.NO_REQUESTS_FOUND,
        spec.SUPPLIER_REQUEST_PATH,
        "supplier",
    ),
    _Source(
        "consumer_transcripts",
        "consumer",
        spec.CONSUMER_PENDING_PATH,
        spec.NO_TRANSCRIPTS_FOUND,
        spec.CONSUMER_TRANSCRIPT_PATH,
        "consumer",
    ),
)


@dataclass
class ListResult:
    """What one list did during a pull."""

    listed: int = 0
    new: int = 0
    vanished: int = 0
    changed: int = 0
    closed_by_us: int = 0  # left the list, and our outbox explains it
    closed_elsewhere: int = 0  # left the list with no send of ours behind it
    details_fetched: int = 0
    details_failed: int = 0
    refused: int = 0  # listed items without a usable RequestID (each one is a failure)
    error: str | None = None


@dataclass
class PullSummary:
    """The outcome of a pull: per list, what appeared, vanished, was fetched or failed."""

    run_id: int
    status: str = "running"  # ok, partial, failed
    lists: dict[str, ListResult] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def failed(self) -> int:
        return len(self.failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "elapsed_s": round(self.elapsed_s, 3),
            "lists": {name: vars(result) for name, result in self.lists.items()},
            "failures": self.failures,
        }

    def to_frame(self) -> Any:
        """One row per list: listed, new, vanished, changed, details fetched and failed."""
        import pandas as pd

        rows = [{"list": name, **vars(result)} for name, result in self.lists.items()]
        df = pd.DataFrame(rows)
        df.attrs.update(run_id=self.run_id, status=self.status)
        return df

    def __str__(self) -> str:
        head = f"pull run {self.run_id}: {self.status} in {self.elapsed_s:.1f} s"
        lines = [head, f"  {'list':22s} {'listed':>7s} {'new':>5s} {'gone':>5s} "
                       f"{'changed':>7s} {'details':>7s} {'failed':>6s}"]  # fmt: skip
        for name, r in self.lists.items():
            if r.error:
                lines.append(f"  {name:22s} FAILED: {printable(r.error)}")
                continue
            lines.append(
                f"  {name:22s} {r.listed:7d} {r.new:5d} {r.vanished:5d} {r.changed:7d} "
                f"{r.details_fetched:7d} {r.details_failed:6d}"
            )
        for failure in self.failures[:10]:  # ids and errors come from the partner: one line each
            list_name, item, error = (printable(failure[k]) for k in ("list", "id", "error"))
            lines.append(f"  failed: {list_name} {item}: {error}")
        if len(self.failures) > 10:
            lines.append(f"  ... and {len(self.failures) - 10} more failures (see the runs table)")
        return "\n".join(lines)


def pull(
    w: Workbench, *, progress: bool | None = None, lock_timeout_s: float = 60.0
) -> PullSummary:
    """Pull every list and every missing detail of ``w`` into its store (``w.store``).

    One pull at a time per database: a second waits up to ``lock_timeout_s``, then raises
    ``StoreError`` saying who holds it.
    """
    store = w.store
    started = time.perf_counter()
    with store.run_lock(timeout_s=lock_timeout_s):
        run_id = store.begin_run(kind="pull", profile=w.profile.name)
        summary = PullSummary(run_id=run_id)
        unrecorded = w.session.unrecorded
        try:
            # After pull_deadline no call starts, and one under way ends: the run is partial.
            limit = w.session.time_limit(w.profile.pull_deadline, setting="WORKBENCH_PULL_DEADLINE")
            with w.run(run_id), limit:
                for source in SOURCES:
                    summary.lists[source.list_name] = _pull_list(
                        w, store, source, summary, progress=progress
                    )
                summary.lists["placement_events"] = _pull_events(
                    store, run_id, "placement_events", w.pending_placement_events
                )
                summary.lists["domestic_events"] = _pull_events(
                    store, run_id, "domestic_events", lambda: w.peek_events(count=PEEK_COUNT)
                )
        except BaseException as exc:
            summary.status = "failed"
            summary.elapsed_s = time.perf_counter() - started
            store.finish_run(run_id, status="failed", summary={**summary.as_dict(),
                                                               "error": _short(exc)})  # fmt: skip
            raise
        lost = w.session.unrecorded - unrecorded
        if lost:  # the store no longer holds what the partner answered: not an ok run
            error = f"{lost} call records could not be written: {w.session.unrecorded_error}"
            summary.failures.append({"list": "(calls)", "id": "(record)", "error": error})
        errors = [bool(r.error) for r in summary.lists.values()]
        # Nothing read at all (every list and feed failed: an outage, a revoked credential) is
        # a failed run, which --allow-partial does not accept; some of it is partial.
        summary.status = (
            "failed"
            if errors and all(errors)
            else "partial"
            if summary.failures or any(errors)
            else "ok"
        )
        summary.elapsed_s = time.perf_counter() - started
        store.finish_run(run_id, status=summary.status, summary=summary.as_dict())
    return summary


def _pull_list(
    w: Workbench, store: Store, source: _Source, summary: PullSummary, *, progress: bool | None
) -> ListResult:
    result = ListResult()
    session = w.session
    operation = f"{source.operation}.pull_list"
    try:
        payload = session.call(
            source.role,
            "GET",
            source.list_path,
            operation=operation,
            empty=(source.empty_message,),
        )
        listed = Listed() if payload is None else listed_requests(payload, operation=operation)
    except WorkbenchError as exc:
        # One list failing must not hide the others; the run is partial and says why. No
        # snapshot: nothing departs and no uncertain send is settled from a list not read.
        result.error = _short(exc)
        summary.failures.append({"list": source.list_name, "id": "(list)", "error": result.error})
        return result
    for shown, error in listed.refused:
        summary.failures.append({"list": source.list_name, "id": shown, "error": error})
    result.listed, result.refused = len(listed.items), len(listed.refused)
    # An item we could not read may be any id, so only a complete list says who left it.
    if not listed.refused:
        diff = store.record_snapshot(
            summary.run_id, source.list_name, listed.items, call_id=session.last_call_id()
        )
        result.new, result.vanished = len(diff.appeared), len(diff.vanished)
        result.changed = len(diff.changed)
        reasons = list(diff.left.values())
        result.closed_by_us, result.closed_elsewhere = (
            reasons.count("outbox"),
            reasons.count("elsewhere"),
        )
    dates = {i: item.get("RequestDate") for i, item in zip(listed.ids, listed.items, strict=True)}
    missing = store.missing_details(source.list_name, listed.ids)
    if not missing:
        return result
    stored = _fetch_details(w, store, source, missing, dates, summary, progress=progress)
    result.details_fetched, result.details_failed = stored, len(missing) - stored
    return result


def _fetch_details(
    w: Workbench,
    store: Store,
    source: _Source,
    ids: list[str],
    dates: dict[str, Any],
    summary: PullSummary,
    *,
    progress: bool | None,
) -> int:
    """Fetch details concurrently, parse and store them on one thread; the number stored."""
    session = w.session
    writer = GroupWriter(store)
    processor = DetailProcessor(
        store, source.list_name, dates, writer, backlog=2 * w.profile.concurrency
    )
    operation = f"{source.operation}.pull_detail"

    def one(request_id: str) -> list[dict[str, Any]]:
        path = request_path(source.detail_path, request_id)
        subject = f"{source.list_name} item {request_id!r}"
        payload = session.call(source.role, "GET", path, operation=operation, subject=subject)
        call_id = session.last_call_id()
        items = detail_items(payload, request_id, operation=operation, subject=subject)
        processor.put(request_id, items[0], call_id)
        return [{"request_id": request_id, "error": None}]

    try:
        rows = fetch_all(
            ids, one, concurrency=w.profile.concurrency, progress=progress, desc=operation
        )
    finally:
        processor.close()  # also on the way out of a failing pull: what was fetched is kept
        writer.flush()
    stored = 0
    for row in rows:
        error = row.get("error") or writer.failed.get(str(row.get("request_id")))
        if error:
            error = str(error)
            store.record_detail_failure(
                source.list_name, str(row["request_id"]), error, run_id=summary.run_id
            )
            summary.failures.append(
                {"list": source.list_name, "id": str(row["request_id"]), "error": error}
            )
        else:
            stored += 1
    return stored


def _pull_events(store: Store, run_id: int, list_name: str, fetch: Callable[[], Any]) -> ListResult:
    result = ListResult()
    try:
        frame = fetch()
    except WorkbenchError as exc:
        result.error = _short(exc)
        return result
    events = [_raw(value) for value in frame["raw"]] if "raw" in frame else []
    diff = store.record_snapshot(run_id, list_name, events, call_id=frame.attrs.get("call_id"))
    result.listed = len(events)
    result.new, result.vanished = len(diff.appeared), len(diff.vanished)
    return result


def _raw(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."
