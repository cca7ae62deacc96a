"""The two event feeds over time, for ``notebooks/events.ipynb``: placement events (the
international interface) and domestic on-demand events.

>>> display(events_section(store))  # doctest: +SKIP
>>> display(figure_html(events_chart(store)))  # doctest: +SKIP
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

import pandas as pd
from IPython.display import HTML
from matplotlib.figure import Figure

from workbench.errors import StoreError
from workbench.report.figures import SIDE, STAGE, blank_figure, no_data
from workbench.report.markup import heading, page, paragraph, table
from workbench.store import Store
from workbench.store.frames import typed
from workbench.store.lists import EVENT_SOURCES

FEEDS = {"placement": "placement events", "domestic": "domestic events"}
RUN_COLUMNS = ("source", "run_id", "taken_at", "listed", "appeared", "vanished")
LATEST_COLUMNS = (
    "source", "event_id", "event_type", "occurred_at", "first_seen_at", "last_seen_at",
    "on_list", "raw_json",
)  # fmt: skip
RAW_SHOWN = 300  # characters of an event's raw JSON shown in the latest events


def _query(store: Store, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
    """``sql``'s rows, typed as ``store.table`` types them (times UTC, flags boolean)."""
    try:
        cursor = store.db.execute(sql, list(params))
        rows = cursor.fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"Cannot read the events of {store.path}: {exc}.") from exc
    columns = [d[0] for d in cursor.description]
    return typed(pd.DataFrame.from_records(rows, columns=columns))


def event_runs(store: Store) -> pd.DataFrame:
    """One row per snapshot of an event list: ``source``, ``run_id``, ``taken_at``, how many
    events it ``listed``, and how many ``appeared`` and ``vanished`` since the one before."""
    names = {v: k for k, v in EVENT_SOURCES.items()}
    snapshots = store.table(
        "snapshots", where="list_name IN (?, ?)", params=list(EVENT_SOURCES.values())
    )
    out = snapshots.assign(source=snapshots["list_name"].map(names).astype("string"))
    out = out.rename(columns={"item_count": "listed"})
    return out.sort_values(["taken_at", "id"], ignore_index=True)[list(RUN_COLUMNS)]


def event_days(store: Store) -> pd.DataFrame:
    """Per UTC day and source: events first seen that day (``new``). Counted in SQLite: the
    store writes every ``first_seen_at`` as ISO text in UTC, so its first ten characters are
    the UTC day."""
    counts = _query(
        store,
        "SELECT substr(first_seen_at, 1, 10) AS day, source, count(*) AS new FROM events "
        "GROUP BY day, source ORDER BY day",
    )
    if counts.empty:
        return pd.DataFrame({"day": pd.Series(dtype="string"), **{s: pd.Series(dtype="int64")
                                                                 for s in FEEDS}})  # fmt: skip
    by_day = counts.pivot(index="day", columns="source", values="new")
    by_day = by_day.reindex(columns=list(FEEDS)).fillna(0).astype("int64")
    return by_day.rename_axis(index="day", columns=None).reset_index()


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


def latest_events(store: Store, n: int = 50) -> pd.DataFrame:
    """The ``n`` most recent events of both feeds (by when they occurred, else first seen).

    Only these ``n`` rows are read: their raw JSON may be long, the feeds may be long."""
    columns = ", ".join(LATEST_COLUMNS)
    return _query(
        store,
        f"SELECT {columns} FROM events "  # noqa: S608 - our own column names
        "ORDER BY coalesce(occurred_at, first_seen_at) DESC, rowid LIMIT ?",
        [max(int(n), 0)],
    )


def cut_off_warning(store: Store) -> str | None:
    """What the last pull that read the domestic feed says of it when the feed answered at
    exactly the count asked for (peek does not remove events: those past it may be unseen)."""
    runs = _query(
        store,
        "SELECT id, summary FROM runs WHERE kind = 'pull' AND summary LIKE ? "
        "ORDER BY id DESC LIMIT 50",
        ['%"domestic_events"%'],
    )
    for run_id, text in zip(runs["id"], runs["summary"], strict=True):
        try:
            feed = json.loads(str(text))["lists"]["domestic_events"]
            if feed.get("error"):
                continue  # that pull did not read the feed: an earlier one says what it saw
            count = int(feed.get("cut_off_at") or 0)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        if count <= 0:
            return None
        return (
            f"Pull run {run_id}: the domestic feed answered {count} events, the most it asked "
            f"for; peek does not remove events, so any past the first {count} may be unseen "
            "(that run's failures say what to do)."
        )
    return None


def events_chart(store: Store) -> Figure:
    """Per feed, over the pull runs: events listed (line) and events that appeared (bars)."""
    runs = event_runs(store)
    fig = blank_figure(10, 4)
    axes = fig.subplots(1, 2, sharey=False)
    for ax, (source, label) in zip(axes, FEEDS.items(), strict=True):
        mine = runs[runs["source"] == source]
        if mine.empty:
            no_data(ax, label)
            continue
        ax.set_title(label)
        x = range(len(mine))
        ax.bar(x, mine["appeared"].fillna(0), color=SIDE, label="appeared")
        ax.plot(x, mine["listed"], marker="o", color=STAGE, label="listed")
        ticks = mine["taken_at"].dt.strftime("%m-%d %H:%M").tolist()
        step = max(1, len(ticks) // 8)
        ax.set_xticks(list(x)[::step], ticks[::step], rotation=30, ha="right", fontsize=8)
        ax.set_xlabel("snapshot (UTC)")
        ax.legend(fontsize=8, frameon=False)
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle("Event feeds per pull")
    return fig


def latest_events_section(store: Store, n: int = 50) -> HTML:
    """``latest_events`` as a table (each event's raw JSON cut to ``RAW_SHOWN`` characters)."""
    frame = latest_events(store, n)
    raw = frame["raw_json"].astype("string")
    frame["raw_json"] = raw.where(raw.str.len() <= RAW_SHOWN, raw.str[:RAW_SHOWN] + "…")
    return page(table(frame, max_rows=n, empty="No events stored yet."))


def events_section(store: Store, *, max_rows: int = 200) -> HTML:
    """Both feeds: a summary, counts per pull run and per day."""
    runs = event_runs(store)
    summary = feed_summary(store)
    if runs.empty and not summary["events"].any():
        return page(paragraph("No events stored yet: run `workbench pull`.", "wb-empty"))
    warning = cut_off_warning(store)
    return page(
        *([paragraph(warning, "wb-alert")] if warning else []),
        heading("Feeds", 4),
        table(summary),
        heading("Per pull run", 4),
        table(runs, max_rows=max_rows, empty="No event list was pulled yet."),
        heading("New events per day (first seen)", 4),
        table(event_days(store), max_rows=max_rows),
    )
