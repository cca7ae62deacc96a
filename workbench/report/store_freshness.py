"""How old a store's data is, read from it and shown: when each list and feed was last read,
and how the last pull went (the figures, :class:`~workbench.report.staleness.Freshness`, are
plain Python: :mod:`workbench.report.staleness`).

>>> fresh = freshness(store, as_of="2026-03-02T09:00Z")  # doctest: +SKIP
>>> fresh.age_hours, fresh.is_stale(24), fresh.last_pull_status  # doctest: +SKIP
(7.5, False, 'partial')
>>> display(freshness_section(fresh, max_age_hours=24))  # doctest: +SKIP

A list or feed is *read* when a pull stored a complete snapshot of it (a failed list, or one
with an item that had no usable id, stores none). The store's age is that of its oldest last
read among the lists the profile uses; a list it uses but never read makes the store stale
whatever the limit. Only what the store held at ``as_of`` counts. A pull that started after
the last finished one and never finished (it crashed, or is still running) is a problem the
report names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd
from IPython.display import HTML

from workbench.report.markup import moment, page, table, text
from workbench.report.staleness import (
    DEFAULT_MAX_AGE_HOURS,
    Freshness,
    ListFreshness,
    hours_text,
)
from workbench.store.lists import LIST_NAMES

if TYPE_CHECKING:
    from workbench.store import Store

SHOWN_FAILURES = 20  # items not fetched listed in the HTML (all are counted)
NOT_FETCHED_COLUMNS = ("list", "id", "error")  # of Freshness.not_fetched
LIST_LABELS = {
    "supplier_requests": "transcript requests to us (supplier)",
    "consumer_transcripts": "transcripts sent to us (consumer)",
    "placement_events": "placement events feed (international)",
    "domestic_events": "on-demand events feed (domestic)",
}
INTERFACE_OF_LIST = {
    "supplier_requests": "supplier",
    "consumer_transcripts": "consumer",
    "placement_events": "international",
    "domestic_events": "domestic",
}


def freshness(store: Store, as_of: Any = None) -> Freshness:
    """How fresh ``store`` is at ``as_of`` (None: now): per list and feed its last complete
    read, the last finished pull's status, what failed in it and the items it could not
    fetch."""
    now = pd.Timestamp.now(tz="UTC")
    at = now if as_of is None else pd.Timestamp(as_of)
    at = _stamp(at)
    cutoff = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    snaps = store.table("snapshots", where="taken_at <= ?", params=[cutoff])
    last_read = (
        snaps.groupby("list_name")["taken_at"].max() if len(snaps) else pd.Series(dtype=object)
    )
    runs = store.table(
        "runs", where="kind = 'pull' AND finished_at IS NOT NULL AND finished_at <= ?",
        params=[cutoff],
    )  # fmt: skip
    runs = runs.sort_values(["finished_at", "id"], kind="stable")
    summary, last = ({}, None) if runs.empty else (_summary(runs.iloc[-1]), runs.iloc[-1])
    outcome: Mapping[str, Any] = _mapping(summary.get("lists"))
    skipped: Mapping[str, Any] = _mapping(summary.get("skipped"))
    tried = {str(n) for s in runs["summary"] for n in (_loads(s).get("lists") or {})}
    lists = []
    for name in LIST_NAMES:
        read = last_read.get(name)
        result = _mapping(outcome.get(name))
        why = skipped.get(INTERFACE_OF_LIST[name])
        if name not in outcome and why is None and read is None and name not in tried:
            why = "never pulled"
        age = None if read is None else max((at - read).total_seconds() / 3600, 0.0)
        if why is not None:  # the profile does not read it: its age does not count
            lists.append(ListFreshness(name, _plain(read), age, skipped=str(why)))
            continue
        error = result.get("error") if result else None
        if last is not None and name not in outcome and why is None:
            error = "not reached: the pull stopped before it"
        error = None if error is None else str(error)
        lists.append(ListFreshness(name, _plain(read), age, error))
    failures = [f for f in summary.get("failures") or [] if isinstance(f, Mapping)]
    items = [f for f in failures if not str(f.get("id", "")).startswith("(")]
    problems = [
        f"{f.get('list')}: {f.get('error')}"
        for f in failures
        if f not in items and f.get("id") != "(list)"  # a list's failure is its ``error``
    ]
    if summary.get("error"):
        problems.insert(0, f"the pull stopped: {summary['error']}")
    ok = runs[runs["status"] == "ok"]["finished_at"]
    rows = tuple(tuple(_text(f.get(key)) for key in NOT_FETCHED_COLUMNS) for f in items)
    unfinished = _unfinished(store, cutoff, None if last is None else last["finished_at"])
    if unfinished is not None:
        problems.insert(0, _unfinished_line(int(unfinished["id"]), unfinished["started_at"]))
    return Freshness(
        as_of=at.floor("us").to_pydatetime(),
        lists=tuple(lists),
        last_pull_run=None if last is None else int(last["id"]),
        last_pull_at=None if last is None else _plain(last["finished_at"]),
        last_pull_status=None if last is None else str(last["status"]),
        last_ok_pull_at=_plain(ok.max()) if len(ok) else None,
        problems=tuple(problems),
        not_fetched=rows,
        unfinished_run=None if unfinished is None else int(unfinished["id"]),
        unfinished_started_at=None if unfinished is None else _plain(unfinished["started_at"]),
    )


def _unfinished(store: Store, cutoff: str, after: pd.Timestamp | None) -> pd.Series | None:
    """The latest pull started by ``cutoff``, after the last finished pull ``after``, that
    never finished: it crashed, or it is still running."""
    since = "" if after is None else _stamp(pd.Timestamp(after)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    runs = store.table(
        "runs",
        where="kind = 'pull' AND finished_at IS NULL AND started_at <= ? AND started_at > ? "
        "ORDER BY started_at DESC, id DESC LIMIT 1",
        params=[cutoff, since],
    )
    return None if runs.empty else runs.iloc[0]


def _unfinished_line(run: int, started: datetime, tz: str | None = None) -> str:
    return (
        f"pull run {run} started {moment(started, tz)} and never finished (crashed or still "
        "running)"
    )


def freshness_section(
    fresh: Freshness, *, max_age_hours: float | None = None, tz: str | None = None
) -> HTML:
    """The report's first section: a warning when the data is stale (older than
    ``max_age_hours``, default :data:`DEFAULT_MAX_AGE_HOURS`) or the last pull was not ok,
    then each list's last read and the items not fetched. ``data-freshness`` says ``stale`` or
    ``fresh``; ``data-age-hours`` the store's age."""
    limit = DEFAULT_MAX_AGE_HOURS if max_age_hours is None else max_age_hours
    stale = fresh.is_stale(limit)
    age = "" if fresh.age_hours is None else f"{fresh.age_hours:.1f}"
    state = "stale" if stale else "fresh"
    said = fresh.warning(limit) or (
        f"Fresh data: every list in use was read within {limit:g} hours of "
        f"{moment(fresh.as_of, tz)} (the oldest {hours_text(fresh.age_hours)} before)."
    )
    css = "wb-figure wb-alert" if stale else "wb-figure"
    parts = [
        "<h2>Freshness</h2>",
        f'<div class="{css}" data-freshness="{state}" data-age-hours="{text(age)}" '
        f'data-max-age-hours="{text(float(limit))}"><strong>{text(said)}</strong></div>',
        _last_pull(fresh, tz),
    ]
    rows = pd.DataFrame(
        [
            {
                "list": f.name,
                "what": LIST_LABELS[f.name],
                "last_read": f.last_read_at,
                "age": hours_text(f.age_hours) if f.used else "",
                "last_pull": _outcome(f),
            }
            for f in fresh.lists
        ]
    )
    if len(rows):
        rows["last_read"] = pd.to_datetime(rows["last_read"], utc=True)
    headers = {"list": "list", "what": "what", "last_read": "last read", "age": "age",
               "last_pull": "in the last pull"}  # fmt: skip
    parts.append(table(rows, headers, tz=tz))
    if fresh.items_not_fetched:
        parts.append(
            f'<p class="wb-meta" data-figure="items_not_fetched" '
            f'data-value="{fresh.items_not_fetched}">{fresh.items_not_fetched} item(s) could '
            "not be fetched by the last pull (the next pull retries them):</p>"
        )
        frame = pd.DataFrame(list(fresh.not_fetched), columns=list(NOT_FETCHED_COLUMNS))
        parts.append(table(frame.astype("string"), max_rows=SHOWN_FAILURES))
    return page(*parts)


def _last_pull(fresh: Freshness, tz: str | None) -> str:
    said = ""
    if fresh.unfinished_run is not None and fresh.unfinished_started_at is not None:
        line = _unfinished_line(fresh.unfinished_run, fresh.unfinished_started_at, tz)
        said = (
            f'<p class="wb-figure wb-alert" data-unfinished-run="{fresh.unfinished_run}">'
            f"{text(line[0].upper() + line[1:])}. If no pull is running, pull again.</p>"
        )
    return said + _finished_pull(fresh, tz)


def _finished_pull(fresh: Freshness, tz: str | None) -> str:
    if fresh.last_pull_at is None:
        return '<p class="wb-meta" data-last-pull="none">No pull has finished in this store.</p>'
    status = fresh.last_pull_status or ""
    line = (
        f"The last pull (run {fresh.last_pull_run}) finished {moment(fresh.last_pull_at, tz)}: "
        f"{status}"
    )
    if status != "ok":
        problems = fresh.problems[1:] if fresh.unfinished_run is not None else fresh.problems
        bits = [*problems, *(f"{f.name} could not be read ({f.error})"
                                   for f in fresh.lists if f.error)]  # fmt: skip
        if fresh.items_not_fetched:
            bits.append(f"{fresh.items_not_fetched} item(s) not fetched")
        line += (": " + "; ".join(bits)) if bits else ""
        if fresh.last_ok_pull_at is not None:
            line += f". The last complete pull finished {moment(fresh.last_ok_pull_at, tz)}"
        else:
            line += ". No pull has completed without a failure yet"
    return f'<p class="wb-meta" data-last-pull="{text(status)}">{text(line)}.</p>'


def _outcome(f: ListFreshness) -> str:
    if f.skipped is not None:
        return f"skipped ({f.skipped})"
    if f.error is not None:
        return f"FAILED: {f.error}"
    return "read" if f.last_read_at is not None else "not read"


def _stamp(when: pd.Timestamp) -> pd.Timestamp:
    return when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")


def _plain(when: Any) -> datetime | None:
    """A stored time as a plain UTC ``datetime`` (to the microsecond, as stored); None if
    missing."""
    return (
        None
        if when is None or pd.isna(when)
        else _stamp(pd.Timestamp(when)).floor("us").to_pydatetime()
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _loads(value: Any) -> dict[str, Any]:
    try:
        found = json.loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _summary(run: pd.Series) -> dict[str, Any]:
    return _loads(run.get("summary"))
