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

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.reconcile import AGE_BUCKETS, Reconciliation
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
_RESPONDED = ("responded", "transcript_sent", "acknowledged", "ack_mismatch")
_TRANSCRIPT = ("transcript_sent", "acknowledged", "ack_mismatch")
_ACKNOWLEDGED = ("acknowledged", "ack_mismatch")
OPEN_BUCKET_DAYS = 10  # how wide the open-ended last age bucket (">10") is drawn, in days


def bucket_days(buckets: tuple[str, ...] = AGE_BUCKETS) -> tuple[tuple[int, int], ...]:
    """Each age bucket as whole days [start, end), read from its label (the labels are
    reconciliation's public face; its bucket edges are not): ``3-5`` is (3, 6), and the
    open-ended ``>10`` is (11, 11 + OPEN_BUCKET_DAYS).

    >>> bucket_days(("0-2", "3-5", ">5"))
    ((0, 3), (3, 6), (6, 16))
    """
    spans = []
    for label in buckets:
        if label.startswith(">"):
            start = int(label[1:]) + 1
            spans.append((start, start + OPEN_BUCKET_DAYS))
        else:
            low, high = label.split("-")
            spans.append((int(low), int(high) + 1))
    return tuple(spans)


def blank_figure(width: float = 9.0, height: float = 4.0) -> Figure:
    """A figure of ``width`` x ``height`` inches at 100 dpi, laid out by matplotlib."""
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


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


def funnel_chart(rec: Reconciliation) -> Figure:
    """The supplier lifecycle funnel (requests listed → responded → transcript sent →
    acknowledged, with side bars for closed elsewhere, uncertain sends and ack mismatches),
    and beside it the consumer side (transcripts received → acknowledged by us)."""
    fig = blank_figure(10, 4)
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    requests = rec.requests["state"].astype(str)
    if requests.empty:
        no_data(left, "Supplier: requests")
    else:
        n = len(requests)
        _bars(left, "Supplier: requests", [
            ("requests listed", n, STAGE),
            ("responded", int(requests.isin(_RESPONDED).sum()), STAGE),
            ("transcript sent", int(requests.isin(_TRANSCRIPT).sum()), STAGE),
            ("acknowledged", int(requests.isin(_ACKNOWLEDGED).sum()), STAGE),
            ("closed elsewhere", int((requests == "closed_elsewhere").sum()), SIDE),
            ("uncertain send", int((requests == "uncertain_send").sum()), SIDE),
            ("ack mismatch", int((requests == "ack_mismatch").sum()), SIDE),
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
    fig.suptitle(f"Lifecycle as of {rec.now:%Y-%m-%d %H:%M} UTC")
    return fig


def _sla_position(sla_days: float) -> float:
    """Where ``sla_days`` falls on the bucket axis (bucket i spans i-0.5 .. i+0.5)."""
    spans = bucket_days()
    for i, (start, end) in enumerate(spans):
        if sla_days < end or i == len(spans) - 1:
            fraction = min(max((sla_days - start) / (end - start), 0.0), 1.0)
            return i - 0.5 + fraction
    return len(spans) - 0.5  # pragma: no cover - the loop always returns


def ageing_chart(rec: Reconciliation) -> Figure:
    """Open requests and transcripts awaiting our acknowledgment, by age bucket
    (``reconcile.AGE_BUCKETS``), with the SLA marked."""
    fig = blank_figure(9, 4)
    ax = fig.subplots()
    h = rec.headline
    title = f"Ageing (SLA {rec.sla_days:g} days)"
    series = {
        f"open requests ({h['open_over_sla']} over SLA)": h["open_by_age"],
        f"transcripts awaiting our ack ({h['awaiting_ack_over_sla']} over SLA)": h[
            "awaiting_ack_by_age"
        ],
    }
    if not any(sum(counts.values()) for counts in series.values()):
        no_data(ax, title)
        return fig
    x = np.arange(len(AGE_BUCKETS))
    width = 0.38
    for offset, (label, counts), color in zip((-width / 2, width / 2), series.items(),
                                              (STAGE, SIDE), strict=True):  # fmt: skip
        values = [counts.get(b, 0) for b in AGE_BUCKETS]
        bars = ax.bar(x + offset, values, width, label=label, color=color)
        ax.bar_label(bars, fontsize=9)
    ax.set_xticks(x, [f"{b} days" for b in AGE_BUCKETS])
    ax.axvline(_sla_position(rec.sla_days), color=SLA, linestyle="--", linewidth=1.5)
    ax.text(_sla_position(rec.sla_days), 1.0, f" SLA {rec.sla_days:g} d", color=SLA,
            va="top", transform=ax.get_xaxis_transform())  # fmt: skip
    ax.set_ylabel("items")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=9, frameon=False)
    ax.margins(y=0.2)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def daily_volumes_chart(source: Store | Mapping[str, pd.DataFrame]) -> Figure:
    """Per day: requests listed, transcripts received, and the responses, transcripts and
    acknowledgments we sent (``daily_volumes``); bars for a month or less, lines beyond."""
    volumes = daily_volumes(source)
    fig = blank_figure(10, 4)
    ax = fig.subplots()
    title = "Daily volumes"
    if volumes.empty:
        no_data(ax, title)
        return fig
    days = volumes["day"].dt.strftime("%Y-%m-%d").tolist()
    colors = ("#2f6fb0", "#7cb7e8", "#d9822b", "#3f9142", "#8e44ad")
    if len(volumes) <= 31:
        x = np.arange(len(volumes))
        width = 0.8 / len(VOLUME_COLUMNS)
        for i, (column, color) in enumerate(zip(VOLUME_COLUMNS, colors, strict=True)):
            offset = (i - (len(VOLUME_COLUMNS) - 1) / 2) * width
            bars = ax.bar(x + offset, volumes[column], width, label=VOLUME_LABELS[column],
                          color=color)  # fmt: skip
            if len(volumes) <= 7:
                ax.bar_label(bars, fontsize=8)
        step = max(1, len(days) // 10)
        ax.set_xticks(x[::step], days[::step])
    else:
        for column, color in zip(VOLUME_COLUMNS, colors, strict=True):
            ax.plot(volumes["day"].dt.tz_localize(None), volumes[column],
                    label=VOLUME_LABELS[column], color=color)  # fmt: skip
    ax.set_ylabel("per day (UTC)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=3)
    ax.margins(y=0.25)
    ax.spines[["top", "right"]].set_visible(False)
    return fig
