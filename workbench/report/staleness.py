"""How old a store's data is at ``as_of``: as old as the oldest complete read of a list the
profile uses (one never read: stale at any limit), and how the last pull went."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd
from IPython.display import HTML

from workbench.config.settings import text_of
from workbench.reconcile.inputs import timestamp
from workbench.report.markup import moment, page, table, text
from workbench.store.schema import json_object, utc_text

if TYPE_CHECKING:
    from workbench.store import Store

DEFAULT_MAX_AGE_HOURS = 24.0  # what a report calls stale when no --max-age is given
LIST_LABELS = {  # list -> (its interface, what it is)
    "supplier_requests": ("supplier", "transcript requests to us (supplier)"),
    "consumer_transcripts": ("consumer", "transcripts sent to us (consumer)"),
    "placement_events": ("international", "placement events feed (international)"),
    "domestic_events": ("domestic", "on-demand events feed (domestic)"),
}


@dataclass(frozen=True)
class ListFreshness:
    """One list or feed: its last read, its age, what the last pull said of it."""

    name: str
    last_read_at: datetime | None
    age_hours: float | None
    error: str | None = None
    skipped: str | None = None

    @property
    def used(self) -> bool:  # the profile reads it: its age counts
        return self.skipped is None


@dataclass(frozen=True)
class Freshness:
    """How fresh a store is at ``as_of`` (:func:`freshness`); times are UTC."""

    as_of: datetime
    lists: tuple[ListFreshness, ...]
    last_pull_run: int | None = None
    last_pull_at: datetime | None = None  # when the last finished pull finished
    last_pull_status: str | None = None  # ok, partial or failed
    last_ok_pull_at: datetime | None = None
    problems: tuple[str, ...] = ()  # what failed in the last pull, other than single items
    not_fetched: tuple[tuple[str | None, ...], ...] = ()  # (list, id, error): items not got
    unfinished_run: int | None = None  # a pull started after the last finished one, unfinished
    unfinished_started_at: datetime | None = None

    @property
    def items_not_fetched(self) -> int:
        return len(self.not_fetched)

    @property
    def failed_lists(self) -> list[str]:
        return [f.name for f in self.lists if f.error]

    @property
    def never_read(self) -> list[str]:  # lists in use no pull has read yet
        return [f.name for f in self.lists if f.used and f.last_read_at is None]

    @property
    def age_hours(self) -> float | None:
        """Hours since the oldest last read of a list in use; None when one was never read."""
        ages = [f.age_hours for f in self.lists if f.used]
        return None if not ages or None in ages else max(a for a in ages if a is not None)

    def is_stale(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> bool:
        """Older than ``max_age_hours``, or a list in use never read, or nothing pulled."""
        return self.age_hours is None or self.age_hours > max_age_hours

    def warning(self, max_age_hours: float = DEFAULT_MAX_AGE_HOURS) -> str | None:
        """What a stale report says at its top (None when it is not stale)."""
        if not self.is_stale(max_age_hours):
            return None
        if all(f.last_read_at is None for f in self.lists):
            return (
                f"Stale data: no pull has read any list into this store as of "
                f"{self.as_of.astimezone(UTC):%Y-%m-%d %H:%M} UTC. Run `workbench pull` (or "
                "`workbench report` without --no-pull) first."
            )
        if self.never_read:
            return (
                f"Stale data: {', '.join(self.never_read)} never read into this store; the "
                f"figures leave them out. Check the last pull's failures below, then pull again."
            )
        oldest = max((f for f in self.lists if f.used), key=lambda f: f.age_hours or 0.0)
        return (
            f"Stale data: {oldest.name} was last read {hours_text(oldest.age_hours)} before "
            f"this report, more than {max_age_hours:g} hour{'s' * (max_age_hours != 1)}. "
            "Figures may have changed at the partner since: pull again before acting on them."
        )

    def as_dict(self, max_age_hours: float | None = None) -> dict[str, Any]:
        """The figures a delivered summary carries: no id, error text or personal data."""
        max_age_hours = DEFAULT_MAX_AGE_HOURS if max_age_hours is None else max_age_hours
        unfinished = {"run": self.unfinished_run, "started_at": _iso(self.unfinished_started_at)}
        return {
            "last_pull_at": _iso(self.last_pull_at),
            "last_pull_status": self.last_pull_status,
            "items_not_fetched": self.items_not_fetched,
            "failed_lists": self.failed_lists,
            "hours_old": None if self.age_hours is None else round(self.age_hours, 1),
            "max_age_hours": max_age_hours,
            "stale": self.is_stale(max_age_hours),
            "last_read": {f.name: _iso(f.last_read_at) for f in self.lists if f.used},
            "unfinished_pull": None if self.unfinished_run is None else unfinished,
        }


def hours_text(hours: float | None) -> str:
    """An age as a report says it: ``7.5 hours``, ``50.0 hours (2.1 days)``, ``never``."""
    if hours is None:
        return "never"
    return f"{hours:.1f} hours" + (f" ({hours / 24:.1f} days)" if hours >= 48 else "")


def freshness(store: Store, as_of: Any = None) -> Freshness:
    """How fresh ``store`` is at ``as_of`` (None: now)."""
    at = timestamp(pd.Timestamp.now(tz="UTC") if as_of is None else as_of)
    cutoff = utc_text(at)
    snaps = store.table("snapshots", where="taken_at <= ?", params=[cutoff])
    last_read = snaps.groupby("list_name")["taken_at"].max() if len(snaps) else {}
    runs = store.table(
        "runs", where="kind = 'pull' AND finished_at IS NOT NULL AND finished_at <= ?",
        params=[cutoff],
    ).sort_values(["finished_at", "id"], kind="stable")  # fmt: skip
    last = None if runs.empty else runs.iloc[-1]
    summary = {} if last is None else json_object(last["summary"])
    outcome, skipped = json_object(summary.get("lists")), json_object(summary.get("skipped"))
    tried = {str(n) for s in runs["summary"] for n in json_object(json_object(s).get("lists"))}
    lists = []
    for name, (interface, _) in LIST_LABELS.items():
        read = last_read.get(name)
        age = None if read is None else max((at - read).total_seconds() / 3600, 0.0)
        why = skipped.get(interface)
        if why is None and name not in outcome and read is None and name not in tried:
            why = "never pulled"
        error = json_object(outcome.get(name)).get("error")
        if last is not None and name not in outcome:
            error = "not reached: the pull stopped before it"
        used = why is None  # else the profile does not read it: its age does not count
        lists.append(ListFreshness(name, _plain(read), age, text_of(error) if used else None,
                                   None if used else str(why)))  # fmt: skip
    failures = [f for f in summary.get("failures") or [] if isinstance(f, dict)]
    items = [f for f in failures if not str(f.get("id", "")).startswith("(")]
    problems = [f"{f.get('list')}: {f.get('error')}" for f in failures  # a list's: its error
                if f not in items and f.get("id") != "(list)"]  # fmt: skip
    if summary.get("error"):
        problems.insert(0, f"the pull stopped: {summary['error']}")
    since = "" if last is None else utc_text(timestamp(last["finished_at"]))
    crashed = store.table(
        "runs", where="kind = 'pull' AND finished_at IS NULL AND started_at <= ? AND "
        "started_at > ? ORDER BY started_at DESC, id DESC LIMIT 1", params=[cutoff, since],
    )  # fmt: skip
    if len(crashed):
        problems.insert(0, _unfinished(crashed["id"].iloc[0], crashed["started_at"].iloc[0]))
    ok = runs.loc[runs["status"] == "ok", "finished_at"]
    return Freshness(
        as_of=at.to_pydatetime(),
        lists=tuple(lists),
        last_pull_run=None if last is None else int(last["id"]),
        last_pull_at=None if last is None else _plain(last["finished_at"]),
        last_pull_status=None if last is None else str(last["status"]),
        last_ok_pull_at=_plain(ok.max()) if len(ok) else None,
        problems=tuple(problems),
        not_fetched=tuple(tuple(text_of(f.get(k)) for k in ("list", "id", "error")) for f in items),
        unfinished_run=int(crashed["id"].iloc[0]) if len(crashed) else None,
        unfinished_started_at=_plain(crashed["started_at"].iloc[0]) if len(crashed) else None,
    )


def freshness_section(
    fresh: Freshness, *, max_age_hours: float | None = None, tz: str | None = None
) -> HTML:
    """Whether the data is stale, the last pull and its failures, each list's read."""
    limit = DEFAULT_MAX_AGE_HOURS if max_age_hours is None else max_age_hours
    stale = fresh.is_stale(limit)
    age = "" if fresh.age_hours is None else f"{fresh.age_hours:.1f}"
    said = fresh.warning(limit) or (
        f"Fresh data: every list in use was read within {limit:g} hours of "
        f"{moment(fresh.as_of, tz)} (the oldest {hours_text(fresh.age_hours)} before)."
    )
    parts = [
        f'<h2>Freshness</h2><div class="wb-figure{" wb-alert" * stale}" data-freshness="'
        f'{"stale" if stale else "fresh"}" data-age-hours="{age}" '
        f'data-max-age-hours="{text(float(limit))}"><strong>{text(said)}</strong></div>'
    ]
    if fresh.unfinished_run is not None:
        line = _unfinished(fresh.unfinished_run, fresh.unfinished_started_at, tz)
        parts.append(
            f'<p class="wb-figure wb-alert" data-unfinished-run="{fresh.unfinished_run}">'
            f"{text(line[0].upper() + line[1:])}. If no pull is running, pull again.</p>"
        )
    parts.append(_last_pull(fresh, tz))
    rows = pd.DataFrame([
        {"list": f.name, "what": LIST_LABELS[f.name][1], "last read": f.last_read_at,
         "age": hours_text(f.age_hours) if f.used else "",
         "in the last pull": f"skipped ({f.skipped})" if not f.used else f"FAILED: {f.error}"
         if f.error else "read" if f.last_read_at else "not read"}
        for f in fresh.lists
    ])  # fmt: skip
    parts.append(table(rows.assign(**{"last read": pd.to_datetime(rows["last read"], utc=True)}),
                       tz=tz))  # fmt: skip
    if n := fresh.items_not_fetched:
        parts.append(
            f'<p class="wb-meta" data-figure="items_not_fetched" data-value="{n}">{n} item(s) '
            "could not be fetched by the last pull (the next pull retries them):</p>"
        )
        frame = pd.DataFrame(list(fresh.not_fetched), columns=["list", "id", "error"])
        parts.append(table(frame.astype("string"), max_rows=20))
    return page(*parts)


def _last_pull(fresh: Freshness, tz: str | None) -> str:
    if fresh.last_pull_at is None:
        return '<p class="wb-meta" data-last-pull="none">No pull has finished in this store.</p>'
    status = fresh.last_pull_status or ""
    line = f"The last pull (run {fresh.last_pull_run}) finished {moment(fresh.last_pull_at, tz)}: "
    line += status
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


def _unfinished(run: Any, started: Any, tz: str | None = None) -> str:
    when = moment(started, tz)
    return f"pull run {run} started {when} and never finished (crashed or still running)"


def _plain(when: Any) -> datetime | None:
    """A stored time as a plain UTC ``datetime``; None if missing."""
    return None if when is None or pd.isna(when) else timestamp(when).to_pydatetime()


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.isoformat()
