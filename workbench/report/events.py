"""The two event feeds for ``notebooks/events.ipynb``, counted in SQLite by when each event
occurred (when first seen if it has no plausible time of its own), and the latest as tables."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import pandas as pd
from IPython.display import HTML

from workbench.errors import StoreError
from workbench.http.events import event_fields, keys_named
from workbench.reconcile.inputs import WINDOW, outside, window
from workbench.report.markup import clock, heading, is_missing, page, paragraph, table, text
from workbench.store import Store
from workbench.store.frames import snake, typed
from workbench.store.lists import EVENT_SOURCES
from workbench.store.schema import utc_text

FEEDS = {"placement": "placement events", "domestic": "domestic events"}
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
    return typed(pd.DataFrame.from_records(rows, columns=[d[0] for d in cursor.description]))


@functools.lru_cache(maxsize=8)  # SQLite asks for each of an event's places in turn
def _places(raw: Any) -> tuple[str, str]:
    """A stored event's program ("name (code)") and campus, "(not given)" when absent."""
    try:
        event = json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        event = None
    held = [h for h in (event_fields(event).payload, event) if isinstance(h, dict)]
    found = [
        next((str(v).strip() for h in held for n in names if len(k := keys_named(h, n)) == 1
              and (v := h[k[0]]) not in (None, "") and str(v).strip()), None)
        for names in PLACE_FIELDS.values()
    ]  # fmt: skip
    code, name, campus = found
    program = f"{name} ({code})" if code and name and code != name else (name or code)
    return program or "(not given)", campus or "(not given)"


def _times(values: pd.Series, tz: str | None = None) -> pd.Series:
    """Stored UTC text (or times) in zone ``tz``; what does not parse is missing."""
    parsed = pd.to_datetime(values.astype("object"), utc=True, errors="coerce", format="ISO8601")
    return parsed.astype("datetime64[us, UTC]").dt.tz_convert(tz or "UTC")


def event_facts(store: Store, *, tz: str | None = None) -> pd.DataFrame:
    """One row per stored event: the breakdowns' keys and when it occurred, in zone ``tz``."""
    store.db.conn.create_function(
        "workbench_event_place", 2, lambda raw, n: _places(raw)[n], deterministic=True
    )
    found = _query(
        store,
        "SELECT rowid, source, event_type, occurred_at, time_is_first_seen, first_seen_at, "
        "workbench_event_place(raw_json, 0) AS program, "
        "workbench_event_place(raw_json, 1) AS campus FROM events ORDER BY rowid",
    )
    told = _times(found["occurred_at"])
    odd = outside(told, pd.Timestamp.now(tz="UTC"))
    occurred = told.where(~odd).fillna(_times(found["first_seen_at"])).dt.tz_convert(tz or "UTC")
    kinds = found["event_type"].astype("string").str.strip()
    return pd.DataFrame({
        "source": found["source"].astype("string"),
        "event_type": kinds.where(kinds.fillna("") != "", "(not given)"),
        "program": found["program"].astype("string"),
        "campus": found["campus"].astype("string"),
        "weekday": occurred.dt.day_of_week.map(dict(enumerate(WEEKDAYS))),
        "hour": occurred.dt.hour,
        "day": occurred.dt.tz_localize(None).dt.normalize(),
        "occurred_at": occurred,
        "time_is_first_seen": (found["time_is_first_seen"].fillna(False).astype(bool)
                               | told.isna()).to_numpy(),
        "implausible_time": odd.to_numpy(),
        "rowid": found["rowid"],
    })  # fmt: skip


def _counted(facts: pd.DataFrame, by: str, keys: Any = None) -> pd.DataFrame:
    """Events per value of ``facts[by]`` (or ``keys``) and feed, with a ``total``."""
    counts = pd.crosstab(facts[by], facts["source"]) if len(facts) else pd.DataFrame()
    counts = counts.reindex(columns=list(FEEDS), fill_value=0).fillna(0).astype("int64")
    counts["total"] = counts.sum(axis=1)
    if keys is not None:
        counts = counts.reindex(keys, fill_value=0)
    elif by != "day":
        counts = counts.sort_values("total", ascending=False, kind="stable")
    out = counts.rename_axis(index=by, columns=None).reset_index()
    out.attrs.update(without_time=int(facts["time_is_first_seen"].sum()),
                     implausible=int(facts["implausible_time"].sum()))  # fmt: skip
    return out


def events_breakdown(
    store: Store, by: str, *, tz: str | None = None, facts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Events per value of ``by`` (a key of ``BREAKDOWNS``) and feed, with a ``total``."""
    if by not in BREAKDOWNS:
        raise ValueError(f"events_breakdown counts by one of {', '.join(BREAKDOWNS)}, not {by!r}.")
    keys = {"weekday": list(WEEKDAYS), "hour": list(range(24))}.get(by)
    return _counted(event_facts(store, tz=tz) if facts is None else facts, by, keys)


def event_days(
    store: Store, *, tz: str | None = None, facts: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Events per day they occurred in zone ``tz`` (empty days included, up to a year)."""
    facts = event_facts(store, tz=tz) if facts is None else facts
    days = facts["day"].dropna()
    span = None
    if len(days) and (days.max() - days.min()).days <= 366:
        span = pd.date_range(days.min(), days.max())
    out = _counted(facts, "day", span)
    out["day"] = pd.to_datetime(out["day"]).dt.date if len(out) else pd.Series(dtype="object")
    return out


def _notes(facts: pd.DataFrame) -> str:
    """What the report says of the events counted when first seen (none: empty)."""
    said = []
    if n := int(facts["time_is_first_seen"].sum()):
        said.append(f"{'1 event' if n == 1 else f'{n} events'} had no time of their own: each "
                    "is counted at the time it was first seen.")  # fmt: skip
    if n := int(facts["implausible_time"].sum()):
        said.append(f"{'1 event gave a time' if n == 1 else f'{n} events gave times'} outside "
                    f"the plausible dates ({WINDOW}): each is counted at the time it was first "
                    "seen (see Data problems).")  # fmt: skip
    return "".join(paragraph(note, "wb-more") for note in said)


def event_problems(store: Store, *, facts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The events whose own time is implausible: the field, its value, when counted."""
    facts = event_facts(store) if facts is None else facts
    odd = [int(n) for n in facts.loc[facts["implausible_time"], "rowid"]]
    columns = ["source", "event id", "field", "value", "counted at"]
    if not odd:  # the events' JSON stays in SQLite
        return pd.DataFrame(columns=columns)
    found = _query(store, "SELECT source, event_id, occurred_at, raw_json, first_seen_at FROM "
                   "events WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid",
                   [json.dumps(odd)])  # fmt: skip
    rows = []
    for source, event_id, stored, raw, seen in found.itertuples(index=False):
        event = json.loads(str(raw))
        keys, value = event_fields(event).paths.get("time"), event
        for key in keys or ():
            value = value[key]
        where = (".".join(map(str, keys)), str(value)) if keys else ("time", str(stored))
        rows.append((source, event_id, *where, seen))
    return pd.DataFrame(rows, columns=columns).astype({c: "string" for c in columns[:4]})


def event_runs(store: Store) -> pd.DataFrame:
    """One row per snapshot of an event list: events listed, appeared and vanished."""
    names = {v: k for k, v in EVENT_SOURCES.items()}
    found = _query(store, "SELECT list_name, run_id, taken_at, item_count AS listed, appeared, "
                   "vanished FROM snapshots WHERE list_name IN (?, ?) ORDER BY taken_at, id",
                   list(EVENT_SOURCES.values()))  # fmt: skip
    found.insert(0, "source", found.pop("list_name").map(names).astype("string"))
    return found


def feed_summary(store: Store) -> pd.DataFrame:
    """Per feed: events seen, still listed, types, without time, first and last seen."""
    found = _query(store, "SELECT source, count(*) AS events, coalesce(sum(on_list), 0) AS "
                   "listed_now, count(DISTINCT event_type) AS event_types, coalesce(sum("
                   "time_is_first_seen), 0) AS without_time, min(first_seen_at) AS first_seen_at, "
                   "max(last_seen_at) AS last_seen_at FROM events GROUP BY source")  # fmt: skip
    found = found.set_index("source").reindex(list(FEEDS)).rename_axis("source").reset_index()
    counts = ["events", "listed_now", "event_types", "without_time"]
    found[counts] = found[counts].fillna(0).astype("int64")
    return found.rename(columns={"first_seen_at": "first_seen", "last_seen_at": "last_seen"})


def latest_events(store: Store, n: int = 50, *, source: str | None = None) -> pd.DataFrame:
    """The ``n`` most recent events of both feeds (or ``source``), newest first."""
    if source is not None and source not in FEEDS:
        raise ValueError(f"source is one of {', '.join(FEEDS)}, not {source!r}.")
    first, last = (utc_text(t) for t in window(pd.Timestamp.now()))  # stored text compares
    where = "WHERE source = ? " if source else ""
    return _query(
        store,
        "SELECT source, event_id, event_type, occurred_at, time_is_first_seen, first_seen_at, "  # noqa: S608
        f"last_seen_at, on_list, raw_json FROM events {where}ORDER BY CASE WHEN occurred_at "
        "BETWEEN ? AND ? THEN occurred_at ELSE first_seen_at END DESC, rowid DESC LIMIT ?",
        [*([source] if source else []), first, last, max(int(n), 0)],
    )


def readable_events(frame: pd.DataFrame, *, tz: str | None = None) -> pd.DataFrame:
    """:func:`latest_events` as people read them: times in zone ``tz``, fields in columns."""
    rows = [_flat_fields(raw) for raw in frame["raw_json"]]
    seen: dict[str, int] = {}  # field -> events that have it, in the order first found
    for row in rows:
        for name in row:
            seen[name] = seen.get(name, 0) + 1
    first = [c for c in PLACE_FIELDS if c in seen]
    ranked = sorted((n for n in seen if n not in first), key=lambda n: -seen[n])  # stable
    own = [*first, *(n for n in seen if n in ranked[:EVENT_COLUMNS])]
    zone = tz or "UTC"
    odd = outside(_times(frame["occurred_at"]), pd.Timestamp.now(tz="UTC"))
    marks = [" (first seen)" if not is_missing(f) and f else " (implausible)" if bad else ""
             for f, bad in zip(frame["time_is_first_seen"], odd, strict=True)]  # fmt: skip
    columns: dict[str, list[Any]] = {
        "source": list(frame["source"]),
        f"occurred ({zone})": [None if (s := _stamp(v, tz)) is None else s + mark
                               for v, mark in zip(frame["occurred_at"], marks, strict=True)],
        "event type": list(frame["event_type"]),
    }  # fmt: skip
    ours = {*columns, OTHER_FIELDS, f"first seen ({zone})", "on list", "event id"}
    for name in own:
        header = name.replace("_", " ")
        while header in ours or header in columns:  # the feed's "source" beside the event's
            header += " (field)"
        columns[header] = [_cell(row.get(name)) for row in rows]
    if rest := [n for n in seen if n not in own]:
        said = ("; ".join(f"{n.replace('_', ' ')}: {_cell(r[n])}" for n in rest if n in r)
                for r in rows)  # fmt: skip
        columns[OTHER_FIELDS] = [line or None for line in said]
    columns[f"first seen ({zone})"] = [_stamp(v, tz) for v in frame["first_seen_at"]]
    columns["on list"] = ["no" if is_missing(v) or not v else "yes" for v in frame["on_list"]]
    columns["event id"] = list(frame["event_id"])
    return pd.DataFrame(columns, index=frame.index).dropna(axis="columns", how="all")


def _flat_fields(raw: Any) -> dict[str, Any]:
    """One event's fields flattened (payload's unprefixed), less its id, type and time."""
    try:
        value = json.loads(str(raw))
    except (ValueError, RecursionError):
        return {}
    paths = {what: snake("_".join(map(str, keys))) for what, keys in
             event_fields(value).paths.items()}  # fmt: skip
    own = {name for what, name in paths.items() if what != "payload"}
    payload = f"{paths['payload']}_" if "payload" in paths else None
    fields: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [("", value)] if isinstance(value, dict) else []
    while stack:  # depth first, in the event's order, without recursion
        prefix, node = stack.pop()
        if isinstance(node, dict) and node:
            stack.extend(reversed([(f"{prefix}{k}_", v) for k, v in node.items()]))
        elif prefix and (name := snake(prefix[:-1])) not in own:
            name = name.removeprefix(payload) if payload else name
            if is_missing(fields.get(name)):
                fields[name] = node
    return fields


def _cell(value: Any) -> Any:
    """A flattened field for a table cell: lists of plain values joined, others summarised."""
    if not isinstance(value, list):
        return value
    if all(not isinstance(v, dict | list) for v in value):
        return ", ".join("" if v is None else str(v) for v in value)
    return f"{len(value)} items"


def _stamp(value: Any, tz: str | None) -> str | None:
    """A time to the second in zone ``tz`` that never wraps; other text as written."""
    if is_missing(value):
        return None
    try:
        return clock(value, tz, seconds=True, space="\u00a0")
    except (ValueError, TypeError):
        return str(value)


def cut_off_warning(store: Store) -> str | None:
    """What to do when the domestic feed's last read was cut off at the count asked."""
    from workbench.pull import PEEK_LEARNED

    runs = _query(store, "SELECT id, summary FROM runs WHERE kind = 'pull' AND summary LIKE ? "
                  "ORDER BY id DESC LIMIT 50", ['%"domestic_events"%'])  # fmt: skip
    for run_id, summary in zip(runs["id"], runs["summary"], strict=True):
        try:
            feed = json.loads(str(summary))["lists"]["domestic_events"]
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
        return said + (f"Raise WORKBENCH_PEEK_COUNT (peek_count in the profile) above {count} "
                       "if the partner hands out more at once.")  # fmt: skip
    return None


def latest_events_section(store: Store, n: int = 50, *, tz: str | None = None) -> HTML:
    """Per feed, its ``n`` latest events as a readable table (:func:`readable_events`)."""
    parts = []
    for source, label in FEEDS.items():
        frame = readable_events(latest_events(store, n, source=source), tz=tz)
        empty = f"No {label} stored yet."
        shown = table(frame, max_rows=n, empty=empty, max_chars=EVENT_CELL_CHARS)
        parts += [heading(f"Latest {label}", 4), shown]
    return page(*parts)


def events_section(store: Store, *, max_rows: int = 200, tz: str | None = None) -> HTML:
    """Both feeds: the cap warning, data problems, summary, per pull run (the charts count
    per day and per type, program, campus, weekday and hour)."""
    runs, summary = event_runs(store), feed_summary(store)
    if runs.empty and not summary["events"].any():
        return page(paragraph(_why_no_events(store), "wb-empty"))
    warning = cut_off_warning(store)
    facts = event_facts(store, tz=tz)
    problems = event_problems(store, facts=facts)
    return page(
        f'<div class="wb-figure wb-alert" data-cut-off="domestic">{text(warning)}</div>'
        if warning else "",
        f'<div class="wb-problems" data-problems="{len(problems)}">{heading("Data problems", 4)}'
        + paragraph(f"Times outside the plausible dates ({WINDOW}): each event is counted at "
                    "the time it was first seen instead.")
        + table(problems, max_rows=max_rows, tz=tz) + "</div>" if len(problems) else "",
        heading("Feeds", 4),
        table(summary, tz=tz),
        heading("Per pull run", 4),
        table(runs, max_rows=max_rows, empty="No event list was pulled yet.", tz=tz),
        _notes(facts),
    )  # fmt: skip


def _why_no_events(store: Store) -> str:
    """Why a store holds no event: its pulls skip both feeds (and why), or none ran yet."""
    pulls = store.table("runs", where="kind = 'pull' ORDER BY id DESC LIMIT 1")
    said = pulls["summary"].iloc[0] if len(pulls) else None
    skipped = (json.loads(said).get("skipped") or {}) if said else {}
    if all(role in skipped for role in ("international", "domestic")):
        feeds = "; ".join(f"{role}: {skipped[role]}" for role in ("international", "domestic"))
        return (f"No events: the pulls of this store skip both event feeds ({feeds}). A profile "
                "with the international or domestic credentials pulls them.")  # fmt: skip
    return "No events stored yet: run `workbench pull`."
