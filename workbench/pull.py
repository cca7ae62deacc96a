"""Pull everything into the store: both no-response lists, both event feeds, missing details.

A detail is fetched when its id is new, listed with another ``RequestDate``, back on the list,
or failed last time; each distinct document is kept as a version. A failed detail makes the run
``partial`` (the next pull retries it); a pull that read no list or feed at all is ``failed``.
The domestic peek asks ``peek_count``, or the cap the partner accepted after refusing more
(meta ``peek_count_learned``); a full answer is peeked again, and one still full may hide
events past the count: the run is then ``partial``.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from workbench.api.exchange import Consumer, Role, Supplier
from workbench.api.frames import RAW, fetch_all
from workbench.api.gateway import peek_events, peek_within_cap, pending_placement_events
from workbench.errors import WorkbenchError
from workbench.http.answers import Listed, detail_items, listed_requests, request_path
from workbench.http.masking import printable
from workbench.storing import Storing, store_fetched

if TYPE_CHECKING:
    from workbench.http.session import Recorder, Session
    from workbench.store import Store

PEEK_LEARNED = "peek_count_learned"  # meta: the Count the partner accepted after a refusal
PEEKS_AFTER_FULL = 50  # a feed growing as fast as it is read must not keep a pull going
SOURCES: tuple[type[Role], ...] = (Supplier, Consumer)  # each role's pending list and details
# The id of a failure that is a whole list's (stored in the run's summary; the report reads it).
LIST_FAILED = "(list)"
PULL_FAILED = (
    "no list or event feed could be read; check the partner's status and the credentials "
    "(workbench doctor)"
)
PULL_PARTIAL = (
    "its failures, listed above, say what was not read: failed items are retried by the "
    "next pull; --allow-partial accepts a partial pull"
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
    cut_off_at: int = 0  # a feed answered at exactly the count asked: events past it unseen?
    error: str | None = None


@dataclass
class PullSummary:
    """The outcome of a pull: per list, what appeared, vanished, was fetched or failed."""

    run_id: int
    status: str = "running"  # ok, partial, failed
    lists: dict[str, ListResult] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)  # interface -> why the profile skips it

    def fail(self, list_name: str, item: str, error: str) -> None:
        self.failures.append({"list": list_name, "id": item, "error": error})

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "elapsed_s": round(self.elapsed_s, 3)}

    def __str__(self) -> str:
        lines = [
            f"pull run {self.run_id}: {self.status} in {self.elapsed_s:.1f} s",
            f"  {'list':22s} {'listed':>7s} {'new':>5s} {'gone':>5s} {'changed':>7s} "
            f"{'details':>7s} {'failed':>6s}",
        ]
        for name, r in self.lists.items():
            lines.append(
                f"  {name:22s} FAILED (below)"
                if r.error
                else f"  {name:22s} {r.listed:7d} {r.new:5d} {r.vanished:5d} {r.changed:7d} "
                f"{r.details_fetched:7d} {r.details_failed:6d}"
            )
        reasons: dict[str, list[str]] = {}
        for interface, why in self.skipped.items():
            reasons.setdefault(why, []).append(interface)
        lines += [f"  skipped: {', '.join(names)} ({why})" for why, names in reasons.items()]
        lines += [
            f"  failed: {name}: {printable(r.error)}" for name, r in self.lists.items() if r.error
        ]
        items = [f for f in self.failures if f["id"] != LIST_FAILED]  # lists: just above
        for failure in items[:10]:  # ids and errors come from the partner: one line each
            list_name, item, error = (printable(failure[k]) for k in ("list", "id", "error"))
            lines.append(f"  failed: {list_name} {item}: {error}")
        if len(items) > 10:
            lines.append(f"  ... and {len(items) - 10} more failures (see the runs table)")
        return "\n".join(lines)


class PullInterrupted(KeyboardInterrupt):
    """Ctrl-C during a pull: what it stored is kept, and ``str()`` says what that was."""

    def __init__(self, summary: PullSummary, *, calls: int) -> None:
        super().__init__()
        self.summary, self.calls = summary, calls

    def __str__(self) -> str:
        done = [
            f"{name} ({r.listed} listed, {r.details_fetched} details)"
            for name, r in self.summary.lists.items()
            if not r.error
        ]
        return (
            f"Interrupted: pull run {self.summary.run_id} stopped after "
            f"{self.summary.elapsed_s:.1f} s. What it stored is kept: {self.calls} calls"
            + (f", and in full {', '.join(done)}" if done else "")
            + ". The next pull continues from there (it fetches what is still missing)."
        )


def pull(
    session: Session,
    store: Store,
    *,
    run: Callable[[int], AbstractContextManager[object]],
    progress: bool | None,
    lock_timeout_s: float,
    calls: Recorder | None = None,
) -> PullSummary:
    """Pull every list and missing detail of the session's profile into ``store``;
    ``run(run_id)`` attributes the calls made inside it to the store's run; ``calls``: the
    session's recorder that writes them there (a process storing details records theirs in its
    place). One pull at a time per database: a second waits ``lock_timeout_s``, then
    ``StoreError`` says who holds it."""
    profile = session.profile
    with store.run_lock(timeout_s=lock_timeout_s):
        started = time.perf_counter()  # the run's own time, not the wait for another's
        run_id = store.begin_run(kind="pull", profile=profile.name)
        summary = PullSummary(run_id=run_id, skipped=profile.skipped())
        unrecorded = session.unrecorded
        fetched: dict[str, list[str]] = {}  # list name: the ids whose detail it fetched
        storing = Storing(session, store, run_id=run_id, calls=calls)
        try:
            # After pull_deadline no call starts, and one under way ends: the run is partial.
            limit = session.time_limit(profile.pull_deadline, setting="WORKBENCH_PULL_DEADLINE")
            try:
                with run(run_id), limit, storing:
                    for source in SOURCES:
                        if source.role in profile.interfaces:
                            name = source.list_name
                            summary.lists[name], fetched[name] = _pull_list(
                                session, store, source, summary, progress, storing
                            )
                    if "international" in profile.interfaces:
                        placement = functools.partial(pending_placement_events, session)
                        events = _pull_events(session, store, "placement_events", run_id, placement)
                        summary.lists["placement_events"] = events
                    if "domestic" in profile.interfaces:
                        summary.lists["domestic_events"] = _pull_domestic(session, store, summary)
            finally:  # Ctrl-C too: what the storing process answered for is counted
                for name, ids in fetched.items():
                    _settle(store, summary, name, ids, storing.errors)
        except BaseException as exc:
            summary.status, summary.elapsed_s = "failed", time.perf_counter() - started
            error = "interrupted (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else _short(exc)
            store.finish_run(run_id, status="failed", summary={**summary.as_dict(), "error": error})
            if isinstance(exc, KeyboardInterrupt):
                made = len(store.table("calls", where="run_id = ?", params=[run_id]))
                raise PullInterrupted(summary, calls=made) from None
            raise
        lost = session.unrecorded - unrecorded
        if lost:  # the store no longer holds what the partner answered: not an ok run
            error = f"{lost} call records could not be written: {session.unrecorded_error}"
            summary.fail("(calls)", "(record)", error)
        errors = [bool(r.error) for r in summary.lists.values()]
        # Nothing read at all (an outage, a revoked credential) is failed; some of it partial.
        summary.status = "partial" if summary.failures or any(errors) else "ok"
        summary.status = "failed" if errors and all(errors) else summary.status
        summary.elapsed_s = time.perf_counter() - started
        store.finish_run(run_id, status=summary.status, summary=summary.as_dict())
    return summary


def _pull_list(
    session: Session,
    store: Store,
    source: type[Role],
    summary: PullSummary,
    progress: bool | None,
    storing: Storing,
) -> tuple[ListResult, list[str]]:
    """What the list showed, and the ids whose detail it fetched (for ``storing``)."""
    result = ListResult()
    operation = f"{source.role}.pull_list"
    try:
        answer = session.call(
            source.role, "GET", source.list_path, operation=operation, empty=(source.empty,)
        )
        listed = (
            Listed() if answer.value is None else listed_requests(answer.value, operation=operation)
        )
    except WorkbenchError as exc:
        # One list failing must not hide the others. No snapshot: nothing departs and no
        # uncertain send is settled from a list not read.
        result.error = _short(exc)
        summary.fail(source.list_name, LIST_FAILED, result.error)
        return result, []
    for shown, error in listed.refused:
        summary.fail(source.list_name, shown, error)
    result.listed, result.refused = len(listed.items), len(listed.refused)
    # An item we could not read may be any id: only a whole list says who left.
    if not listed.refused:
        diff = store.record_snapshot(
            summary.run_id, source.list_name, listed.items, call_id=answer.call_id
        )
        result.new, result.vanished, result.changed = map(
            len, (diff.appeared, diff.vanished, diff.changed)
        )
        reasons = list(diff.left.values())
        result.closed_by_us, result.closed_elsewhere = map(reasons.count, ("outbox", "elsewhere"))
    dates = {i: item.get("RequestDate") for i, item in zip(listed.ids, listed.items, strict=True)}
    missing = store.missing_details(source.list_name, listed.ids, dates)
    operation = f"{source.role}.pull_detail"

    def one(request_id: str) -> list[dict[str, Any]]:
        """Fetch one detail, with the calls that fetched it (stored by ``store_fetched``)."""
        subject = f"{source.list_name} item {request_id!r}"
        said: dict[str, Any] = {"operation": operation, "subject": subject}
        fetched: dict[str, Any] = {"request_id": request_id, "detail": None, "error": None}
        with session.holding() as held:
            fetched["held"] = held
            try:  # every WorkbenchError is the row's: its calls are stored all the same
                path = request_path(source.detail_path, request_id)
                answer = session.call(source.role, "GET", path, **said)
                fetched["detail"] = detail_items(answer.value, request_id, **said)[0]
            except WorkbenchError as exc:
                fetched["error"] = f"{type(exc).__name__}: {exc}"
            except BaseException:  # a bug, or Ctrl-C: its calls are kept all the same
                store_fetched(session, store, source.list_name, dates, [fetched])
                raise
        return [fetched]

    storing.expect(len(missing))
    store_rows = functools.partial(storing.send, source.list_name, dates)
    fetch_all(missing, one, concurrency=session.profile.concurrency, progress=progress,
              desc=operation, then=store_rows)  # fmt: skip
    return result, missing


def _settle(
    store: Store,
    summary: PullSummary,
    list_name: str,
    ids: list[str],
    errors: dict[tuple[str, str], str | None],
) -> None:
    """Count the list's details stored, and remember each one that failed (retried next)."""
    result = summary.lists[list_name]
    for item in ids:
        if (list_name, item) not in errors:  # not stored, nor answered for (Ctrl-C)
            continue
        why = errors[list_name, item]
        if why:
            store.record_detail_failure(list_name, item, why, run_id=summary.run_id)
            summary.fail(list_name, item, str(why))
        result.details_fetched += not why
    result.details_failed = len(ids) - result.details_fetched


def _pull_events(
    session: Session, store: Store, list_name: str, run_id: int, fetch: Callable[[], Any]
) -> ListResult:
    """Snapshot the events ``fetch`` reads (a frame of ``events_frame``), each as it came."""
    try:
        frame = fetch()
    except WorkbenchError as exc:
        return ListResult(error=_short(exc))
    events = [json.loads(value) for value in frame[RAW]] if RAW in frame else []
    fields, call_id = session.profile.event_fields, frame.attrs.get("call_id")
    diff = store.record_snapshot(run_id, list_name, events, call_id=call_id, event_fields=fields)
    return ListResult(listed=len(events), new=len(diff.appeared), vanished=len(diff.vanished))


def _peek_all(session: Session, store: Store, kept: list[int]) -> Any:
    """Every event the domestic feed hands out at a count it accepts, peeked again while an
    answer is full and new; ``kept``: the count asked, and the events of the last peek kept."""
    import pandas as pd

    handed: list[Any] = []  # every frame any peek answered
    wanted, learned = session.profile.peek_count, store.meta(PEEK_LEARNED)
    count = min(wanted, int(learned)) if learned is not None and learned.isdigit() else wanted
    frame, accepted = peek_within_cap(session, count, wanted, handed)
    if accepted != count:  # a cap learned, or the profile's count accepted again
        store.set_meta(PEEK_LEARNED, str(accepted) if accepted < count else None)
    for _ in range(PEEKS_AFTER_FULL):
        if len(frame) != accepted:
            break
        seen = {raw for earlier in handed for raw in earlier.get(RAW, ())}
        try:
            more = peek_events(session, accepted)
        except WorkbenchError:  # what was handed is kept; the run says it may be cut off
            break
        handed.append(more)
        if set(more.get(RAW, ())) <= seen:  # the peek keeps the events it hands out
            break
        frame = more
    kept += [accepted, len(frame)]
    every = pd.concat(handed, ignore_index=True).drop_duplicates(subset=RAW, ignore_index=True)
    every.attrs = dict(handed[-1].attrs)
    return every


def _pull_domestic(session: Session, store: Store, summary: PullSummary) -> ListResult:
    """The domestic feed (:func:`_peek_all`); one still answering exactly the count asked may
    hide events past it: a failure says so. More events than asked is no cut-off."""
    kept: list[int] = []
    fetch = functools.partial(_peek_all, session, store, kept)
    result = _pull_events(session, store, "domestic_events", summary.run_id, fetch)
    if result.error is None and kept[0] == kept[1]:
        result.cut_off_at = count = kept[0]
        if str(count) == store.meta(PEEK_LEARNED) and count < session.profile.peek_count:
            what = (
                f"the most this partner hands out at once (it refused more): peek does not "
                f"remove events, so those past the first {count} may be unseen until earlier "
                "ones leave the feed; ask the partner how to read them all"
            )
        else:
            what = (
                f"the most the pull asked for: events past the first {count} may be unseen; "
                "raise WORKBENCH_PEEK_COUNT (peek_count in the profile) if the partner hands "
                "out more at once"
            )
        said = f"the feed answered {count} events (Count={count}), {what}."
        summary.fail("domestic_events", "(feed)", said)
    return result


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."
