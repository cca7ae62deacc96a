"""How old a report's data is: when each list and feed was last read, and how the last pull went.

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
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
from IPython.display import HTML

from workbench.errors import InvalidParameter
from workbench.report.markup import moment, page, table, text
from workbench.store.lists import LIST_NAMES

if TYPE_CHECKING:
    from workbench.store import Store

DEFAULT_MAX_AGE_HOURS = 24.0  # what a report calls stale when no --max-age is given
SHOWN_FAILURES = 20  # items not fetched listed in the HTML (all are counted)
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


@dataclass(frozen=True)
class ListFreshness:
    """One list or feed: when it was last read, how long before ``as_of``, and what the last
    pull said of it (``error`` when it could not read it, ``skipped`` when it did not try)."""

    name: str
    last_read_at: pd.Timestamp | None
    age_hours: float | None
    error: str | None = None
    skipped: str | None = None

    @property
    def used(self) -> bool:
        """Whether the profile reads it (its age counts)."""
        return self.skipped is None


@dataclass(frozen=True)
class Freshness:
    """How fresh a store is at ``as_of`` (see :func:`freshness`)."""

    as_of: pd.Timestamp
    lists: tuple[ListFreshness, ...]
    last_pull_run: int | None = None
    last_pull_at: pd.Timestamp | None = None  # when the last finished pull finished
    last_pull_status: str | None = None  # ok, partial or failed
    last_ok_pull_at: pd.Timestamp | None = None
    problems: tuple[str, ...] = ()  # what failed in the last pull, other than single items
    not_fetched: pd.DataFrame | None = None  # list, id, error: items the last pull could not get
    unfinished_run: int | None = None  # a pull started after the last finished one, unfinished
    unfinished_started_at: pd.Timestamp | None = None

    @property
    def items_not_fetched(self) -> int:
        return 0 if self.not_fetched is None else len(self.not_fetched)

    @property
    def failed_lists(self) -> list[str]:
        return [f.name for f in self.lists if f.error]

    @property
    def never_read(self) -> list[str]:
        """Lists the profile uses that no pull has read yet."""
        return [f.name for f in self.lists if f.used and f.last_read_at is None]

    @property
    def age_hours(self) -> float | None:
        """Hours since the oldest last read of a list in use; None when one was never read
        (or nothing was)."""
        ages = [f.age_hours for f in self.lists if f.used]
        if not ages or any(a is None for a in ages):
            return None
        return max(a for a in ages if a is not None)

    def is_stale(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> bool:
        """Older than ``max_age_hours``, or a list in use never read, or nothing pulled."""
        age = self.age_hours
        return age is None or age > max_age_hours

    def warning(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> str | None:
        """What a stale report says at its top (None when it is not stale)."""
        if not self.is_stale(max_age_hours):
            return None
        limit = f"{max_age_hours:g} hours"
        if not any(f.last_read_at is not None for f in self.lists):
            return (
                f"Stale data: no pull has read any list into this store as of "
                f"{moment(self.as_of)}. Run `workbench pull` (or `workbench report` without "
                "--no-pull) first."
            )
        if self.never_read:
            return (
                f"Stale data: {', '.join(self.never_read)} never read into this store; the "
                f"figures leave them out. Check the last pull's failures below, then pull again."
            )
        oldest = max((f for f in self.lists if f.used), key=lambda f: f.age_hours or 0.0)
        return (
            f"Stale data: {oldest.name} was last read {_hours(oldest.age_hours)} before this "
            f"report, more than {limit}. Figures may have changed at the partner since: pull "
            "again before acting on them."
        )

    def as_dict(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> dict[str, Any]:
        """JSON-able figures, with no id, error text or personal data: list names, times,
        counts (``hours_old``: the store's age, ``stale`` by ``max_age_hours``)."""
        return {
            "last_pull_at": _iso(self.last_pull_at),
            "last_pull_status": self.last_pull_status,
            "last_ok_pull_at": _iso(self.last_ok_pull_at),
            "items_not_fetched": self.items_not_fetched,
            "failed_lists": self.failed_lists,
            "hours_old": None if self.age_hours is None else round(self.age_hours, 1),
            "max_age_hours": max_age_hours,
            "stale": self.is_stale(max_age_hours),
            "last_read": {f.name: _iso(f.last_read_at) for f in self.lists if f.used},
            "unfinished_pull": None
            if self.unfinished_run is None
            else {"run": self.unfinished_run, "started_at": _iso(self.unfinished_started_at)},
            "problems": len(self.problems),
        }


def check_max_age(hours: float | None) -> float | None:
    """``hours`` if a usable limit (finite, more than 0), else ``InvalidParameter``."""
    if hours is not None and not (
        isinstance(hours, int | float) and math.isfinite(hours) and hours > 0
    ):
        raise InvalidParameter(
            f"{hours} is not a number of hours: use a finite number more than 0, e.g. 24",
            parameter="max_age",  # --max-age
        )
    return None if hours is None else float(hours)


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
            lists.append(ListFreshness(name, read, age, skipped=str(why)))
            continue
        error = result.get("error") if result else None
        if last is not None and name not in outcome and why is None:
            error = "not reached: the pull stopped before it"
        lists.append(ListFreshness(name, read, age, None if error is None else str(error)))
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
    frame = pd.DataFrame(items, columns=["list", "id", "error"]).astype("string")
    unfinished = _unfinished(store, cutoff, None if last is None else last["finished_at"])
    if unfinished is not None:
        problems.insert(0, _unfinished_line(int(unfinished["id"]), unfinished["started_at"]))
    return Freshness(
        as_of=at,
        lists=tuple(lists),
        last_pull_run=None if last is None else int(last["id"]),
        last_pull_at=None if last is None else last["finished_at"],
        last_pull_status=None if last is None else str(last["status"]),
        last_ok_pull_at=ok.max() if len(ok) else None,
        problems=tuple(problems),
        not_fetched=frame,
        unfinished_run=None if unfinished is None else int(unfinished["id"]),
        unfinished_started_at=None if unfinished is None else unfinished["started_at"],
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


def _unfinished_line(run: int, started: pd.Timestamp, tz: str | None = None) -> str:
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
        f"{moment(fresh.as_of, tz)} (the oldest {_hours(fresh.age_hours)} before)."
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
                "age": _hours(f.age_hours) if f.used else "",
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
    if fresh.items_not_fetched and fresh.not_fetched is not None:
        parts.append(
            f'<p class="wb-meta" data-figure="items_not_fetched" '
            f'data-value="{fresh.items_not_fetched}">{fresh.items_not_fetched} item(s) could '
            "not be fetched by the last pull (the next pull retries them):</p>"
        )
        parts.append(table(fresh.not_fetched, max_rows=SHOWN_FAILURES))
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


def _hours(hours: float | None) -> str:
    if hours is None:
        return "never"
    if hours >= 48:
        return f"{hours:.1f} hours ({hours / 24:.1f} days)"
    return f"{hours:.1f} hours"


def _stamp(when: pd.Timestamp) -> pd.Timestamp:
    return when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")


def _iso(when: pd.Timestamp | None) -> str | None:
    return None if when is None or pd.isna(when) else when.isoformat()


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
