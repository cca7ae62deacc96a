"""The report's charts are laid out at fixed margins: every label, title and legend still lies
inside the image, with the real store's figures and with large ones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from workbench import reconcile
from workbench.report import ageing_chart, daily_volumes_chart, funnel_chart, trends, trends_chart
from workbench.report.figures import Margins, fixed_subplots
from workbench.store import Store

from .conftest import NOW, crafted_tables


def _overflow(fig: Figure) -> dict[str, float]:
    """How far (inches) the drawn content reaches past each edge of the image; empty if none."""
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


@pytest.mark.parametrize(("rows", "columns"), [(1, 1), (1, 2), (2, 2)])
def test_fixed_subplots_place_the_axes_at_the_margins(rows: int, columns: int) -> None:
    margins = Margins(left=1.0, right=0.5, bottom=0.6, top=0.4, across=0.8, down=0.3)
    fig, _ = fixed_subplots(10, 6, margins, rows, columns, squeeze=False)
    boxes = [(b.x0 * 10, b.y0 * 6, b.width * 10, b.height * 6)  # inches
             for b in (ax.get_position() for ax in fig.axes)]  # fmt: skip
    lefts = sorted({round(x, 6) for x, *_ in boxes})
    bottoms = sorted({round(y, 6) for _, y, *_ in boxes})
    width, height = boxes[0][2], boxes[0][3]
    assert len(boxes) == rows * columns
    assert lefts[0] == pytest.approx(1.0) and bottoms[0] == pytest.approx(0.6)
    assert lefts[-1] + width == pytest.approx(10 - 0.5)
    assert bottoms[-1] + height == pytest.approx(6 - 0.4)
    if columns > 1:
        assert lefts[1] - (lefts[0] + width) == pytest.approx(0.8)
    if rows > 1:
        assert bottoms[1] - (bottoms[0] + height) == pytest.approx(0.3)
