"""The two event feeds, for ``notebooks/events.ipynb``: placement events (the international
interface) and domestic on-demand events, per pull run, per day they occurred, by type,
program, campus, weekday and hour, and the latest ones as readable tables.

The partner's spec shows no event field (DESIGN §3): an event's type and time are the store's
columns, found wherever the event keeps them; an event with no time of its own is placed at
the time it was first seen, and the tables and charts say how many were. Program and campus
are read from the stored JSON, in the event's payload wherever it keeps one
(:func:`workbench.partner_json.event_fields`: ``payload``, ``data``, ``eventInfo.data``), else at
its top (``programCode``, ``programName``, ``campus``, in any case); a missing one counts as
"(not given)". Times show in zone ``tz`` (None: UTC); the store stays UTC.

>>> display(events_section(store, tz=tz))  # doctest: +SKIP
>>> display(figure_html(events_breakdown_chart(store, tz=tz)))  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.errors import StoreError
from workbench.partner_json import event_fields
from workbench.report.figures import SIDE, STAGE
from workbench.report.markup import (
    heading,
    is_missing,
    local_time,
    page,
    paragraph,
    table,
    text,
)
from workbench.store import Store
from workbench.store.cells import field, scalar
from workbench.store.frames import snake, typed
from workbench.store.lists import EVENT_SOURCES

FEEDS = {"placement": "placement events", "domestic": "domestic events"}
COLORS = {"placement": STAGE, "domestic": SIDE}
RUN_COLUMNS = ("source", "run_id", "taken_at", "listed", "appeared", "vanished")
LATEST_COLUMNS = (
    "source", "event_id", "event_type", "occurred_at", "time_is_first_seen", "first_seen_at",
    "last_seen_at", "on_list", "raw_json",
)  # fmt: skip
NOT_GIVEN = "(not given)"
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
BREAKDOWNS = {  # what events_breakdown counts by -> its heading
    "event_type": "By event type",
    "program": "By program",
    "campus": "By campus",
    "weekday": "By weekday they occurred",
    "hour": "By hour they occurred",
}
EVENT_COLUMNS = 12  # event fields with a column of their own, beyond program and campus
EVENT_CELL_CHARS = 200  # characters of an event's field shown in the latest events' tables
OTHER_FIELDS = "other fields"
FIRST_SEEN = " (first seen)"  # after the time of an event that has none of its own
SECONDS = "%Y-%m-%d\u00a0%H:%M:%S"  # a no-break space: a time never wraps in a table
# The names program and campus go by (any case), first found wins: in the payload, then at top.
PLACE_FIELDS = {
    "program_code": ("programCode", "program_code"),
    "program_name": ("programName", "program_name", "program"),
    "campus": ("campus", "campusName", "campus_name", "campusCode", "campus_code"),
}


def _query(store: Store, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """``sql``'s rows, typed as ``store.table`` types them (times UTC, flags boolean)."""
    try:
        cursor = store.db.execute(sql, list(params))
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot read the events of {store.path}: {exc}.") from exc
    columns = [d[0] for d in cursor.description]
    return typed(pd.DataFrame.from_records(rows, columns=columns))


@functools.lru_cache(maxsize=8)  # SQLite asks for each of an event's fields in turn
def _place(raw: Any) -> tuple[Any, ...]:
    """A stored event's program code, program name and campus (:data:`PLACE_FIELDS`), as
    SQLite values."""
    try:
        event = json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        return (None,) * len(PLACE_FIELDS)
    held = [h for h in (event_fields(event).payload, event) if isinstance(h, Mapping)]
    return tuple(
        scalar(next((v for h in held if (v := field(h, *names)) is not None), None))
        for names in PLACE_FIELDS.values()
    )


def _place_fields(store: Store) -> str:
    """SQL selecting :data:`PLACE_FIELDS` of ``events.raw_json``, read in SQLite row by row
    (the events' JSON never leaves it as a result)."""
    store.db.conn.create_function(
        "workbench_event_place", 2, lambda raw, n: _place(raw)[n], deterministic=True
    )
    return ", ".join(
        f"workbench_event_place(raw_json, {n}) AS {name}" for n, name in enumerate(PLACE_FIELDS)
    )


def _times(values: pd.Series, tz: str | None) -> pd.Series:
    """Stored UTC text (or times) in zone ``tz``; what does not parse is missing."""
    parsed = pd.to_datetime(values.astype("object"), utc=True, errors="coerce", format="ISO8601")
    return parsed.dt.tz_convert(tz or "UTC")


def _label(value: Any) -> str:
    return NOT_GIVEN if is_missing(value) or str(value).strip() == "" else str(value).strip()


def event_facts(store: Store, *, tz: str | None = None) -> pd.DataFrame:
    """One row per stored event, its raw JSON left in SQLite: ``source``, ``event_type``,
    ``program`` ("name (code)"), ``campus``, ``occurred_at`` (in zone ``tz``: its own time,
    else when it was first seen), ``time_is_first_seen``, ``first_seen_at``."""
    found = _query(
        store,
        "SELECT source, event_type, occurred_at AS occurred_text, time_is_first_seen, "  # noqa: S608
        f"first_seen_at, {_place_fields(store)} FROM events ORDER BY rowid",
    )
    code = [None if is_missing(v) else str(v).strip() for v in found["program_code"]]
    name = [None if is_missing(v) else str(v).strip() for v in found["program_name"]]
    program = [
        f"{n} ({c})" if c and n and c != n else (n or c or None)
        for c, n in zip(code, name, strict=True)
    ]
    return pd.DataFrame(
        {
            "source": found["source"].astype("string"),
            "event_type": found["event_type"].map(_label).astype("string"),
            "program": pd.Series([_label(p) for p in program], dtype="string"),
            "campus": found["campus"].map(_label).astype("string"),
            "occurred_at": _times(found["occurred_text"], tz),
            "time_is_first_seen": found["time_is_first_seen"],
            "first_seen_at": found["first_seen_at"],
        }
    )


def _per_feed(groups: pd.Series, facts: pd.DataFrame) -> pd.DataFrame:
    """Counts per value of ``groups`` (index) and feed (columns), with a ``total``."""
    counts = pd.crosstab(groups, facts["source"]) if len(facts) else pd.DataFrame()
    counts = counts.reindex(columns=list(FEEDS), fill_value=0).fillna(0).astype("int64")
    counts["total"] = counts.sum(axis=1)
    return counts.rename_axis(index=None, columns=None)


def events_breakdown(
    store: Store, by: str, *, tz: str | None = None, facts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Events counted by ``by`` (a key of ``BREAKDOWNS``) per feed: a column named ``by``,
    ``placement``, ``domestic``, ``total``. Types, programs and campuses come largest first;
    weekdays (``Mon``..``Sun``) and hours (0..23, in zone ``tz``) in order, each listed, an
    event with no time of its own at the time it was first seen (how many:
    ``attrs["without_time"]``). ``facts``: ``event_facts(store, tz=tz)`` when already read."""
    if by not in BREAKDOWNS:
        raise ValueError(f"events_breakdown counts by one of {', '.join(BREAKDOWNS)}, not {by!r}.")
    facts = event_facts(store, tz=tz) if facts is None else facts
    if by in ("weekday", "hour"):
        when = facts["occurred_at"]
        keys: list[Any] = list(WEEKDAYS) if by == "weekday" else list(range(24))
        values = (
            when.dt.day_of_week.map(dict(enumerate(WEEKDAYS))) if by == "weekday" else when.dt.hour
        )
        counts = _per_feed(values.rename(by), facts).reindex(keys, fill_value=0)
    else:
        counts = _per_feed(facts[by].rename(by), facts)
        counts = counts.sort_values("total", ascending=False, kind="stable")
    out = counts.rename_axis(index=by).reset_index()
    out.attrs["without_time"] = _without_time(facts)
    return out


def _without_time(facts: pd.DataFrame) -> int:
    """How many events had no time of their own (placed at the time first seen)."""
    return int(facts["time_is_first_seen"].fillna(False).sum())


def without_time_note(count: int) -> str:
    """What the tables say of the events placed at the time they were first seen."""
    events = "1 event" if count == 1 else f"{count} events"
    return f"{events} had no time of their own: each is counted at the time it was first seen."


def event_runs(store: Store) -> pd.DataFrame:
    """One row per snapshot of an event list: ``source``, ``run_id``, ``taken_at``, how many
    events it ``listed``, and how many ``appeared`` and ``vanished`` since the one before."""
    names = {v: k for k, v in EVENT_SOURCES.items()}
    snapshots = _query(
        store,
        "SELECT id, list_name, run_id, taken_at, item_count AS listed, appeared, vanished "
        "FROM snapshots WHERE list_name IN (?, ?) ORDER BY taken_at, id",
        list(EVENT_SOURCES.values()),
    )
    out = snapshots.assign(source=snapshots["list_name"].map(names).astype("string"))
    return out[list(RUN_COLUMNS)].reset_index(drop=True)


def event_days(store: Store, *, tz: str | None = None) -> pd.DataFrame:
    """Per day the events occurred (in zone ``tz``; days without any included, up to a year):
    ``day`` (a date), ``placement``, ``domestic``, ``total``. An event with no time of its own
    counts on the day it was first seen (how many: ``attrs["without_time"]``)."""
    facts = event_facts(store, tz=tz)
    days = facts["occurred_at"].dt.tz_localize(None).dt.normalize().rename("day")
    counts = _per_feed(days, facts)
    if len(counts) and (counts.index.max() - counts.index.min()).days <= 366:
        counts = counts.reindex(pd.date_range(counts.index.min(), counts.index.max()), fill_value=0)
    out = counts.rename_axis(index="day").reset_index()
    out["day"] = pd.to_datetime(out["day"]).dt.date if len(out) else pd.Series(dtype="object")
    out.attrs["without_time"] = _without_time(facts)
    return out


def feed_summary(store: Store) -> pd.DataFrame:
    """Per source: events seen, still listed, event types, events with no time of their own,
    first and last seen."""
    found = _query(
        store,
        "SELECT source, count(*) AS events, coalesce(sum(on_list), 0) AS listed_now, "
        "count(DISTINCT event_type) AS event_types, "
        "coalesce(sum(time_is_first_seen), 0) AS without_time, "
        "min(first_seen_at) AS first_seen_at, max(last_seen_at) AS last_seen_at "
        "FROM events GROUP BY source",
    ).set_index("source")
    rows = []
    for source in FEEDS:
        mine = found.loc[source] if source in found.index else None
        rows.append(
            {
                "source": source,
                "events": int(mine["events"]) if mine is not None else 0,
                "listed_now": int(mine["listed_now"]) if mine is not None else 0,
                "event_types": int(mine["event_types"]) if mine is not None else 0,
                "without_time": int(mine["without_time"]) if mine is not None else 0,
                "first_seen": mine["first_seen_at"] if mine is not None else None,
                "last_seen": mine["last_seen_at"] if mine is not None else None,
            }
        )
    return pd.DataFrame(rows)


def latest_events(store: Store, n: int = 50, *, source: str | None = None) -> pd.DataFrame:
    """The ``n`` most recent events, newest first (by when they occurred; an event with no
    time of its own by when it was first seen, the later stored first), of both feeds or of
    ``source``; stored columns, ``raw_json`` included. Only these ``n`` rows are read."""
    if source is not None and source not in FEEDS:
        raise ValueError(f"source is one of {', '.join(FEEDS)}, not {source!r}.")
    columns = ", ".join(LATEST_COLUMNS)
    where = "WHERE source = ? " if source else ""
    return _query(
        store,
        f"SELECT {columns} FROM events {where}"  # noqa: S608 - our own column names
        "ORDER BY occurred_at DESC, rowid DESC LIMIT ?",
        [*([source] if source else []), max(int(n), 0)],
    )


def _cell(value: Any) -> Any:
    """A flattened field for a table cell: lists of plain values joined, others summarised."""
    if isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            return ", ".join("" if v is None else str(v) for v in value)
        return f"{len(value)} items"
    return value


def readable_events(frame: pd.DataFrame, *, tz: str | None = None) -> pd.DataFrame:
    """``latest_events`` as people read them: times to the second in zone ``tz``, each
    event's fields flattened into columns (``payload`` fields without their prefix, in words),
    program and campus first; no raw JSON. Beyond program and campus, only the
    :data:`EVENT_COLUMNS` fields most events have get a column; the rest of an event's fields
    share one ``other fields`` cell ("name: value; ..."), so a partner's odd payload cannot
    make the table thousands of columns wide."""
    rows = [_flat_fields(raw) for raw in frame.get("raw_json", [])]
    seen: dict[str, int] = {}  # field -> events that have it, in the order first found
    for row in rows:
        for name in row:
            seen[name] = seen.get(name, 0) + 1
    first = [c for c in ("program_code", "program_name", "campus") if c in seen]
    ranked = sorted((n for n in seen if n not in first), key=lambda n: -seen[n])  # stable
    kept = set(ranked[:EVENT_COLUMNS])
    own = [*first, *(n for n in seen if n in kept)]
    rest = [n for n in seen if n not in kept and n not in first]
    zone = tz or "UTC"
    ours = ("source", f"occurred ({zone})", "event type", OTHER_FIELDS, f"first seen ({zone})",
            "on list", "event id")  # fmt: skip
    flags = frame.get("time_is_first_seen", pd.Series(False, index=frame.index))
    columns: dict[str, list[Any]] = {
        "source": list(frame["source"]),
        f"occurred ({zone})": [
            _occurred(v, flag, tz) for v, flag in zip(frame["occurred_at"], flags, strict=True)
        ],
        "event type": list(frame["event_type"]),
    }
    for name in own:
        header = name.replace("_", " ")
        while header in columns or header in ours:  # the feed's "source" beside the event's
            header += " (field)"
        columns[header] = [_cell(row.get(name)) for row in rows]
    if rest:
        columns[OTHER_FIELDS] = [_others(row, rest) for row in rows]
    columns[f"first seen ({zone})"] = [_stamp(v, tz) for v in frame["first_seen_at"]]
    columns["on list"] = ["no" if is_missing(v) or not v else "yes" for v in frame["on_list"]]
    columns["event id"] = list(frame["event_id"])
    out = pd.DataFrame(columns, index=frame.index)  # built at once, never column by column
    return out.dropna(axis="columns", how="all")


def _flat_fields(raw: Any) -> dict[str, Any]:
    """One stored event's fields, flattened (its payload's without their prefix:
    ``payload.programCode`` and ``eventInfo.data.programCode`` -> ``program_code``; a field at
    the top and in the payload: the first found), the fields its id, type and time were read
    from left out (they have columns of their own)."""
    try:
        value = json.loads(str(raw))
    except (ValueError, RecursionError):
        return {}
    found = event_fields(value)
    path = {what: snake("_".join(map(str, keys))) for what, keys in found.paths.items()}
    own = {name for what, name in path.items() if what != "payload"}
    payload = f"{path['payload']}_" if "payload" in path else None
    fields: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [("", value)] if isinstance(value, dict) else []
    while stack:  # depth first, in the event's order, without recursion
        prefix, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(reversed([(f"{prefix}{k}_", v) for k, v in node.items()]))
        elif prefix:
            name = snake(prefix[:-1])
            if name in own:
                continue
            name = name.removeprefix(payload) if payload else name
            if is_missing(fields.get(name)):
                fields[name] = node
    return fields


def _others(row: dict[str, Any], names: list[str]) -> str | None:
    """The fields ``names`` of one event as ``name: value; ...`` (None when it has none); the
    table cuts the cell when long."""
    said = [f"{n.replace('_', ' ')}: {_cell(row[n])}" for n in names if n in row]
    return "; ".join(said) or None


def _occurred(value: Any, first_seen: Any, tz: str | None) -> str | None:
    """When an event occurred, to the second in zone ``tz``, said so when that is when it was
    first seen (it had no time of its own)."""
    stamp = _stamp(value, tz)
    flagged = not is_missing(first_seen) and bool(first_seen)
    return stamp + FIRST_SEEN if stamp is not None and flagged else stamp


def _stamp(value: Any, tz: str | None) -> str | None:
    """A time to the second in zone ``tz``; text that is not a time as written."""
    if is_missing(value):
        return None
    try:
        return local_time(value, tz).strftime(SECONDS)
    except (ValueError, TypeError):
        return str(value)


def cut_off_warning(store: Store) -> str | None:
    """What the last pull that read the domestic feed says of it when the feed answered at
    exactly the count asked for (peek does not remove events: those past it may be unseen),
    with what to do: ask the partner when that count is its learned cap, else raise
    ``peek_count``."""
    from workbench.pull import PEEK_LEARNED

    runs = _query(
        store,
        "SELECT id, summary FROM runs WHERE kind = 'pull' AND summary LIKE ? "
        "ORDER BY id DESC LIMIT 50",
        ['%"domestic_events"%'],
    )
    for run_id, said_then in zip(runs["id"], runs["summary"], strict=True):
        try:
            feed = json.loads(str(said_then))["lists"]["domestic_events"]
            if feed.get("error"):
                continue  # that pull did not read the feed: an earlier one says what it saw
            count = int(feed.get("cut_off_at") or 0)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if count <= 0:
            return None
        said = (
            f"Pull run {run_id}: the domestic feed answered {count} events, the most it asked "
            f"for; peek does not remove events, so any past the first {count} may be unseen, "
            "and the counts below may miss them. "
        )
        if store.meta(PEEK_LEARNED) == str(count):
            return said + (
                f"{count} is the most this partner hands out at once (it refused more; meta "
                f"{PEEK_LEARNED}): ask the partner how to read the whole feed."
            )
        return said + (
            f"Raise WORKBENCH_PEEK_COUNT (peek_count in the profile) above {count} if the "
            "partner hands out more at once."
        )
    return None


def latest_events_section(store: Store, n: int = 50, *, tz: str | None = None) -> HTML:
    """Per feed, its ``n`` latest events as a readable table (``readable_events``)."""
    parts = []
    for source, label in FEEDS.items():
        frame = readable_events(latest_events(store, n, source=source), tz=tz)
        empty = f"No {label} stored yet."
        shown = table(frame, max_rows=n, empty=empty, max_chars=EVENT_CELL_CHARS)
        parts += [heading(f"Latest {label}", 4), shown]
    return page(*parts)


def events_breakdown_section(store: Store, *, tz: str | None = None) -> HTML:
    """The tables behind ``events_breakdown_chart``: counts per feed by type, program,
    campus and weekday (hours are in the chart)."""
    parts = []
    facts = event_facts(store, tz=tz)
    for by, title in BREAKDOWNS.items():
        if by == "hour":
            continue
        counts = events_breakdown(store, by, tz=tz, facts=facts)
        suffix = f" ({tz or 'UTC'})" if by == "weekday" else ""
        parts += [heading(title + suffix, 4), table(counts, empty="No events stored yet.")]
        if by == "weekday" and counts.attrs.get("without_time"):
            note = without_time_note(counts.attrs["without_time"])
            parts.append(paragraph(note, "wb-more"))
    return page(*parts)


def events_section(store: Store, *, max_rows: int = 200, tz: str | None = None) -> HTML:
    """Both feeds: the cap warning, a summary, counts per pull run and per day they occurred."""
    runs = event_runs(store)
    summary = feed_summary(store)
    if runs.empty and not summary["events"].any():
        return page(paragraph("No events stored yet: run `workbench pull`.", "wb-empty"))
    warning = cut_off_warning(store)
    alert = f'<div class="wb-figure wb-alert" data-cut-off="domestic">{text(warning)}</div>'
    alert = alert if warning else ""
    days = event_days(store, tz=tz)
    without_time = days.attrs.get("without_time", 0)
    note = without_time_note(without_time)
    note = paragraph(note, "wb-more") if without_time else ""
    return page(
        alert,
        heading("Feeds", 4),
        table(summary, tz=tz),
        heading("Per pull run", 4),
        table(runs, max_rows=max_rows, empty="No event list was pulled yet.", tz=tz),
        heading(f"Events per day they occurred ({tz or 'UTC'})", 4),
        table(days.iloc[::-1], max_rows=max_rows, empty="No events stored yet."),
        note,
    )
