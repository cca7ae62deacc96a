"""The report's charts, as static matplotlib figures (PNG in the HTML report).

Figures are built with ``matplotlib.figure.Figure`` directly, never through pyplot: no
backend state, no global list of open figures to leak, and the same image in a kernel, a
script or a test. Each chart copes with empty data by saying "no data".

>>> fig = funnel_chart(rec)  # doctest: +SKIP
>>> figure_html(fig)  # doctest: +SKIP   (workbench.report.sections)
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.reconcile import Reconciliation, age_edges, age_labels, open_items
from workbench.report.markup import moment
from workbench.report.volumes import VOLUME_COLUMNS, daily_volumes
from workbench.store import Store

STAGE = "#2f6fb0"
SIDE = "#d9822b"
MUTED = "#9aa5b1"
SLA = "#c0392b"
VOLUME_LABELS = {
    "requests_listed": "requests listed",
    "transcripts_received": "transcripts received",
    "responses_sent": "responses we sent",
    "transcripts_sent": "transcripts we sent",
    "acknowledgments_sent": "acknowledgments we sent",
}
# What the headline's cards and the funnel call each figure (``rec.headline``'s keys, and the
# states the funnel counts): one thing, one name, in both.
LABELS = {
    "requests": "transcript requests",
    "answered": "answered",
    "transcripts_sent": "transcripts sent",
    "transcripts_acknowledged": "transcripts acknowledged",
    "answered_still_listed": "answered, still listed",
    "closed_elsewhere": "closed elsewhere",
    "uncertain_sends": "uncertain sends",
    "ack_mismatches": "ack mismatches",
    "transcripts_received": "transcripts received",
    "transcripts_acknowledged_by_us": "acknowledged by us",
    "transcripts_awaiting_ack": "awaiting our ack",
    "duplicate_transcripts": "duplicate transcripts",
}


def ageing(rec: Reconciliation) -> dict[str, dict[str, int]]:
    """Open requests (``open``) and transcripts awaiting our acknowledgment (``awaiting``)
    per age bucket (``reconcile.age_labels(rec.sla_days)``), zeros included: the headline's
    ``open_by_age`` and ``awaiting_ack_by_age``."""
    return {"open": rec.headline["open_by_age"], "awaiting": rec.headline["awaiting_ack_by_age"]}


def dated_after(rec: Reconciliation) -> int:
    """How many open requests and transcripts awaiting our acknowledgment are dated after
    the reconciliation's moment (a partner clock ahead of ours: they count as 0 days old)."""
    return sum(
        int((f["request_date"] > rec.now).fillna(False).sum())
        for f in open_items(rec.requests, rec.transcripts)
    )


@dataclass(frozen=True)
class Margins:
    """Fixed space, in inches, around a grid of axes (``left`` ... ``top``) and between its
    columns (``across``) and rows (``down``): room for the tick labels, axis labels and titles
    a chart draws there."""

    left: float = 0.75
    right: float = 0.25
    bottom: float = 0.55
    top: float = 0.35
    across: float = 0.0
    down: float = 0.0


def blank_figure(width: float = 9.0, height: float = 4.0) -> Figure:
    """A figure of ``width`` x ``height`` inches at 100 dpi, laid out by matplotlib's
    constrained engine: for charts whose labels come from the data (event types, programs).
    Charts whose labels are known (fixed strings, numbers, dates) use :func:`fixed_subplots`."""
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def fixed_subplots(
    width: float, height: float, margins: Margins, nrows: int = 1, ncols: int = 1, **kwargs: Any
) -> tuple[Figure, Any]:
    """A figure of ``width`` x ``height`` inches at 100 dpi and its ``nrows`` x ``ncols`` axes
    (``Figure.subplots(**kwargs)``), placed at fixed ``margins``.

    A fixed layout instead of the constrained engine, which measures every label again at each
    draw: the report's four charts take about half the time (bench/report.py: 1.1 s -> 0.55 s,
    some 5 % of ``workbench report --no-pull``)."""
    fig = Figure(figsize=(width, height), dpi=100)
    wide = (width - margins.left - margins.right - (ncols - 1) * margins.across) / ncols
    high = (height - margins.bottom - margins.top - (nrows - 1) * margins.down) / nrows
    fig.subplots_adjust(
        left=margins.left / width,
        right=1 - margins.right / width,
        bottom=margins.bottom / height,
        top=1 - margins.top / height,
        wspace=margins.across / wide,
        hspace=margins.down / high,
    )
    return fig, fig.subplots(nrows, ncols, **kwargs)


def no_data(ax: Axes, title: str) -> None:
    """Title ``ax`` and say "no data" in its middle, without axes."""
    ax.set_title(title)
    ax.text(0.5, 0.5, "no data", ha="center", va="center", fontsize=14, color=MUTED,
            transform=ax.transAxes)  # fmt: skip
    ax.set_axis_off()


def png(fig: Figure) -> bytes:
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _bars(ax: Axes, title: str, stages: list[tuple[str, int, str]], total: int) -> None:
    """Horizontal bars, first at the top, each labelled with its count (and share of total)."""
    labels = [s[0] for s in stages]
    values = [s[1] for s in stages]
    y = np.arange(len(stages))[::-1]
    ax.barh(y, values, color=[s[2] for s in stages])
    ax.set_yticks(y, labels)
    ax.set_title(title)
    top = max([*values, 1])
    ax.set_xlim(0, top * 1.25)
    for yi, (_, value, color) in zip(y, stages, strict=True):
        share = f" ({value / total:.0%})" if total and color == STAGE else ""
        ax.text(value + top * 0.01, yi, f"{value}{share}", va="center", fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)


def funnel_chart(rec: Reconciliation, *, tz: str | None = None) -> Figure:
    """The supplier's funnel (transcript requests → answered → transcripts sent → transcripts
    acknowledged, by the partner), with side bars for those answered but still listed, closed
    elsewhere, uncertain sends and ack mismatches; beside it the consumer side (transcripts
    received → acknowledged by us, and those awaiting our ack, uncertain, closed elsewhere or
    duplicates). Bars are the headline's figures under the headline's names (:data:`LABELS`);
    its title gives the moment in zone ``tz`` (None: UTC)."""
    # the longest bar labels ("transcripts acknowledged", "duplicate transcripts") need 1.9 in
    margins = Margins(left=2.0, top=0.6, bottom=0.35, across=1.9)
    fig, (left, right) = fixed_subplots(10, 4, margins, 1, 2, width_ratios=[3, 2])
    h = rec.headline
    if not h["requests"]:
        no_data(left, "Supplier: requests")
    else:
        state = h["requests_by_state"]
        _bars(left, "Supplier: requests", [
            (LABELS["requests"], h["requests"], STAGE),
            (LABELS["answered"], h["answered"], STAGE),
            (LABELS["transcripts_sent"], h["transcripts_sent"], STAGE),
            (LABELS["transcripts_acknowledged"], h["transcripts_acknowledged"], STAGE),
            (LABELS["answered_still_listed"], h["answered_still_listed"], SIDE),
            (LABELS["closed_elsewhere"], state["closed_elsewhere"], SIDE),
            (LABELS["uncertain_sends"], state["uncertain_send"], SIDE),
            (LABELS["ack_mismatches"], h["ack_mismatches"], SIDE),
        ], h["requests"])  # fmt: skip
    transcripts = rec.transcripts["state"].astype(str)
    if not h["transcripts_received"]:
        no_data(right, "Consumer: transcripts received")
    else:
        _bars(right, "Consumer: transcripts received", [
            (LABELS["transcripts_received"], h["transcripts_received"], STAGE),
            (LABELS["transcripts_acknowledged_by_us"], h["transcripts_acknowledged_by_us"],
             STAGE),
            (LABELS["transcripts_awaiting_ack"], h["transcripts_awaiting_ack"], SIDE),
            (LABELS["uncertain_sends"], int((transcripts == "ack_uncertain").sum()), SIDE),
            (LABELS["closed_elsewhere"], int((transcripts == "closed_elsewhere").sum()), SIDE),
            (LABELS["duplicate_transcripts"], h["duplicate_transcripts"], SIDE),
        ], h["transcripts_received"])  # fmt: skip
    fig.suptitle(f"Lifecycle as of {moment(rec.now, tz)}")
    return fig


def ageing_chart(rec: Reconciliation) -> Figure:
    """Open requests and transcripts awaiting our acknowledgment, by age bucket
    (``ageing``), with the SLA line on the edge between the buckets within and over it."""
    fig, ax = fixed_subplots(9, 4, Margins(right=0.15))
    h = rec.headline
    title = f"Ageing (SLA {rec.sla_days:g} days)"
    counts = ageing(rec)
    series = {
        f"open requests ({h['open_over_sla']} over SLA)": counts["open"],
        f"transcripts awaiting our ack ({h['awaiting_ack_over_sla']} over SLA)": counts["awaiting"],
    }
    if not any(sum(c.values()) for c in series.values()):
        no_data(ax, title)
        return fig
    labels = age_labels(rec.sla_days)
    x = np.arange(len(labels))
    width = 0.38
    for offset, (label, found), color in zip((-width / 2, width / 2), series.items(),
                                             (STAGE, SIDE), strict=True):  # fmt: skip
        bars = ax.bar(x + offset, [found[b] for b in labels], width, label=label, color=color)
        ax.bar_label(bars, fontsize=9)
    ax.set_xticks(x, labels)
    sla_x = age_edges(rec.sla_days).index(float(rec.sla_days)) + 0.5
    ax.axvline(sla_x, color=SLA, linestyle="--", linewidth=1.5)
    ax.text(sla_x, 1.0, f" SLA {rec.sla_days:g} d", color=SLA, va="top",
            transform=ax.get_xaxis_transform())  # fmt: skip
    early = dated_after(rec)
    note = f"; {early} dated after the as-of time count as 0" if early else ""
    ax.set_xlabel(f"age in days (a bucket holds ages above its lower edge, up to its upper){note}")
    ax.set_ylabel("items")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=9, frameon=False)
    ax.margins(y=0.2)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


EVERY_DAY = 16  # a day axis this many days long or less labels every day, under its middle
BARS = 31  # the daily volumes as bars for this many days or less, as lines beyond


def day_middles(days: pd.Series) -> np.ndarray:
    """Days (their midnights: dates, or times in a zone) as matplotlib dates of their noon:
    where a day's bars are centred, so none straddles midnight."""
    midnights = pd.to_datetime(pd.Series(days))
    if isinstance(midnights.dtype, pd.DatetimeTZDtype):
        midnights = midnights.dt.tz_localize(None)
    return np.asarray(mdates.date2num(midnights.dt.normalize())) + 0.5


def day_axis(ax: Axes, first: pd.Timestamp, last: pd.Timestamp) -> None:
    """An x axis of whole days from ``first`` to ``last`` (midnights, naive), bars centred on
    :func:`day_middles`: for :data:`EVERY_DAY` days or fewer a tick under the middle of each
    day (every other day up to twice that), labelled with its date; beyond, matplotlib's date
    locator, never under a day. The axis ends at the first and last days' edges."""
    span = (last - first).days + 1
    start = float(mdates.date2num(first))
    ax.set_xlim(start, start + span)
    fmt = "%Y-%m-%d" if first.year != last.year or span > 300 else "%b %d"
    if span <= 2 * EVERY_DAY:
        step = 1 if span <= EVERY_DAY else 2
        ticks = pd.date_range(first, last, freq=f"{step}D")
        ax.set_xticks(np.asarray(mdates.date2num(ticks)) + 0.5, [d.strftime(fmt) for d in ticks])
    else:
        locator = mdates.AutoDateLocator(minticks=3, maxticks=10)
        locator.intervald[mdates.DAILY] = [1, 2, 3, 7, 14]
        locator.intervald[mdates.HOURLY] = []  # never ticks within a day
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.DateFormatter(fmt))
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)


def daily_volumes_chart(
    source: Store | Mapping[str, pd.DataFrame],
    *,
    until: object = None,
    tz: str | None = None,
) -> Figure:
    """Per day in zone ``tz`` (None: UTC): requests listed, transcripts received, and the
    responses, transcripts and acknowledgments we sent (``daily_volumes``, up to ``until``);
    bars centred on their day for a month or less, lines beyond (:func:`day_axis`)."""
    volumes = daily_volumes(source, until=until, tz=tz)
    fig, ax = fixed_subplots(10, 4, Margins(bottom=0.75))
    title = "Daily volumes"
    later = volumes.attrs.get("after_until", 0)
    odd = volumes.attrs.get("implausible", 0)
    notes = [f"{later} dated after the as-of time left out"] if later else []
    notes += [f"{odd} with an implausible date on the day first seen"] if odd else []
    if notes:
        title += f" ({'; '.join(notes)})"
    if volumes.empty:
        no_data(ax, title)
        return fig
    days = day_middles(volumes["day"])
    colors = ("#2f6fb0", "#7cb7e8", "#d9822b", "#3f9142", "#8e44ad")
    if len(volumes) <= BARS:
        width = 0.8 / len(VOLUME_COLUMNS)
        for i, (column, color) in enumerate(zip(VOLUME_COLUMNS, colors, strict=True)):
            offset = (i - (len(VOLUME_COLUMNS) - 1) / 2) * width
            bars = ax.bar(days + offset, volumes[column], width, label=VOLUME_LABELS[column],
                          color=color)  # fmt: skip
            if len(volumes) <= 7:
                ax.bar_label(bars, fontsize=8)
    else:
        for column, color in zip(VOLUME_COLUMNS, colors, strict=True):
            ax.plot(days, volumes[column], label=VOLUME_LABELS[column], color=color)
    shown = volumes["day"].dt.tz_localize(None)
    day_axis(ax, shown.iloc[0], shown.iloc[-1])
    ax.set_ylabel(f"per day ({tz or 'UTC'})")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=3)
    ax.margins(y=0.25)
    ax.spines[["top", "right"]].set_visible(False)
    return fig
