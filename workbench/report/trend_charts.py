"""The trends chart: four panels over the pull runs :func:`~workbench.report.trend_points.trends`
measured (matplotlib, kept apart so that the figures load without it).

>>> display(figure_html(trends_chart(trends(store, days=14))))  # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from workbench.report.figures import MUTED, SIDE, SLA, STAGE, Margins, fixed_subplots, no_data
from workbench.report.markup import moment
from workbench.report.trend_points import Trends

_KIND_COLORS = ("#2f6fb0", "#d9822b", "#3f9142", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d",
                "#b7950b")  # fmt: skip


def trends_chart(t: Trends, *, tz: str | None = None) -> Figure:
    """Four panels over the pull runs: open requests and transcripts awaiting our
    acknowledgment; the share answered within the SLA; the median days to respond and to
    acknowledge; exceptions by kind (the kinds seen in the window)."""
    # room for five-digit counts and "100%" left of each column, a title above each row
    margins = Margins(left=0.7, right=0.2, top=0.65, across=0.75, down=0.45)
    fig, grid = fixed_subplots(10, 7, margins, 2, 2, sharex=True)
    axes = grid.flatten()
    p = t.points
    titles = ("Open items", f"Answered within the SLA ({t.sla_days:g} days)",
              "Median days", "Exceptions by kind")  # fmt: skip
    fig.suptitle(f"Trends over the pulls of the last {t.days:g} days, up to {moment(t.until, tz)}")
    if p.empty:
        for ax, title in zip(axes, titles, strict=True):
            no_data(ax, title)
        return fig
    x = mdates.date2num(p["at"].dt.tz_convert(tz or "UTC").dt.tz_localize(None))
    # at least an hour either side: one run, or runs minutes apart, still get a readable axis
    pad = max((x.max() - x.min()) * 0.04, 1 / 24)
    axes[0].set_xlim(x.min() - pad, x.max() + pad)
    _lines(
        axes[0],
        x,
        {
            "open requests": (p["open_requests"], STAGE),
            "transcripts awaiting our ack": (p["transcripts_awaiting_ack"], SIDE),
        },
    )
    _lines(axes[1], x, {"answered within SLA": (p["within_sla_share"], STAGE)})
    axes[1].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes[1].set_ylim(0, 1.05)
    _lines(axes[2], x, {"request to our response": (p["median_response_days"], STAGE),
                        "transcript to our ack": (p["median_ack_days"], SIDE),
                        "our transcript to the partner's ack": (p["median_partner_ack_days"],
                                                                MUTED)})  # fmt: skip
    axes[2].axhline(t.sla_days, color=SLA, linestyle="--", linewidth=1, label="SLA")
    seen = [k for k in t.by_kind.columns if t.by_kind[k].sum() > 0]
    colors = dict(zip(seen, _KIND_COLORS * (len(seen) // len(_KIND_COLORS) + 1), strict=False))
    _lines(axes[3], x, {k: (t.by_kind[k], colors[k]) for k in seen})
    if not seen:
        axes[3].text(0.5, 0.5, "no exceptions", ha="center", va="center", color=MUTED,
                     transform=axes[3].transAxes)  # fmt: skip
    for ax, title in zip(axes, titles, strict=True):
        _dress(ax, title, integer=ax is not axes[1] and ax is not axes[2])
    axes[2].set_ylabel("days")
    return fig


def _lines(ax: Axes, x: np.ndarray, series: dict[str, tuple[pd.Series, str]]) -> None:
    for label, (values, color) in series.items():
        y = values.to_numpy(dtype="float64", na_value=np.nan)
        ax.plot(x, y, marker="o", markersize=3, label=label, color=color)


def _dress(ax: Axes, title: str, *, integer: bool) -> None:
    locator = mdates.AutoDateLocator(minticks=3, maxticks=7)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    if integer:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=7, frameon=False)
    ax.margins(y=0.2)
    ax.set_ylim(bottom=0)  # counts, shares and durations: never below 0
    ax.spines[["top", "right"]].set_visible(False)
