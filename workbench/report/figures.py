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
# The states past each stage of the funnel; answered_still_listed is past "responded" and
# past the others when its transcript was sent (and acknowledged).
_RESPONDED = (
    "responded",
    "transcript_sent",
    "acknowledged",
    "ack_mismatch",
    "answered_still_listed",
)
_TRANSCRIPT = ("transcript_sent", "acknowledged", "ack_mismatch")
_ACKNOWLEDGED = ("acknowledged", "ack_mismatch")


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
    """The supplier lifecycle funnel (requests listed → responded → transcript sent →
    acknowledged, with side bars for answered but still listed, closed elsewhere, uncertain
    sends and ack mismatches),
    and beside it the consumer side (transcripts received → acknowledged by us); its title
    gives the moment in zone ``tz`` (None: UTC)."""
    # the longest bar labels ("closed elsewhere", "acknowledged by us") need about 1.4 in
    margins = Margins(left=1.45, top=0.6, bottom=0.35, across=1.75)
    fig, (left, right) = fixed_subplots(10, 4, margins, 1, 2, width_ratios=[3, 2])
    requests = rec.requests["state"].astype(str)
    if requests.empty:
        no_data(left, "Supplier: requests")
    else:
        n = len(requests)
        listed = requests == "answered_still_listed"
        sent = listed & rec.requests["transcript_outbox_id"].notna()
        acked = sent & rec.requests["acknowledged_at"].notna()
        _bars(left, "Supplier: requests", [
            ("requests listed", n, STAGE),
            ("responded", int(requests.isin(_RESPONDED).sum()), STAGE),
            ("transcript sent", int((requests.isin(_TRANSCRIPT) | sent).sum()), STAGE),
            ("acknowledged", int((requests.isin(_ACKNOWLEDGED) | acked).sum()), STAGE),
            ("still listed", int(listed.sum()), SIDE),
            ("closed elsewhere", int((requests == "closed_elsewhere").sum()), SIDE),
            ("uncertain send", int((requests == "uncertain_send").sum()), SIDE),
            ("ack mismatch", rec.headline["ack_mismatches"], SIDE),
        ], n)  # fmt: skip
    transcripts = rec.transcripts["state"].astype(str)
    if transcripts.empty:
        no_data(right, "Consumer: transcripts received")
    else:
        n = len(transcripts)
        _bars(right, "Consumer: transcripts received", [
            ("received", n, STAGE),
            ("acknowledged by us", int((transcripts == "acknowledged").sum()), STAGE),
            ("awaiting our ack", int((transcripts == "awaiting_ack").sum()), SIDE),
            ("ack uncertain", int((transcripts == "ack_uncertain").sum()), SIDE),
            ("closed elsewhere", int((transcripts == "closed_elsewhere").sum()), SIDE),
            ("duplicates", rec.headline["duplicate_transcripts"], SIDE),
        ], n)  # fmt: skip
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


def daily_volumes_chart(
    source: Store | Mapping[str, pd.DataFrame],
    *,
    until: object = None,
    tz: str | None = None,
) -> Figure:
    """Per day in zone ``tz`` (None: UTC): requests listed, transcripts received, and the
    responses, transcripts and acknowledgments we sent (``daily_volumes``, up to ``until``);
    bars for a month or less, lines beyond; dates labelled by matplotlib's concise format."""
    volumes = daily_volumes(source, until=until, tz=tz)
    fig, ax = fixed_subplots(10, 4, Margins())
    title = "Daily volumes"
    later = volumes.attrs.get("after_until", 0)
    if later:
        title += f" ({later} dated after the as-of time left out)"
    if volumes.empty:
        no_data(ax, title)
        return fig
    days = mdates.date2num(volumes["day"].dt.tz_localize(None))
    colors = ("#2f6fb0", "#7cb7e8", "#d9822b", "#3f9142", "#8e44ad")
    if len(volumes) <= 31:
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
    locator = mdates.AutoDateLocator(minticks=3, maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_ylabel(f"per day ({tz or 'UTC'})")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=3)
    ax.margins(y=0.25)
    ax.spines[["top", "right"]].set_visible(False)
    return fig
