"""The two event feeds, for ``notebooks/events.ipynb``: placement events (the international
interface) and domestic on-demand events, per pull run, per day they occurred, by type,
program, campus, weekday and hour, and the latest ones as readable tables.

The partner's spec shows no event field (DESIGN §3): program and campus are read from the
stored JSON where the sandbox and OCAS put them (``payload.programCode``, ``programName``,
``campus``, else the same names at the top); a missing one counts as "(not given)". Times
show in zone ``tz`` (None: UTC); the store stays UTC.

>>> display(events_section(store, tz=tz))  # doctest: +SKIP
>>> display(figure_html(events_breakdown_chart(store, tz=tz)))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.errors import StoreError
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
from workbench.store.frames import snake, typed
from workbench.store.lists import EVENT_SOURCES

FEEDS = {"placement": "placement events", "domestic": "domestic events"}
COLORS = {"placement": STAGE, "domestic": SIDE}
RUN_COLUMNS = ("source", "run_id", "taken_at", "listed", "appeared", "vanished")
LATEST_COLUMNS = (
    "source", "event_id", "event_type", "occurred_at", "first_seen_at", "last_seen_at",
    "on_list", "raw_json",
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
_EVENT_OWN = {"event_id", "id", "event_type", "type", "occurred_at", "timestamp"}  # columns
SECONDS = "%Y-%m-%d\u00a0%H:%M:%S"  # a no-break space: a time never wraps in a table
_ISO = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T*"  # a time as the store writes it (UTC)
# Where an event's fields are, first found wins (JSON paths into the stored event).
_FIELDS = {
    "program_code": ("$.payload.programCode", "$.programCode", "$.payload.program_code",
                     "$.program_code"),
    "program_name": ("$.payload.programName", "$.programName", "$.payload.program_name",
                     "$.program_name", "$.payload.program", "$.program"),
    "campus": ("$.payload.campus", "$.campus", "$.payload.campusName", "$.campusName",
               "$.payload.campusCode", "$.campusCode"),
}  # fmt: skip


def _query(store: Store, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """``sql``'s rows, typed as ``store.table`` types them (times UTC, flags boolean)."""
    try:
        cursor = store.db.execute(sql, list(params))
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot read the events of {store.path}: {exc}.") from exc
    columns = [d[0] for d in cursor.description]
    return typed(pd.DataFrame.from_records(rows, columns=columns))


def _json_field(paths: Sequence[str]) -> str:
    found = ", ".join(f"json_extract(raw_json, '{p}')" for p in paths)
    return f"CASE WHEN json_valid(raw_json) THEN coalesce({found}, NULL) END"


def _times(values: pd.Series, tz: str | None) -> pd.Series:
    """Stored UTC text (or times) in zone ``tz``; what does not parse is missing."""
    parsed = pd.to_datetime(values.astype("object"), utc=True, errors="coerce", format="ISO8601")
    return parsed.dt.tz_convert(tz or "UTC")


def _label(value: Any) -> str:
    return NOT_GIVEN if is_missing(value) or str(value).strip() == "" else str(value).strip()


def event_facts(store: Store, *, tz: str | None = None) -> pd.DataFrame:
    """One row per stored event, its raw JSON left in SQLite: ``source``, ``event_type``,
    ``program`` ("name (code)"), ``campus``, ``occurred_at`` (in zone ``tz``; missing when
    absent or unreadable), ``first_seen_at``."""
    fields = ", ".join(f"{_json_field(paths)} AS {name}" for name, paths in _FIELDS.items())
    found = _query(
        store,
        "SELECT source, event_type, occurred_at AS occurred_text, first_seen_at, "  # noqa: S608
        f"{fields} FROM events ORDER BY rowid",
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
    weekdays (``Mon``..``Sun``) and hours (0..23, in zone ``tz``) in order, each listed, and
    events without an occurrence time are left out of them (``attrs["undated"]``).
    ``facts``: ``event_facts(store, tz=tz)`` when already read."""
    if by not in BREAKDOWNS:
        raise ValueError(f"events_breakdown counts by one of {', '.join(BREAKDOWNS)}, not {by!r}.")
    facts = event_facts(store, tz=tz) if facts is None else facts
    undated = 0
    if by in ("weekday", "hour"):
        dated = facts[facts["occurred_at"].notna()]
        undated = len(facts) - len(dated)
        when = dated["occurred_at"]
        keys: list[Any] = list(WEEKDAYS) if by == "weekday" else list(range(24))
        values = (
            when.dt.day_of_week.map(dict(enumerate(WEEKDAYS))) if by == "weekday" else when.dt.hour
        )
        counts = _per_feed(values.rename(by), dated).reindex(keys, fill_value=0)
    else:
        counts = _per_feed(facts[by].rename(by), facts)
        counts = counts.sort_values("total", ascending=False, kind="stable")
    out = counts.rename_axis(index=by).reset_index()
    out.attrs["undated"] = undated
    return out


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
    ``day`` (a date), ``placement``, ``domestic``, ``total``. Events without a readable
    occurrence time are left out and counted in ``attrs["undated"]``."""
    facts = event_facts(store, tz=tz)
    dated = facts[facts["occurred_at"].notna()]
    days = dated["occurred_at"].dt.tz_localize(None).dt.normalize().rename("day")
    counts = _per_feed(days, dated)
    if len(counts) and (counts.index.max() - counts.index.min()).days <= 366:
        counts = counts.reindex(pd.date_range(counts.index.min(), counts.index.max()), fill_value=0)
    out = counts.rename_axis(index="day").reset_index()
    out["day"] = pd.to_datetime(out["day"]).dt.date if len(out) else pd.Series(dtype="object")
    out.attrs["undated"] = int(len(facts) - len(dated))
    return out


def feed_summary(store: Store) -> pd.DataFrame:
    """Per source: events seen, still listed, event types, first and last seen."""
    found = _query(
        store,
        "SELECT source, count(*) AS events, coalesce(sum(on_list), 0) AS listed_now, "
        "count(DISTINCT event_type) AS event_types, min(first_seen_at) AS first_seen_at, "
        "max(last_seen_at) AS last_seen_at FROM events GROUP BY source",
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
                "first_seen": mine["first_seen_at"] if mine is not None else None,
                "last_seen": mine["last_seen_at"] if mine is not None else None,
            }
        )
    return pd.DataFrame(rows)


def latest_events(store: Store, n: int = 50, *, source: str | None = None) -> pd.DataFrame:
    """The ``n`` most recent events (by when they occurred, else, when that is absent or not a
    time, first seen), of both feeds or of ``source``; stored columns, ``raw_json`` included.
    Only these ``n`` rows are read."""
    if source is not None and source not in FEEDS:
        raise ValueError(f"source is one of {', '.join(FEEDS)}, not {source!r}.")
    columns = ", ".join(LATEST_COLUMNS)
    where = "WHERE source = ? " if source else ""
    return _query(
        store,
        f"SELECT {columns} FROM events {where}"  # noqa: S608 - our own column names
        f"ORDER BY CASE WHEN occurred_at GLOB '{_ISO}' THEN occurred_at ELSE first_seen_at END "
        "DESC, rowid LIMIT ?",
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
    rows = [_event_fields(raw) for raw in frame.get("raw_json", [])]
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
    columns: dict[str, list[Any]] = {
        "source": list(frame["source"]),
        f"occurred ({zone})": [_stamp(v, tz) for v in frame["occurred_at"]],
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


def _event_fields(raw: Any) -> dict[str, Any]:
    """One stored event's fields, flattened (``payload.programCode`` -> ``program_code``; a
    field at the top and in the payload: the first found), its id, type and time left out."""
    try:
        value = json.loads(str(raw))
    except (ValueError, RecursionError):
        return {}
    fields: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [("", value)] if isinstance(value, dict) else []
    while stack:  # depth first, in the event's order, without recursion
        prefix, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(reversed([(f"{prefix}{k}_", v) for k, v in node.items()]))
        elif prefix:
            name = snake(prefix[:-1]).removeprefix("payload_")
            if name not in _EVENT_OWN and is_missing(fields.get(name)):
                fields[name] = node
    return fields


def _others(row: dict[str, Any], names: list[str]) -> str | None:
    """The fields ``names`` of one event as ``name: value; ...`` (None when it has none); the
    table cuts the cell when long."""
    said = [f"{n.replace('_', ' ')}: {_cell(row[n])}" for n in names if n in row]
    return "; ".join(said) or None


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
        if counts.attrs.get("undated"):
            note = f"{counts.attrs['undated']} events without an occurrence time are not counted."
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
    undated = days.attrs.get("undated", 0)
    note = f"{undated} events without an occurrence time are not counted per day."
    note = paragraph(note, "wb-more") if undated else ""
    return page(
        alert,
        heading("Feeds", 4),
        table(summary, tz=tz),
        heading("Per pull run", 4),
        table(runs, max_rows=max_rows, empty="No event list was pulled yet.", tz=tz),
        heading(f"Events per day they occurred ({tz or 'UTC'})", 4),
        table(days.iloc[::-1], max_rows=max_rows, empty="No event has an occurrence time."),
        note,
    )
