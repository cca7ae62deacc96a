"""Pull everything into the store: both no-response lists, both event feeds, missing details.

>>> summary = w.pull()          # doctest: +SKIP
>>> print(summary)              # new, changed, vanished, failed per list

Incremental: a detail is fetched when its id is new, listed with another ``RequestDate`` than
when it was fetched, back on the list after leaving it, or when its last fetch failed, so a
pull with no partner change makes only the list and event calls. Each distinct document an id
brings is kept as a version (``store.versions(id)``). Details are
fetched on ``concurrency`` threads and parsed, once, on one more, then land in the entity tables
with their child records, a group per transaction (:mod:`workbench.pull_details`). A detail
that fails is recorded and retried by the next pull; the run is then ``partial``. A pull that
could read no list and no event feed at all (an outage, a revoked credential) is ``failed``.

Before it creates or writes anything, a pull checks the profile (every interface it uses is
fully configured: ``ConfigError`` otherwise) and the store (it holds this partner, or nobody
yet: ``ConfigError`` otherwise, see :mod:`workbench.store.identity`). Interfaces the profile
does not use are skipped, and said so. The domestic peek asks the profile's ``peek_count``, or
the partner's largest ``Count`` once a refusal (any 400 to a peek) taught it (meta
``peek_count_learned``). A feed answered at exactly a learned cap asks the profile's count once
more in the same pull, and forgets the cap when the partner now accepts it. A feed answered with
exactly the count asked for is peeked again: a partner whose peek removes events hands out the
rest; when one that keeps them answers the same events, those past the count may be hidden, and
the run is ``partial``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from workbench.api.batch import fetch_all
from workbench.api.domestic import peek_events
from workbench.api.exchange import Consumer, Role, Supplier
from workbench.api.frames import RAW
from workbench.api.international import pending_placement_events
from workbench.errors import PartnerError, WorkbenchError
from workbench.ids import request_path
from workbench.partner_json import Listed, detail_items, listed_requests
from workbench.pull_details import DetailProcessor, GroupWriter
from workbench.terminal import printable

if TYPE_CHECKING:
    from workbench.session import Session
    from workbench.store import Store

PEEK_LEARNED = "peek_count_learned"  # meta key: the largest Count the partner accepts
# Peeks after a full answer, for a partner whose peek removes events: a feed growing as fast
# as it is read must not keep a pull going.
PEEKS_AFTER_FULL = 50
# How a refusal names the largest Count: "1..30", "between 1 and 30", "max 30", "maximum of
# 30", "at most 30", "no more than 30", "less than or equal to 30".
_NAMED_CAP = re.compile(
    r"\b\d+\s*\.\.\s*(\d+)\b|\bbetween\s+\d+\s+and\s+(\d+)\b"
    r"|\bmax(?:imum)?\b[\s:=]*(?:(?:is|of)\s+)?(\d+)\b"
    r"|\b(?:at\s+most|no\s+more\s+than|less\s+than\s+or\s+equal\s+to)\s+(\d+)\b",
    re.IGNORECASE,
)


# The lists the pull reads: each role's pending list, and its details.
SOURCES: tuple[type[Role], ...] = (Supplier, Consumer)


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


# The id of a failure that is a whole list's (stored in the run's summary; the report reads it).
LIST_FAILED = "(list)"
# What a pull that read nothing at all says (every list and event feed failed).
PULL_FAILED = (
    "no list or event feed could be read; check the partner's status and the credentials "
    "(workbench doctor)"
)
# What a partial pull says: its failures are not all items a next pull fetches again (a feed
# may be cut off at the most the partner hands out).
PULL_PARTIAL = (
    "its failures, listed above, say what was not read: failed items are retried by the "
    "next pull; --allow-partial accepts a partial pull"
)


@dataclass
class PullSummary:
    """The outcome of a pull: per list, what appeared, vanished, was fetched or failed."""

    run_id: int
    status: str = "running"  # ok, partial, failed
    lists: dict[str, ListResult] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)  # interface -> why the profile skips it

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
            "skipped": self.skipped,
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
                lines.append(f"  {name:22s} FAILED (below)")
                continue
            lines.append(
                f"  {name:22s} {r.listed:7d} {r.new:5d} {r.vanished:5d} {r.changed:7d} "
                f"{r.details_fetched:7d} {r.details_failed:6d}"
            )
        reasons: dict[str, list[str]] = {}
        for interface, why in self.skipped.items():
            reasons.setdefault(why, []).append(interface)
        for why, interfaces in reasons.items():
            lines.append(f"  skipped: {', '.join(interfaces)} ({why})")
        for name, r in self.lists.items():  # a list that failed, then its items that did
            if r.error:
                lines.append(f"  failed: {name}: {printable(r.error)}")
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
        done = [f"{name} ({r.listed} listed, {r.details_fetched} details)"
                for name, r in self.summary.lists.items() if not r.error]  # fmt: skip
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
) -> PullSummary:
    """Pull every list and every missing detail of the session's profile into ``store``;
    ``run(run_id)`` attributes the calls made inside it to the store's run.

    One pull at a time per database: a second waits up to ``lock_timeout_s``, then raises
    ``StoreError`` saying who holds it.
    """
    profile = session.profile
    with store.run_lock(timeout_s=lock_timeout_s):
        started = time.perf_counter()  # the run's own time, not the wait for another's
        run_id = store.begin_run(kind="pull", profile=profile.name)
        summary = PullSummary(run_id=run_id, skipped=profile.skipped())
        unrecorded = session.unrecorded
        try:
            # After pull_deadline no call starts, and one under way ends: the run is partial.
            limit = session.time_limit(profile.pull_deadline, setting="WORKBENCH_PULL_DEADLINE")
            with run(run_id), limit:
                for source in SOURCES:
                    if source.role in profile.interfaces:
                        summary.lists[source.list_name] = _pull_list(
                            session, store, source, summary, progress=progress
                        )
                if "international" in profile.interfaces:
                    read = partial(pending_placement_events, session)
                    summary.lists["placement_events"] = _pull_events(
                        session, store, "placement_events", run_id, read
                    )
                if "domestic" in profile.interfaces:
                    summary.lists["domestic_events"] = _pull_domestic(session, store, summary)
        except BaseException as exc:
            summary.status = "failed"
            summary.elapsed_s = time.perf_counter() - started
            error = "interrupted (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else _short(exc)
            store.finish_run(run_id, status="failed", summary={**summary.as_dict(),
                                                               "error": error})  # fmt: skip
            if isinstance(exc, KeyboardInterrupt):
                calls = len(store.table("calls", where="run_id = ?", params=[run_id]))
                raise PullInterrupted(summary, calls=calls) from None
            raise
        lost = session.unrecorded - unrecorded
        if lost:  # the store no longer holds what the partner answered: not an ok run
            error = f"{lost} call records could not be written: {session.unrecorded_error}"
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
    session: Session,
    store: Store,
    source: type[Role],
    summary: PullSummary,
    *,
    progress: bool | None,
) -> ListResult:
    result = ListResult()
    operation = f"{source.role}.pull_list"
    try:
        answer = session.call(
            source.role,
            "GET",
            source.list_path,
            operation=operation,
            empty=(source.empty,),
        )
        payload = answer.value
        listed = Listed() if payload is None else listed_requests(payload, operation=operation)
    except WorkbenchError as exc:
        # One list failing must not hide the others; the run is partial and says why. No
        # snapshot: nothing departs and no uncertain send is settled from a list not read.
        result.error = _short(exc)
        summary.failures.append(
            {"list": source.list_name, "id": LIST_FAILED, "error": result.error}
        )
        return result
    for shown, error in listed.refused:
        summary.failures.append({"list": source.list_name, "id": shown, "error": error})
    result.listed, result.refused = len(listed.items), len(listed.refused)
    # An item we could not read may be any id, so only a complete list says who left it.
    if not listed.refused:
        diff = store.record_snapshot(
            summary.run_id, source.list_name, listed.items, call_id=answer.call_id
        )
        result.new, result.vanished = len(diff.appeared), len(diff.vanished)
        result.changed = len(diff.changed)
        reasons = list(diff.left.values())
        result.closed_by_us, result.closed_elsewhere = (
            reasons.count("outbox"),
            reasons.count("elsewhere"),
        )
    dates = {i: item.get("RequestDate") for i, item in zip(listed.ids, listed.items, strict=True)}
    missing = store.missing_details(source.list_name, listed.ids, dates)
    if not missing:
        return result
    stored = _fetch_details(session, store, source, missing, dates, summary, progress=progress)
    result.details_fetched, result.details_failed = stored, len(missing) - stored
    return result


def _fetch_details(
    session: Session,
    store: Store,
    source: type[Role],
    ids: list[str],
    dates: dict[str, Any],
    summary: PullSummary,
    *,
    progress: bool | None,
) -> int:
    """Fetch details concurrently, parse and store them on one thread; the number stored."""
    concurrency = session.profile.concurrency
    writer = GroupWriter(store)
    processor = DetailProcessor(store, source.list_name, dates, writer, backlog=2 * concurrency)
    operation = f"{source.role}.pull_detail"

    def one(request_id: str) -> list[dict[str, Any]]:
        path = request_path(source.detail_path, request_id)
        subject = f"{source.list_name} item {request_id!r}"
        answer = session.call(source.role, "GET", path, operation=operation, subject=subject)
        items = detail_items(answer.value, request_id, operation=operation, subject=subject)
        processor.put(request_id, items[0], answer.call_id)
        return [{"request_id": request_id, "error": None}]

    try:
        rows = fetch_all(ids, one, concurrency=concurrency, progress=progress, desc=operation)
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


def _pull_events(
    session: Session, store: Store, list_name: str, run_id: int, fetch: Callable[[], Any]
) -> ListResult:
    """Snapshot the events ``fetch`` reads (a frame of ``events_frame``), each as it came."""
    result = ListResult()
    try:
        frame = fetch()
    except WorkbenchError as exc:
        result.error = _short(exc)
        return result
    events = [json.loads(value) for value in frame[RAW]] if RAW in frame else []
    diff = store.record_snapshot(
        run_id,
        list_name,
        events,
        call_id=frame.attrs.get("call_id"),
        event_fields=session.profile.event_fields,
    )
    result.listed = len(events)
    result.new, result.vanished = len(diff.appeared), len(diff.vanished)
    return result


def _pull_domestic(session: Session, store: Store, summary: PullSummary) -> ListResult:
    """The domestic feed, at the largest count the partner accepts, peeked until it is drained
    or answers the same events again (:func:`_peek_rest`); a feed still answering exactly the
    count asked may hide events past it: a failure entry says so. More events than asked is
    what the partner chose to answer, not a cut-off.

    Every event any peek of the pull was handed is stored, the probes' too: a partner whose
    peek removes events never hands them out again."""
    asked: list[tuple[int, int]] = []  # (count asked, events answered) of the peek kept

    def fetch() -> Any:
        handed: list[Any] = []
        frame, count = _peek_within_cap(session, store, handed)
        frame = _peek_rest(session, count, frame, handed)
        asked.append((count, len(frame)))
        return _every_event(handed)

    result = _pull_events(session, store, "domestic_events", summary.run_id, fetch)
    if asked and result.error is None and asked[0][1] == asked[0][0]:
        result.cut_off_at = count = asked[0][0]
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
        error = f"the feed answered {count} events (Count={count}), {what}."
        summary.failures.append({"list": "domestic_events", "id": "(feed)", "error": error})
    return result


def _peek_rest(session: Session, count: int, frame: Any, handed: list[Any]) -> Any:
    """After an answer with all ``count`` events asked, peek again while each answer brings
    events not handed before: a partner whose peek removes what it hands out gives the rest
    (up to ``PEEKS_AFTER_FULL`` more peeks), one whose peek keeps them the same ones again.
    Returns the last answer that brought new events: still full, the feed may be cut off."""
    for _ in range(PEEKS_AFTER_FULL):
        if len(frame) != count:
            break
        seen = {raw for earlier in handed for raw in earlier.get(RAW, ())}
        try:
            more = peek_events(session, count)
        except WorkbenchError:  # what was handed is kept; the run says the feed may be cut off
            break
        handed.append(more)
        if set(more.get(RAW, ())) <= seen:  # the peek keeps the events it hands out
            break
        frame = more
    return frame


def _every_event(frames: list[Any]) -> Any:
    """The events of ``frames`` (peeks' frames, in order), each once; the last call's id."""
    import pandas as pd

    every = pd.concat(frames, ignore_index=True).drop_duplicates(subset=RAW, ignore_index=True)
    every.attrs = dict(frames[-1].attrs)
    return every


def _peek_within_cap(session: Session, store: Store, handed: list[Any]) -> tuple[Any, int]:
    """Peek at the profile's count, or at the partner's learned cap when lower: (frame, count);
    every frame a peek answered is added to ``handed``.

    Any 400 to a peek is a refusal of the count: the pull then finds the largest count the
    partner accepts (the number its refusal names, then halving, then a binary search up) and
    remembers it. A feed answered at exactly a learned cap asks the profile's count once more:
    when the partner now accepts it, the learned cap is forgotten. When every count down to 1 is
    refused, the refusal is about something else: the partner's first answer is raised.
    """
    wanted = session.profile.peek_count
    learned = store.meta(PEEK_LEARNED)
    count = min(wanted, int(learned)) if learned is not None and learned.isdigit() else wanted
    try:
        frame = peek_events(session, count)
    except PartnerError as exc:
        if exc.status != 400:
            raise
        return _search_cap(session, store, count, exc, handed)
    handed.append(frame)
    if count < wanted and len(frame) == count:  # at the learned cap: has the partner grown?
        try:
            more = _peek_or_none(session, wanted, handed)
        except WorkbenchError:  # the feed was read: a failed extra look does not undo that
            more = None
        if more is not None:
            store.set_meta(PEEK_LEARNED, None)
            return more, wanted
    return frame, count


def _search_cap(
    session: Session, store: Store, refused: int, refusal: PartnerError, handed: list[Any]
) -> tuple[Any, int]:
    """The largest count below ``refused`` the partner accepts, learned: (frame, count)."""
    named = _named_cap(f"{refusal} {refusal.body or ''}", below=refused)
    if named is not None:
        frame = _peek_or_none(session, named, handed)
        if frame is not None:  # the partner named its cap: take its word
            store.set_meta(PEEK_LEARNED, str(named))
            return frame, named
        refused = named
    accepted, frame, probe = 0, None, refused // 2
    while frame is None and probe >= 1:
        frame = _peek_or_none(session, probe, handed)
        if frame is None:
            refused, probe = probe, probe // 2
        else:
            accepted = probe
    if frame is None:
        raise refusal  # even Count=1 is refused: the refusal is not about the count
    while refused - accepted > 1:
        middle = (accepted + refused) // 2
        found = _peek_or_none(session, middle, handed)
        if found is None:
            refused = middle
        else:
            accepted, frame = middle, found
    store.set_meta(PEEK_LEARNED, str(accepted))
    return frame, accepted


def _peek_or_none(session: Session, count: int, handed: list[Any]) -> Any:
    """The peek at ``count`` (added to ``handed``), or ``None`` when the partner refuses it
    (a 400)."""
    try:
        frame = peek_events(session, count)
    except PartnerError as exc:
        if exc.status != 400:
            raise
        return None
    handed.append(frame)
    return frame


def _named_cap(text: str, *, below: int) -> int | None:
    """The largest count a refusal names ("1..N", "between 1 and N", "max N", "at most N",
    "less than or equal to N", a ProblemDetails ``errors.Count`` entry), if below ``below``."""
    for match in _NAMED_CAP.finditer(text):
        value = int(next(g for g in match.groups() if g is not None))
        if 1 <= value < below:
            return value
    return None


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 500 else text[:497] + "..."
