"""The two event feeds over time, for ``notebooks/events.ipynb``: placement events (the
international interface) and domestic on-demand events.

>>> display(events_section(store))  # doctest: +SKIP
>>> display(figure_html(events_chart(store)))  # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd
from IPython.display import HTML
from matplotlib.figure import Figure

from workbench.report.figures import MUTED, SIDE, STAGE
from workbench.report.markup import heading, page, paragraph, table
from workbench.store import Store
from workbench.store.lists import EVENT_SOURCES

FEEDS = {"placement": "placement events", "domestic": "domestic events"}
RUN_COLUMNS = ("source", "run_id", "taken_at", "listed", "appeared", "vanished")
LATEST_COLUMNS = (
    "source", "event_id", "event_type", "occurred_at", "first_seen_at", "last_seen_at",
    "on_list", "raw_json",
)  # fmt: skip


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
    """Per UTC day and source: events first seen that day (``new``)."""
    events = store.table("events")
    if events.empty:
        return pd.DataFrame({"day": pd.Series(dtype="string"), **{s: pd.Series(dtype="int64")
                                                                 for s in FEEDS}})  # fmt: skip
    day = events["first_seen_at"].dt.strftime("%Y-%m-%d")
    counts = pd.crosstab(day, events["source"].astype(str))
    counts = counts.reindex(columns=list(FEEDS), fill_value=0)
    return counts.rename_axis(index="day", columns=None).reset_index()


def feed_summary(store: Store) -> pd.DataFrame:
    """Per source: events seen, still listed, event types, first and last seen."""
    events = store.table("events")
    rows = []
    for source in FEEDS:
        mine = events[events["source"] == source]
        rows.append(
            {
                "source": source,
                "events": len(mine),
                "listed_now": int(mine["on_list"].fillna(False).sum()),
                "event_types": mine["event_type"].nunique(),
                "first_seen": mine["first_seen_at"].min() if len(mine) else None,
                "last_seen": mine["last_seen_at"].max() if len(mine) else None,
            }
        )
    return pd.DataFrame(rows)


def latest_events(store: Store, n: int = 50) -> pd.DataFrame:
    """The ``n`` most recent events of both feeds (by when they occurred, else first seen)."""
    events = store.table("events")
    when = events["occurred_at"].fillna(events["first_seen_at"])
    events = events.assign(_when=when).sort_values("_when", ascending=False, kind="stable")
    return events.head(n)[list(LATEST_COLUMNS)].reset_index(drop=True)


def events_chart(store: Store) -> Figure:
    """Per feed, over the pull runs: events listed (line) and events that appeared (bars)."""
    runs = event_runs(store)
    fig = Figure(figsize=(10, 4), dpi=100, layout="constrained")
    axes = fig.subplots(1, 2, sharey=False)
    for ax, (source, label) in zip(axes, FEEDS.items(), strict=True):
        mine = runs[runs["source"] == source]
        ax.set_title(label)
        if mine.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color=MUTED,
                    transform=ax.transAxes)  # fmt: skip
            ax.set_axis_off()
            continue
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
    """``latest_events`` as a table (each event's raw JSON cut to 300 characters)."""
    frame = latest_events(store, n)
    raw = frame["raw_json"].astype("string")
    frame["raw_json"] = raw.where(raw.str.len() <= 300, raw.str[:300] + "…")
    return page(table(frame, max_rows=n, empty="No events stored yet."))


def events_section(store: Store, *, max_rows: int = 200) -> HTML:
    """Both feeds: a summary, counts per pull run and per day."""
    runs = event_runs(store)
    if runs.empty and store.table("events").empty:
        return page(paragraph("No events stored yet: run `workbench pull`.", "wb-empty"))
    return page(
        heading("Feeds", 4),
        table(feed_summary(store)),
        heading("Per pull run", 4),
        table(runs, max_rows=max_rows, empty="No event list was pulled yet."),
        heading("New events per day (first seen)", 4),
        table(event_days(store), max_rows=max_rows),
    )
