"""The charts: their bars are the reconciliation's numbers, and empty data says "no data"."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib import dates as mdates
from matplotlib.figure import Figure

from workbench import reconcile
from workbench.reconcile import age_buckets, age_labels
from workbench.report import (
    ageing_chart,
    daily_volumes,
    daily_volumes_chart,
    figure_html,
    funnel_chart,
    headline_section,
)
from workbench.store import Store

from .conftest import NOW, ageing, crafted_tables


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_the_funnel_counts_the_lifecycle(crafted: reconcile.Reconciliation) -> None:
    fig = funnel_chart(crafted)
    supplier, consumer = fig.axes
    widths = [p.get_width() for p in supplier.patches]
    labels = [t.get_text() for t in supplier.get_yticklabels()]
    assert dict(zip(labels, widths, strict=True)) == {
        "transcript requests": 4, "answered": 1, "transcripts sent": 1,
        "transcripts acknowledged": 0, "answered, still listed": 0, "closed elsewhere": 1,
        "uncertain sends": 0, "ack mismatches": 0,
    }  # fmt: skip
    assert "4 (100%)" in _texts(fig) and "1 (25%)" in _texts(fig)
    assert consumer.get_title() == "Consumer: transcripts received"
    assert "no data" in _texts(fig)  # no transcript received in the crafted state


def test_an_answer_still_listed_counts_at_every_stage_it_reached() -> None:
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame({"request_id": ["R1"], "on_list": [True]})
    tables["outbox"] = pd.DataFrame(
        [{"outbox_id": 1, "operation": "send_transcript", "request_id": "R1", "state": "sent",
          "sent_award_count": 2, "sent_course_count": 12}]
    )  # fmt: skip
    tables["acknowledgments"] = pd.DataFrame(
        [{"outbox_id": 1, "direction": "received", "request_id": "R1", "recorded_at": NOW,
          "academic_award_total": 2, "course_total": 12}]
    )  # fmt: skip
    fig = funnel_chart(reconcile.reconcile(tables, now=NOW))
    supplier = fig.axes[0]
    labels = [t.get_text() for t in supplier.get_yticklabels()]
    widths = dict(zip(labels, [p.get_width() for p in supplier.patches], strict=True))
    stages = ("answered", "transcripts sent", "transcripts acknowledged")
    assert [widths[k] for k in stages] == [1, 1, 1]
    assert widths["answered, still listed"] == 1


def _sla_x(ax) -> float:
    (line,) = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    return float(line.get_xdata()[0])


def test_ageing_bars_are_the_report_buckets(crafted: reconcile.Reconciliation) -> None:
    fig = ageing_chart(crafted)
    (ax,) = fig.axes
    heights = [int(p.get_height()) for p in ax.patches]
    counts = ageing(crafted)
    assert heights == [*counts["open"].values(), *counts["awaiting"].values()]
    assert sum(counts["open"].values()) == crafted.headline["open_requests"]
    assert ax.get_title() == "Ageing (SLA 5 days)"
    assert "open requests (1 over SLA)" in [t.get_text() for t in ax.get_legend().get_texts()]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == list(age_labels(5)) == ["0-2", "2-5", "5-10", ">10"]
    # the SLA line is the edge between the buckets within it and those over it
    assert _sla_x(ax) == pytest.approx(labels.index("2-5") + 0.5)


@pytest.mark.parametrize(
    ("sla", "labels"),
    [
        (0, ["0", "0-2", "2-5", "5-10", ">10"]),
        (5, ["0-2", "2-5", "5-10", ">10"]),
        (7, ["0-2", "2-5", "5-7", "7-10", ">10"]),
        (4.5, ["0-2", "2-4.5", "4.5-5", "5-10", ">10"]),
        (40, ["0-2", "2-5", "5-10", "10-40", ">40"]),
    ],
)
def test_the_sla_is_always_a_bucket_edge(sla: float, labels: list[str]) -> None:
    assert list(age_labels(sla)) == labels
    ages = pd.Series(np.arange(-1, 60, 0.1).round(1), dtype="Float64")
    buckets = age_buckets(ages, sla).astype(str)
    within = next(x for x in labels if x.split("-")[-1] == f"{sla:g}")  # the bucket up to it
    over = [labels.index(b) > labels.index(within) for b in buckets]
    assert over == (ages > sla).tolist()  # no bucket holds ages on both sides of the SLA


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


def _two_days() -> dict[str, pd.DataFrame]:
    """Requests dated over two days (one at 23:00, one just after midnight) and a transcript
    sent on the second."""
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame(
        {
            "request_id": ["A", "B", "C"],
            "request_date": pd.to_datetime(
                ["2026-03-08T23:00Z", "2026-03-09T00:30Z", "2026-03-09T08:00Z"]
            ),
        }
    )
    return tables


def test_two_days_of_volumes_tick_each_day_under_its_bars() -> None:
    fig = daily_volumes_chart(_two_days(), until=NOW)
    figure_html(fig)  # drawn: tick labels are set
    (ax,) = fig.axes
    ticks = ax.get_xticks()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Mar 08", "Mar 09"]  # no hours
    assert [t % 1 for t in ticks] == [0.5, 0.5]  # under each day's middle
    bars = [p for p in ax.patches if p.get_height() > 0]
    assert len(bars) == 2
    for bar in ax.patches:  # every bar inside its day, the day's bars centred on its noon
        start, end = bar.get_x(), bar.get_x() + bar.get_width()
        assert int(start) == int(end) and 0 < start % 1 < end % 1 < 1
    for day in {int(p.get_x()) for p in ax.patches}:
        mine = [p.get_x() + p.get_width() / 2 for p in ax.patches if int(p.get_x()) == day]
        assert len(mine) == 5 and np.mean(mine) == pytest.approx(day + 0.5)
    assert ax.get_xlim() == (ticks[0] - 0.5, ticks[-1] + 0.5)  # the axis is the two days


@pytest.mark.parametrize("odd", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", None, "soon"])
def test_an_implausible_date_stays_off_the_volumes_axis(odd: str | None) -> None:
    """Year 1, year 9999, no date and a date that is no date: counted on the day first seen,
    the axis within the plausible dates, and the chart draws."""
    tables = _two_days()
    tables["requests"] = pd.concat(
        [
            tables["requests"],
            pd.DataFrame(
                {
                    "request_id": ["Z"],
                    "request_date": [odd],
                    "first_seen_at": [NOW - pd.Timedelta(days=1)],
                }
            ),
        ],
        ignore_index=True,
    )
    volumes = daily_volumes(tables, until=NOW)
    assert volumes["requests_listed"].sum() == 4
    assert volumes["day"].min() >= pd.Timestamp("2026-03-08", tz="UTC")
    assert volumes.attrs["implausible"] == (1 if odd and odd[0].isdigit() else 0)
    fig = daily_volumes_chart(tables, until=NOW, tz="Pacific/Kiritimati")
    figure_html(fig)
    low, high = fig.axes[0].get_xlim()
    assert mdates.num2date(low).year == mdates.num2date(high).year == 2026
    if volumes.attrs["implausible"]:
        assert "1 with an implausible date on the day first seen" in fig.axes[0].get_title()


_CARD = re.compile(
    r'data-figure="(\w+)" data-value="(\d+)"><div class="wb-value">\d+</div>'
    r'<div class="wb-label">([^<]+)</div>'
)


def test_the_cards_and_the_funnel_name_each_figure_alike(report_db: Path) -> None:
    """Every bar of the funnel is a headline card of the same name and number (not "answered
    with a response: 4" beside "responded 10")."""
    with Store(report_db, read_only=True) as store:
        rec = reconcile.reconcile(reconcile.load(store))
    cards = {label: int(value) for _key, value, label in _CARD.findall(
        headline_section(rec).data)}  # fmt: skip
    fig = funnel_chart(rec)
    bars = {}
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        bars.update(zip(labels, [int(p.get_width()) for p in ax.patches], strict=True))
    named = {label: width for label, width in bars.items() if label in cards}
    assert named == {label: cards[label] for label in named}
    stages = ["transcript requests", "answered", "transcripts sent", "transcripts acknowledged",
              "transcripts received", "acknowledged by us", "awaiting our ack"]  # fmt: skip
    assert set(stages) <= set(named), set(stages) - set(named)
    assert bars["answered"] >= bars["transcripts sent"] >= bars["transcripts acknowledged"] > 0
    assert cards["answered with a TranscriptResponse"] <= cards["answered"]
