"""The report's charts (PNG in the HTML), and the daily volumes they draw. Figures are made
with ``matplotlib.figure.Figure``, never pyplot (no global state, nothing left open), with
margins that keep every label inside, and say "no data" when they have none."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from IPython.display import HTML
from matplotlib import dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from workbench.reconcile import Reconciliation, age_edges, age_labels, load, open_items
from workbench.reconcile.inputs import conform, outside, timestamp
from workbench.report.markup import moment, text
from workbench.store import Store

if TYPE_CHECKING:
    from workbench.report.history import Trends

STAGE, SIDE, MUTED, SLA = "#2f6fb0", "#d9822b", "#9aa5b1", "#c0392b"
COLORS = ("#2f6fb0", "#d9822b", "#3f9142", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#b7950b")
EVERY_DAY = 16  # a day axis this many days long or less labels every day, under its middle
BARS = 31  # the daily volumes as bars for this many days or less, as lines beyond
# What the headline's cards and the funnel call each figure: one thing, one name, in both.
LABELS = {
    "requests": "transcript requests", "answered": "answered",
    "transcripts_sent": "transcripts sent", "transcripts_acknowledged": "transcripts acknowledged",
    "answered_still_listed": "answered, still listed", "closed_elsewhere": "closed elsewhere",
    "uncertain_sends": "uncertain sends", "ack_mismatches": "ack mismatches",
    "transcripts_received": "transcripts received",
    "transcripts_acknowledged_by_us": "acknowledged by us",
    "transcripts_awaiting_ack": "awaiting our ack",
    "duplicate_transcripts": "duplicate transcripts",
}  # fmt: skip
# column -> (input table, time column, outbox operation or None), and its legend. Requests and
# transcripts count on the partner's date (else, or when implausible, the day we first saw
# them): a first pull of a ten-day backlog is ten days of volume, not one.
VOLUME_COLUMNS: dict[str, tuple[str, str, str | None, str]] = {
    "requests_listed": ("requests", "request_date", None, "requests listed"),
    "transcripts_received": ("transcripts", "request_date", None, "transcripts received"),
    "responses_sent": ("outbox", "created_at", "send_response", "responses we sent"),
    "transcripts_sent": ("outbox", "created_at", "send_transcript", "transcripts we sent"),
    "acknowledgments_sent": ("outbox", "created_at", "send_acknowledgment",
                             "acknowledgments we sent"),
}  # fmt: skip


def blank_figure(
    width: float, height: float, *, left: float = 0.8, right: float = 0.25, top: float = 0.45,
    bottom: float = 0.6, wspace: float = 0.2, hspace: float = 0.2,
    layout: Literal["constrained"] | None = None,
) -> Figure:  # fmt: skip
    """A figure of ``width`` x ``height`` inches at 100 dpi, its margins in inches: the labels
    of our own are of known sizes, and a layout engine (``layout``: for labels the partner's
    data names) doubles the time a chart takes to draw (bench/report.py)."""
    fig = Figure(figsize=(width, height), dpi=100, layout=layout)
    if layout is None:
        fig.subplots_adjust(left / width, bottom / height, 1 - right / width, 1 - top / height,
                            wspace, hspace)  # fmt: skip
    return fig


def no_data(ax: Axes, title: str) -> None:
    """Title ``ax`` and say "no data" in its middle, without axes."""
    ax.set_title(title)
    ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color=MUTED,
            transform=ax.transAxes)  # fmt: skip
    ax.set_axis_off()


def figure_html(fig: Figure, *, alt: str | None = None) -> HTML:
    """A chart inline as a PNG ``data:`` image; ``alt`` defaults to its title."""
    if alt is None:
        titles = [fig.get_suptitle(), *(ax.get_title() for ax in fig.axes)]
        alt = next((t for t in titles if t), "chart")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return HTML(f'<img class="wb-chart" alt="{text(alt)}" src="data:image/png;base64,{data}"/>')


def _bars(ax: Axes, title: str, stages: list[tuple[str, int, str]], total: int) -> None:
    """Horizontal bars, first at the top, each labelled with its count (and share of total)."""
    values = [s[1] for s in stages]
    y = np.arange(len(stages))[::-1]
    ax.barh(y, values, color=[s[2] for s in stages])
    ax.set_yticks(y, [s[0] for s in stages])
    ax.set_title(title)
    top = max([*values, 1])
    ax.set_xlim(0, top * 1.25)
    for yi, (_, value, color) in zip(y, stages, strict=True):
        share = f" ({value / total:.0%})" if total and color == STAGE else ""
        ax.text(value + top * 0.01, yi, f"{value}{share}", va="center", fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)


def funnel_chart(rec: Reconciliation, *, tz: str | None = None) -> Figure:
    """The supplier's funnel and the consumer's, side bars beside, named as the headline is."""
    fig = blank_figure(10, 4, left=2.0, top=0.6, bottom=0.4, wspace=0.62)
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    h, state = rec.headline, rec.headline["requests_by_state"]
    received = rec.transcripts["state"].astype(str)
    sides = {
        "Supplier: requests": ("requests", [
            ("requests", h["requests"], STAGE), ("answered", h["answered"], STAGE),
            ("transcripts_sent", h["transcripts_sent"], STAGE),
            ("transcripts_acknowledged", h["transcripts_acknowledged"], STAGE),
            ("answered_still_listed", h["answered_still_listed"], SIDE),
            ("closed_elsewhere", state["closed_elsewhere"], SIDE),
            ("uncertain_sends", state["uncertain_send"], SIDE),
            ("ack_mismatches", h["ack_mismatches"], SIDE)]),
        "Consumer: transcripts received": ("transcripts_received", [
            ("transcripts_received", h["transcripts_received"], STAGE),
            ("transcripts_acknowledged_by_us", h["transcripts_acknowledged_by_us"], STAGE),
            ("transcripts_awaiting_ack", h["transcripts_awaiting_ack"], SIDE),
            ("uncertain_sends", int((received == "ack_uncertain").sum()), SIDE),
            ("closed_elsewhere", int((received == "closed_elsewhere").sum()), SIDE),
            ("duplicate_transcripts", h["duplicate_transcripts"], SIDE)]),
    }  # fmt: skip
    for ax, (title, (total, stages)) in zip((left, right), sides.items(), strict=True):
        if h[total]:
            _bars(ax, title, [(LABELS[k], v, c) for k, v, c in stages], h[total])
        else:
            no_data(ax, title)
    fig.suptitle(f"Lifecycle as of {moment(rec.now, tz)}")
    return fig


def ageing_chart(rec: Reconciliation) -> Figure:
    """Open items by age bucket (the headline's, zeros included), the SLA line between buckets."""
    fig = blank_figure(9, 4.2, top=0.7, bottom=0.75)
    ax = fig.subplots()
    h = rec.headline
    title = f"Ageing (SLA {rec.sla_days:g} days)"
    awaiting = f"transcripts awaiting our ack ({h['awaiting_ack_over_sla']} over SLA)"
    series = {
        f"open requests ({h['open_over_sla']} over SLA)": h["open_by_age"],
        awaiting: h["awaiting_ack_by_age"],
    }
    if not any(sum(c.values()) for c in series.values()):
        no_data(ax, title)
        return fig
    labels = age_labels(rec.sla_days)
    x = np.arange(len(labels))
    for offset, (label, found), color in zip((-0.19, 0.19), series.items(), (STAGE, SIDE),
                                             strict=True):  # fmt: skip
        bars = ax.bar(x + offset, [found[b] for b in labels], 0.38, label=label, color=color)
        ax.bar_label(bars, fontsize=9)
    ax.set_xticks(x, labels)
    sla_x = age_edges(rec.sla_days).index(float(rec.sla_days)) + 0.5
    ax.axvline(sla_x, color=SLA, linestyle="--", linewidth=1.5)
    ax.text(sla_x, 1.0, f" SLA {rec.sla_days:g} d", color=SLA, va="top",
            transform=ax.get_xaxis_transform())  # fmt: skip
    early = sum(int((f["request_date"] > rec.now).fillna(False).sum())
                for f in open_items(rec.requests, rec.transcripts))  # fmt: skip
    note = f"; {early} dated after the as-of time count as 0" if early else ""
    ax.set_xlabel(f"age in days (a bucket holds ages above its lower edge, up to its upper){note}")
    ax.set_ylabel("items")
    dress(ax, title, size=9, ncols=2)
    return fig


def daily_volumes(
    source: Store | Mapping[str, pd.DataFrame], *, until: Any = None, tz: str | None = None
) -> pd.DataFrame:
    """Per day in zone ``tz`` (zeros included), what the partner listed and what we sent, up to
    ``until``; ``attrs``: how many were dated after it or implausibly (counted when seen)."""
    tables: Any = load(source) if isinstance(source, Store) else source
    if until is None:
        until = next((f.attrs["as_of"] for f in tables.values()
                      if f.attrs.get("as_of") is not None), None)  # fmt: skip
    zone, tables = tz or "UTC", conform(tables)
    counts, after, implausible = {}, 0, 0
    for column, (name, time_column, operation, _) in VOLUME_COLUMNS.items():
        frame = tables[name]
        if operation is not None:
            frame = frame[(frame["operation"] == operation) & (frame["state"] != "failed")]
        when = frame[time_column]
        if "first_seen_at" in frame.columns:  # a partner's date: ours when it is not usable
            bad = outside(when, pd.Timestamp.now(tz="UTC") if until is None else until)
            implausible += int(bad.sum())
            when = when.where(~bad).fillna(frame["first_seen_at"])
        when = when.dropna()
        if until is not None:
            late = when > timestamp(until)
            after, when = after + int(late.sum()), when[~late]
        counts[column] = when.dt.tz_convert(zone).dt.tz_localize(None).dt.normalize().value_counts()
    found = [c.index for c in counts.values() if len(c)]
    days = pd.date_range(min(i.min() for i in found), max(i.max() for i in found), freq="D") \
        if found else pd.DatetimeIndex([])  # fmt: skip
    out = pd.DataFrame({"day": days.tz_localize(zone, ambiguous=False,
                                                nonexistent="shift_forward")})  # fmt: skip
    for column, values in counts.items():
        out[column] = values.reindex(days, fill_value=0).to_numpy(dtype="int64")
    out.attrs.update(after_until=after, implausible=implausible)
    return out


def day_middles(days: pd.Series) -> np.ndarray:
    """Days (their midnights) as matplotlib dates of their noon, where bars centre."""
    midnights = pd.to_datetime(pd.Series(days))
    if isinstance(midnights.dtype, pd.DatetimeTZDtype):
        midnights = midnights.dt.tz_localize(None)
    return np.asarray(mdates.date2num(midnights.dt.normalize())) + 0.5


def day_axis(ax: Axes, first: pd.Timestamp, last: pd.Timestamp) -> None:
    """An x axis of whole days: a tick under each (or every other), never within one."""
    span = (last - first).days + 1
    start = float(mdates.date2num(first))
    ax.set_xlim(start, start + span)
    fmt = "%Y-%m-%d" if first.year != last.year or span > 300 else "%b %d"
    if span <= 2 * EVERY_DAY:
        ticks = pd.date_range(first, last, freq=f"{1 if span <= EVERY_DAY else 2}D")
        ax.set_xticks(np.asarray(mdates.date2num(ticks)) + 0.5, [d.strftime(fmt) for d in ticks])
    else:
        locator = mdates.AutoDateLocator(minticks=3, maxticks=10)
        locator.intervald[mdates.DAILY] = [1, 2, 3, 7, 14]
        locator.intervald[mdates.HOURLY] = []  # never ticks within a day
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)


def daily_volumes_chart(
    source: Store | Mapping[str, pd.DataFrame], *, until: object = None, tz: str | None = None
) -> Figure:
    """:func:`daily_volumes` as bars centred on their day, lines beyond a month."""
    volumes = daily_volumes(source, until=until, tz=tz)
    fig = blank_figure(10, 4.2, top=0.7, bottom=0.8)
    ax = fig.subplots()
    later, odd = volumes.attrs["after_until"], volumes.attrs["implausible"]
    notes = [f"{later} dated after the as-of time left out"] if later else []
    notes += [f"{odd} with an implausible date on the day first seen"] if odd else []
    title = "Daily volumes" + (f" ({'; '.join(notes)})" if notes else "")
    if volumes.empty:
        no_data(ax, title)
        return fig
    days, n = day_middles(volumes["day"]), len(VOLUME_COLUMNS)
    for i, (column, (*_, label)) in enumerate(VOLUME_COLUMNS.items()):
        color = ("#2f6fb0", "#7cb7e8", "#d9822b", "#3f9142", "#8e44ad")[i]
        if len(volumes) > BARS:
            ax.plot(days, volumes[column], label=label, color=color)
            continue
        bars = ax.bar(days + (i - (n - 1) / 2) * 0.8 / n, volumes[column], 0.8 / n, label=label,
                      color=color)  # fmt: skip
        if len(volumes) <= 7:
            ax.bar_label(bars, fontsize=8)
    shown = volumes["day"].dt.tz_localize(None)
    day_axis(ax, shown.iloc[0], shown.iloc[-1])
    ax.set_ylabel(f"per day ({tz or 'UTC'})")
    dress(ax, title, size=8, ncols=5)
    return fig


def trends_chart(t: Trends, *, tz: str | None = None) -> Figure:
    """Four panels: open items, share within the SLA, median days, exceptions by kind."""
    fig = blank_figure(10, 8, top=1.05, bottom=0.55, wspace=0.22, hspace=0.4)
    axes = fig.subplots(2, 2, sharex=True).flatten()
    p = t.points
    titles = ("Open items", f"Answered within the SLA ({t.sla_days:g} days)", "Median days",
              "Exceptions by kind")  # fmt: skip
    fig.suptitle(f"Trends over the pulls of the last {t.days:g} days, up to {moment(t.until, tz)}")
    if p.empty:
        for ax, title in zip(axes, titles, strict=True):
            no_data(ax, title)
        return fig
    x = mdates.date2num(p["at"].dt.tz_convert(tz or "UTC").dt.tz_localize(None))
    pad = max((x.max() - x.min()) * 0.04, 1 / 24)  # one run, or runs minutes apart: an hour
    axes[0].set_xlim(x.min() - pad, x.max() + pad)
    seen = [k for k in t.by_kind.columns if t.by_kind[k].sum() > 0]
    panels = [
        {"open requests": (p["open_requests"], STAGE),
         "transcripts awaiting our ack": (p["transcripts_awaiting_ack"], SIDE)},
        {"answered within SLA": (p["within_sla_share"], STAGE)},
        {"request to our response": (p["median_response_days"], STAGE),
         "transcript to our ack": (p["median_ack_days"], SIDE),
         "our transcript to the partner's ack": (p["median_partner_ack_days"], MUTED)},
        {k: (t.by_kind[k], COLORS[i % len(COLORS)]) for i, k in enumerate(seen)},
    ]  # fmt: skip
    axes[1].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes[1].set_ylim(0, 1.05)
    axes[2].axhline(t.sla_days, color=SLA, linestyle="--", linewidth=1, label="SLA")
    axes[2].set_ylabel("days")
    if not seen:
        axes[3].text(0.5, 0.5, "no exceptions", ha="center", va="center", color=MUTED,
                     transform=axes[3].transAxes)  # fmt: skip
    for n, (ax, title, series) in enumerate(zip(axes, titles, panels, strict=True)):
        for label, (values, color) in series.items():
            y = values.to_numpy(dtype="float64", na_value=np.nan)
            ax.plot(x, y, marker="o", markersize=3, label=label, color=color)
        locator = mdates.AutoDateLocator(minticks=3, maxticks=7)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        dress(ax, title, size=7, ncols=2, integer=n in (0, 3))
        ax.set_ylim(bottom=0)  # counts, shares and durations: never below 0
    return fig


def dress(ax: Axes, title: str, *, size: int, ncols: int, integer: bool = True) -> None:
    """Title, the legend between it and the plot (never over a bar or a line: the figure's top
    margin leaves room for its rows), integer ticks, no box."""
    if integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    handles = ax.get_legend_handles_labels()[0]
    ax.set_title(title, pad=4 + size * (1.7 * math.ceil(len(handles) / ncols) + 0.5))
    if handles:
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1), borderaxespad=0.2, fontsize=size,
                  frameon=False, ncols=ncols)  # fmt: skip
    ax.margins(y=0.1)
    ax.spines[["top", "right"]].set_visible(False)
