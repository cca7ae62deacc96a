"""The two event feeds, for ``notebooks/events.ipynb``: placement events (the international
interface) and domestic on-demand events, per pull run, per day they occurred, by type,
program, campus, weekday and hour, and the latest ones as readable tables.

The partner's spec shows no event field (DESIGN §3): an event's type and time are the store's
columns, found wherever the event keeps them; an event with no time of its own is placed at
the time it was first seen, and the tables and charts say how many were; so is one whose time
is implausible (``workbench.reconcile.plausible``: before 1990, or more than a day ahead),
each listed under "Data problems" with the field and the value it gave. Program and campus
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
from workbench.http.events import event_fields
from workbench.reconcile.plausible import WINDOW, outside, window
from workbench.report.figures import SIDE, STAGE
from workbench.report.markup import (
    clock,
    heading,
    is_missing,
    page,
    paragraph,
    table,
    text,
)
from workbench.store import Store
from workbench.store.cells import field, scalar, utc_text
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
IMPLAUSIBLE = " (implausible)"  # after a time outside the plausible dates
PROBLEM_COLUMNS = ("source", "event id", "field", "value", "counted at")
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
    return parsed.astype("datetime64[us, UTC]").dt.tz_convert(tz or "UTC")


def _now() -> pd.Timestamp:
    """The moment the event feeds are reported at: their plausible dates end a day later."""
    return pd.Timestamp.now(tz="UTC")


def _label(value: Any) -> str:
    return NOT_GIVEN if is_missing(value) or str(value).strip() == "" else str(value).strip()


def event_facts(store: Store, *, tz: str | None = None) -> pd.DataFrame:
    """One row per stored event, its raw JSON left in SQLite: ``source``, ``event_type``,
    ``program`` ("name (code)"), ``campus``, ``occurred_at`` (in zone ``tz``: its own time,
    else, when it has none or an implausible one, when it was first seen),
    ``time_is_first_seen`` (it has none), ``implausible_time``, ``first_seen_at``, ``rowid``."""
    found = _query(
        store,
        "SELECT rowid, source, event_type, occurred_at AS occurred_text, "  # noqa: S608
        f"time_is_first_seen, first_seen_at, {_place_fields(store)} FROM events ORDER BY rowid",
    )
    code = [None if is_missing(v) else str(v).strip() for v in found["program_code"]]
    name = [None if is_missing(v) else str(v).strip() for v in found["program_name"]]
    program = [
        f"{n} ({c})" if c and n and c != n else (n or c or None)
        for c, n in zip(code, name, strict=True)
    ]
    told = _times(found["occurred_text"], None)
    odd = outside(told, _now())
    occurred = told.where(~odd).fillna(_times(found["first_seen_at"], None))
    none = found["time_is_first_seen"].fillna(False).astype(bool) | told.isna()
    return pd.DataFrame(
        {
            "source": found["source"].astype("string"),
            "event_type": found["event_type"].map(_label).astype("string"),
            "program": pd.Series([_label(p) for p in program], dtype="string"),
            "campus": found["campus"].map(_label).astype("string"),
            "occurred_at": occurred.dt.tz_convert(tz or "UTC"),
            "time_is_first_seen": none.to_numpy(),
            "implausible_time": odd.to_numpy(),
            "first_seen_at": found["first_seen_at"],
            "rowid": found["rowid"],
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
    ``attrs["without_time"]``, and with an implausible one: ``attrs["implausible"]``).
    ``facts``: ``event_facts(store, tz=tz)`` when already read."""
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
    out.attrs.update(_placed(facts))
    return out


def _placed(facts: pd.DataFrame) -> dict[str, int]:
    """How many events are placed at the time first seen: with no time of their own
    (``without_time``), with an implausible one (``implausible``)."""
    return {
        "without_time": int(facts["time_is_first_seen"].sum()),
        "implausible": int(facts["implausible_time"].sum()),
    }


def without_time_note(count: int) -> str:
    """What the tables say of the events placed at the time they were first seen."""
    events = "1 event" if count == 1 else f"{count} events"
    return f"{events} had no time of their own: each is counted at the time it was first seen."


def implausible_note(count: int) -> str:
    """What the tables say of the events whose time is implausible."""
    events = "1 event gave a time" if count == 1 else f"{count} events gave times"
    return (
        f"{events} outside the plausible dates ({WINDOW}): each is counted at the time it "
        "was first seen (see Data problems)."
    )


def _notes(counts: Mapping[str, int]) -> str:
    """The notes on events placed at the time first seen, as paragraphs (none: empty)."""
    said = [without_time_note(counts["without_time"])] if counts.get("without_time") else []
    said += [implausible_note(counts["implausible"])] if counts.get("implausible") else []
    return "".join(paragraph(note, "wb-more") for note in said)


def event_problems(store: Store, *, facts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The events whose own time is implausible (:mod:`workbench.reconcile.plausible`):
    their feed, id, the field the time came from (its path in the event), the value as sent,
    and the time they are counted at instead (first seen, UTC). Columns ``PROBLEM_COLUMNS``.
    ``facts``: ``event_facts(store)`` when already read; the raw JSON of these events only
    leaves SQLite."""
    facts = event_facts(store) if facts is None else facts
    odd = facts.loc[facts["implausible_time"], "rowid"]
    if odd.empty:
        return pd.DataFrame({c: pd.Series(dtype="string") for c in PROBLEM_COLUMNS})
    found = _query(
        store,
        "SELECT source, event_id, occurred_at AS occurred_text, raw_json, first_seen_at "
        "FROM events WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid",
        [json.dumps([int(n) for n in odd])],
    )
    where = [_time_field(raw, told) for raw, told in zip(found["raw_json"], found["occurred_text"],
                                                         strict=True)]  # fmt: skip
    return pd.DataFrame(
        {
            "source": found["source"].astype("string"),
            "event id": found["event_id"].astype("string"),
            "field": pd.Series([w[0] for w in where], dtype="string"),
            "value": pd.Series([w[1] for w in where], dtype="string"),
            "counted at": found["first_seen_at"],
        },
        columns=list(PROBLEM_COLUMNS),
    )


def _time_field(raw: Any, stored: Any) -> tuple[str, str]:
    """Where an event keeps its time (a dotted path) and the value there, as sent; else
    ``time`` and the value as stored."""
    try:
        event = json.loads(str(raw))
    except (ValueError, RecursionError):
        event = None
    keys = event_fields(event).paths.get("time")
    if not keys:
        return "time", str(stored)
    value: Any = event
    for key in keys:
        value = value[key]
    return ".".join(map(str, keys)), str(value)


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


def event_days(
    store: Store, *, tz: str | None = None, facts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Per day the events occurred (in zone ``tz``; days without any included, up to a year):
    ``day`` (a date), ``placement``, ``domestic``, ``total``. An event with no time of its own
    counts on the day it was first seen (how many: ``attrs["without_time"]``), and so does one
    whose time is implausible (``attrs["implausible"]``). ``facts``: ``event_facts(store,
    tz=tz)`` when already read."""
    facts = event_facts(store, tz=tz) if facts is None else facts
    days = facts["occurred_at"].dt.tz_localize(None).dt.normalize().rename("day")
    counts = _per_feed(days, facts)
    if len(counts) and (counts.index.max() - counts.index.min()).days <= 366:
        counts = counts.reindex(pd.date_range(counts.index.min(), counts.index.max()), fill_value=0)
    out = counts.rename_axis(index="day").reset_index()
    out["day"] = pd.to_datetime(out["day"]).dt.date if len(out) else pd.Series(dtype="object")
    out.attrs.update(_placed(facts))
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
    time of its own, or an implausible one, by when it was first seen; the later stored first),
    of both feeds or of ``source``; stored columns, ``raw_json`` included. Only these ``n``
    rows are read."""
    if source is not None and source not in FEEDS:
        raise ValueError(f"source is one of {', '.join(FEEDS)}, not {source!r}.")
    columns = ", ".join(LATEST_COLUMNS)
    where = "WHERE source = ? " if source else ""
    # The stored times are fixed-width UTC text: the plausible window compares as text.
    first, last = (utc_text(t.to_pydatetime()) for t in window(_now()))
    return _query(
        store,
        f"SELECT {columns} FROM events {where}"  # noqa: S608 - our own column names
        "ORDER BY CASE WHEN occurred_at BETWEEN ? AND ? THEN occurred_at ELSE first_seen_at "
        "END DESC, rowid DESC LIMIT ?",
        [*([source] if source else []), first, last, max(int(n), 0)],
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
    odd = outside(_times(frame["occurred_at"], None), _now())
    columns: dict[str, list[Any]] = {
        "source": list(frame["source"]),
        f"occurred ({zone})": [
            _occurred(v, flag, bad, tz)
            for v, flag, bad in zip(frame["occurred_at"], flags, odd, strict=True)
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


def _occurred(value: Any, first_seen: Any, implausible: bool, tz: str | None) -> str | None:
    """When an event occurred, to the second in zone ``tz``, said so when that is when it was
    first seen (it had no time of its own) or when it is implausible."""
    stamp = _stamp(value, tz)
    flagged = not is_missing(first_seen) and bool(first_seen)
    mark = FIRST_SEEN if flagged else IMPLAUSIBLE if implausible else ""
    return stamp + mark if stamp is not None else stamp


def _stamp(value: Any, tz: str | None) -> str | None:
    """A time to the second in zone ``tz`` (a no-break space inside: it never wraps in a
    table); text that is not a time as written."""
    if is_missing(value):
        return None
    try:
        return clock(value, tz, seconds=True, space="\u00a0")
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
        if by == "weekday":
            parts.append(_notes(counts.attrs))
    return page(*parts)


def _why_no_events(store: Store) -> str:
    """Why a store holds no event: its pulls skip both feeds (and why), or none ran yet."""
    import json

    pulls = store.table("runs", where="kind = 'pull' ORDER BY id DESC LIMIT 1")
    skipped: dict[str, str] = {}
    if len(pulls) and pulls["summary"].iloc[0]:
        skipped = json.loads(pulls["summary"].iloc[0]).get("skipped") or {}
    if all(role in skipped for role in ("international", "domestic")):
        feeds = [f"{role}: {skipped[role]}" for role in ("international", "domestic")]
        return (
            f"No events: the pulls of this store skip both event feeds ({'; '.join(feeds)}). "
            "A profile with the international or domestic credentials pulls them."
        )
    return "No events stored yet: run `workbench pull`."


def events_section(store: Store, *, max_rows: int = 200, tz: str | None = None) -> HTML:
    """Both feeds: the cap warning, the data problems (``event_problems``: a block with
    ``data-problems``, how many), a summary, counts per pull run and per day they occurred."""
    runs = event_runs(store)
    summary = feed_summary(store)
    if runs.empty and not summary["events"].any():
        return page(paragraph(_why_no_events(store), "wb-empty"))
    warning = cut_off_warning(store)
    alert = f'<div class="wb-figure wb-alert" data-cut-off="domestic">{text(warning)}</div>'
    alert = alert if warning else ""
    facts = event_facts(store, tz=tz)
    days = event_days(store, tz=tz, facts=facts)
    problems = event_problems(store, facts=facts)
    listed = ""
    if len(problems):
        listed = (
            f'<div class="wb-problems" data-problems="{len(problems)}">'
            + heading("Data problems", 4)
            + paragraph(
                f"Times outside the plausible dates ({WINDOW}): each event is counted "
                "at the time it was first seen instead."
            )
            + table(problems, max_rows=max_rows, tz=tz)
            + "</div>"
        )
    return page(
        alert,
        listed,
        heading("Feeds", 4),
        table(summary, tz=tz),
        heading("Per pull run", 4),
        table(runs, max_rows=max_rows, empty="No event list was pulled yet.", tz=tz),
        heading(f"Events per day they occurred ({tz or 'UTC'})", 4),
        table(days.iloc[::-1], max_rows=max_rows, empty="No events stored yet."),
        _notes(days.attrs),
    )
