"""The report's charts lay themselves out: every label, title and legend lies inside the
image, with the real store's figures and with large ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from workbench import reconcile
from workbench.report import ageing_chart, daily_volumes_chart, funnel_chart, trends, trends_chart
from workbench.store import Store

from .conftest import NOW, crafted_tables


def _overflow(fig: Figure) -> dict[str, float]:
    """How far (inches) the drawn content reaches past each edge of the image; empty if none."""
    fig.draw_without_rendering()  # the layout is made at each draw, as when saved as PNG
    renderer = FigureCanvasAgg(fig).get_renderer()
    tight = fig.get_tightbbox(renderer)
    width, height = fig.get_size_inches()
    past = {"left": -tight.x0, "bottom": -tight.y0, "right": tight.x1 - width,
            "top": tight.y1 - height}  # fmt: skip
    return {edge: round(by, 3) for edge, by in past.items() if by > 0.01}


def _charts(tables: dict, rec: reconcile.Reconciliation, tz: str | None) -> dict[str, Figure]:
    return {
        "funnel": funnel_chart(rec, tz=tz),
        "ageing": ageing_chart(rec),
        "volumes": daily_volumes_chart(tables, until=rec.now, tz=tz),
    }


def test_the_report_charts_fit_their_image(report_db: Path) -> None:
    with Store(report_db, read_only=True) as store:
        tables = reconcile.load(store)
        rec = reconcile.reconcile(tables)
        found = trends(store, days=14, until=rec.now)
    charts = {
        **_charts(tables, rec, "America/Argentina/Buenos_Aires"),
        "trends": trends_chart(found),
    }
    assert {name: _overflow(fig) for name, fig in charts.items()} == {name: {} for name in charts}


def test_charts_of_thousands_of_items_still_fit(report_db: Path) -> None:
    tables = crafted_tables(extra_overdue=12_000)  # five-digit counts on every axis
    rec = reconcile.reconcile(tables, now=NOW, sla_days=5)
    assert rec.headline["open_requests"] > 10_000
    with Store(report_db, read_only=True) as store:
        found = trends(store, days=14)
    large = dataclasses.replace(
        found,
        points=found.points.assign(open_requests=54_321, transcripts_awaiting_ack=12_345),
        by_kind=found.by_kind * 10_000,
    )
    charts = {**_charts(tables, rec, None), "trends": trends_chart(large)}
    assert {name: _overflow(fig) for name, fig in charts.items()} == {name: {} for name in charts}


def test_legends_lie_above_the_bars_and_lines(report_db: Path) -> None:
    with Store(report_db, read_only=True) as store:
        tables = reconcile.load(store)
        rec = reconcile.reconcile(tables)
        found = trends(store, days=14, until=rec.now)
    figs = [*_charts(tables, rec, None).values(), trends_chart(found)]
    placed = []
    for fig in figs:
        fig.draw_without_rendering()
        renderer = FigureCanvasAgg(fig).get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:  # its bottom at or above the plot's top, below its title
                box, plot = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
                title = ax.title.get_window_extent(renderer)
                placed.append((box.y0 >= plot.y1 - 1, box.y1 <= title.y0 + 1))
    assert len(placed) == 6  # ageing, volumes, four trend panels
    assert placed == [(True, True)] * 6
