"""The event feeds' charts, for ``notebooks/events.ipynb``: per day they occurred, by type,
program, campus, weekday and hour, and per pull run; counts from :mod:`workbench.report.events`.

Day axes tick whole days, bars centred on them (``figures.day_axis``); time axes use
matplotlib's concise date format.

>>> display(figure_html(events_days_chart(store, tz="America/Toronto")))  # doctest: +SKIP
"""

from __future__ import annotations

import itertools

import pandas as pd
from matplotlib import dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.report.events import (
    BREAKDOWNS,
    COLORS,
    FEEDS,
    event_days,
    event_facts,
    event_runs,
    events_breakdown,
)
from workbench.report.figures import SIDE, STAGE, blank_figure, day_axis, day_middles, no_data
from workbench.store import Store

TOP = 10  # a chart's bars by type, program or campus: the largest, the rest as "other"


def events_days_chart(store: Store, *, tz: str | None = None) -> Figure:
    """Events per day they occurred (in zone ``tz``), stacked by feed."""
    days = event_days(store, tz=tz)
    fig = blank_figure(10, 4)
    ax = fig.subplots()
    title = f"Events per day they occurred ({tz or 'UTC'})"
    if days.attrs.get("without_time"):
        title += f"; {days.attrs['without_time']} with no time of their own on the day first seen"
    if days.attrs.get("implausible"):
        title += f"; {days.attrs['implausible']} with an implausible time on the day first seen"
    if days.empty:
        no_data(ax, title)
        return fig
    x = day_middles(days["day"])
    bottom = None
    for source, label in FEEDS.items():
        ax.bar(x, days[source], 0.8, bottom=bottom, label=label, color=COLORS[source])
        bottom = days[source] if bottom is None else bottom + days[source]
    day_axis(ax, pd.Timestamp(days["day"].iloc[0]), pd.Timestamp(days["day"].iloc[-1]))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("events")
    ax.set_title(title)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _top(counts: pd.DataFrame, by: str) -> pd.DataFrame:
    """The ``TOP`` largest rows of a breakdown, the rest summed as "other"."""
    if len(counts) <= TOP:
        return counts
    rest = counts.iloc[TOP - 1 :][[*FEEDS, "total"]].sum()
    other = pd.DataFrame([{by: f"other ({len(counts) - TOP + 1})", **rest.to_dict()}])
    return pd.concat([counts.iloc[: TOP - 1], other], ignore_index=True)


def _stacked(ax: Axes, counts: pd.DataFrame, by: str, title: str, *, across: bool) -> None:
    """Bars of a breakdown, stacked by feed: horizontal (largest on top) unless ``across``."""
    if int(counts["total"].sum()) == 0:
        no_data(ax, title)
        return
    labels = [str(v) for v in counts[by]]
    positions = range(len(labels))
    start = pd.Series(0, index=counts.index)
    for source, label in FEEDS.items():
        if across:
            ax.bar(positions, counts[source], bottom=start, color=COLORS[source], label=label)
        else:
            ax.barh(positions, counts[source], left=start, color=COLORS[source], label=label)
        start = start + counts[source]
    if across:
        ax.set_xticks(list(positions), labels, fontsize=8)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.set_yticks(list(positions), labels, fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.spines[["top", "right"]].set_visible(False)


def events_breakdown_chart(store: Store, *, tz: str | None = None) -> Figure:
    """Events by type, program, campus, weekday and hour they occurred (in zone ``tz``),
    stacked by feed."""
    fig = blank_figure(11, 10)
    axes = fig.subplot_mosaic([["event_type", "program"], ["campus", "weekday"], ["hour", "hour"]])
    facts = event_facts(store, tz=tz)
    for by, title in BREAKDOWNS.items():
        counts = events_breakdown(store, by, tz=tz, facts=facts)
        across = by in ("weekday", "hour")
        if across:
            title = f"{title} ({tz or 'UTC'})"
        _stacked(axes[by], counts if across else _top(counts, by), by, title, across=across)
    handles, labels = axes["hour"].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside upper right", fontsize=8, frameon=False)
    title = "Events by type, program, campus and when they occurred"
    placed = {"no time of their own": "without_time", "an implausible time": "implausible"}
    said = [f"{counts.attrs[k]} with {what}" for what, k in placed.items() if counts.attrs.get(k)]
    if said:
        title += f" ({', '.join(said)}: when first seen)"
    fig.suptitle(title)
    return fig


def events_chart(store: Store, *, tz: str | None = None) -> Figure:
    """Per feed, at each pull run (time in zone ``tz``): events listed (line) and events that
    appeared (bars)."""
    runs = event_runs(store)
    fig = blank_figure(10, 4)
    axes = fig.subplots(1, 2, sharey=False)
    for ax, (source, label) in zip(axes, FEEDS.items(), strict=True):
        mine = runs[runs["source"] == source]
        if mine.empty:
            no_data(ax, label)
            continue
        ax.set_title(label)
        x = mdates.date2num(mine["taken_at"].dt.tz_convert(tz or "UTC").dt.tz_localize(None))
        gaps = [b - a for a, b in itertools.pairwise(x) if b > a]
        width = 0.6 * min(gaps) if gaps else 1 / 24
        ax.bar(x, mine["appeared"].fillna(0), width, color=SIDE, label="appeared")
        ax.plot(x, mine["listed"], marker="o", color=STAGE, label="listed")
        locator = mdates.AutoDateLocator(minticks=2, maxticks=6)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, show_offset=True))
        ax.tick_params(axis="x", labelsize=8)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(f"pull run ({tz or 'UTC'})")
        ax.legend(fontsize=8, frameon=False)
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle("Event feeds per pull")
    return fig
