"""The charts: their bars are the reconciliation's numbers, and empty data says "no data"."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from workbench import reconcile
from workbench.reconcile.inputs import age_bucket
from workbench.report import ageing_chart, daily_volumes, daily_volumes_chart, funnel_chart
from workbench.report.figures import _sla_position, bucket_days
from workbench.store import Store

from .conftest import NOW, crafted_tables


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_the_funnel_counts_the_lifecycle(crafted: reconcile.Reconciliation) -> None:
    fig = funnel_chart(crafted)
    supplier, consumer = fig.axes
    widths = [p.get_width() for p in supplier.patches]
    labels = [t.get_text() for t in supplier.get_yticklabels()]
    assert dict(zip(labels, widths, strict=True)) == {
        "requests listed": 4, "responded": 1, "transcript sent": 1, "acknowledged": 0,
        "closed elsewhere": 1, "uncertain send": 0, "ack mismatch": 0,
    }  # fmt: skip
    assert "4 (100%)" in _texts(fig) and "1 (25%)" in _texts(fig)
    assert consumer.get_title() == "Consumer: transcripts received"
    assert "no data" in _texts(fig)  # no transcript received in the crafted state


def test_ageing_bars_are_the_headline_buckets(crafted: reconcile.Reconciliation) -> None:
    fig = ageing_chart(crafted)
    (ax,) = fig.axes
    heights = [int(p.get_height()) for p in ax.patches]
    h = crafted.headline
    assert heights == [*h["open_by_age"].values(), *h["awaiting_ack_by_age"].values()]
    sla_lines = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(sla_lines) == 1
    assert sla_lines[0].get_xdata()[0] == pytest.approx(_sla_position(5))
    assert ax.get_title() == "Ageing (SLA 5 days)"
    assert "open requests (1 over SLA)" in [t.get_text() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize(
    ("sla", "position"), [(0, -0.5), (3, 0.5), (5, 1 + 1 / 6), (10, 2.3), (40, 3.5)]
)
def test_the_sla_line_sits_where_its_days_fall(sla: float, position: float) -> None:
    assert _sla_position(sla) == pytest.approx(position)


def test_the_bucket_days_are_the_reconciliation_buckets() -> None:
    spans = bucket_days()
    assert spans == ((0, 3), (3, 6), (6, 11), (11, 21))
    ages = pd.Series(np.arange(0, 30, 0.5), dtype="Float64")
    for age, bucket in zip(ages, age_bucket(ages), strict=True):
        start, end = spans[reconcile.AGE_BUCKETS.index(bucket)]
        assert start <= age and (age < end or bucket == reconcile.AGE_BUCKETS[-1]), (age, bucket)


def test_every_chart_copes_with_no_data(empty_rec: reconcile.Reconciliation) -> None:
    for fig in (funnel_chart(empty_rec), ageing_chart(empty_rec),
                daily_volumes_chart(reconcile.empty_tables())):  # fmt: skip
        assert isinstance(fig, Figure)
        assert "no data" in _texts(fig)
        fig.savefig(io.BytesIO(), format="png")  # it still renders


def test_daily_volumes_count_per_day() -> None:
    tables = crafted_tables()
    tables["transcripts"] = pd.DataFrame(
        {"transcript_id": ["T1"], "first_seen_at": [NOW - pd.Timedelta(days=10)]}
    )
    volumes = daily_volumes(tables)
    assert len(volumes) == 13  # every day from the first to the last, zeros included
    by_day = volumes.set_index(volumes["day"].dt.strftime("%Y-%m-%d"))
    # requests count on the partner's date, spread over the days it gave them
    assert by_day["requests_listed"][lambda c: c > 0].to_dict() == {
        "2026-02-26": 1, "2026-03-07": 1, "2026-03-08": 1, "2026-03-09": 1}  # fmt: skip
    assert by_day.loc["2026-02-28", "transcripts_received"] == 1  # no date: when first seen
    assert by_day.loc["2026-03-10", "transcripts_sent"] == 1
    assert volumes[["responses_sent", "acknowledgments_sent"]].sum().tolist() == [0, 0]
    fig = daily_volumes_chart(tables)
    assert fig.axes[0].get_title() == "Daily volumes"
    assert sum(p.get_height() for p in fig.axes[0].patches) == 6


def test_daily_volumes_of_a_store_are_those_of_its_tables(report_db: Path) -> None:
    with Store(report_db) as store:
        from_store = daily_volumes(store)
        from_tables = daily_volumes(reconcile.load(store))
        outbox = store.table("outbox")
    pd.testing.assert_frame_equal(from_store, from_tables)
    sent = outbox[outbox["state"] != "failed"]["operation"].value_counts()
    assert from_store["transcripts_sent"].sum() == sent["send_transcript"]
    assert from_store["acknowledgments_sent"].sum() == sent["send_acknowledgment"]


def test_no_pyplot_figure_is_left_open(crafted: reconcile.Reconciliation) -> None:
    funnel_chart(crafted)
    ageing_chart(crafted)
    pyplot = sys.modules.get("matplotlib.pyplot")
    assert pyplot is None or pyplot.get_fignums() == []
