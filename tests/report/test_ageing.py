"""Figures that agree with themselves (#13): items at, just under and just over the SLA land in
the bucket and the exception the cards say; nothing after the as-of time; times in a zone."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner
from workbench import reconcile
from workbench.config import load_profile
from workbench.errors import ConfigError
from workbench.reconcile import age_labels
from workbench.report import (
    ageing_chart,
    changes_section,
    daily_volumes,
    daily_volumes_chart,
    exceptions_section,
    funnel_chart,
    headline_section,
    report_zone,
)
from workbench.report.sections import bucket_key
from workbench.store import Store

from .conftest import ageing, figures

SLA = 5.0
# request id -> days before NOW it is dated (RequestDate); "RF" is dated after NOW
AGES = {"R_UNDER": 4.9, "R_AT": 5.0, "R_OVER": 5.1, "R_OLD": 10.4, "RF": -0.3}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A crafted store: five open requests (AGES) and a transcript awaiting our acknowledgment
    just over the SLA, nothing sent."""
    with Store(tmp_path / "ageing.db", busy_timeout_s=5) as s:
        partner = Partner(s)
        for request_id, days in AGES.items():
            partner.request(request_id, days=days)
        partner.transcript("T_OVER", days=5.2)
        partner.list_requests(*AGES)
        partner.list_transcripts("T_OVER")
        yield s


@pytest.fixture
def rec(store: Store) -> reconcile.Reconciliation:
    return reconcile.reconcile(reconcile.load(store), now=NOW, sla_days=SLA)


def _over_sla(counts: dict[str, int], sla: float) -> int:
    labels = list(age_labels(sla))
    within = next(i for i, b in enumerate(labels) if b.split("-")[-1] == f"{sla:g}")
    return sum(counts[b] for b in labels[within + 1 :])


def test_at_under_and_over_the_sla_land_in_the_bucket_and_exception_the_cards_say(
    rec: reconcile.Reconciliation,
) -> None:
    ages = rec.requests.set_index("request_id")["age_days"].to_dict()
    assert {k: ages[k] for k in ("R_UNDER", "R_AT", "R_OVER")} == {
        "R_UNDER": 4.9, "R_AT": 5.0, "R_OVER": 5.1}  # fmt: skip
    counts = ageing(rec)
    # at the SLA is within it (over means more than SLA days, as sla_breached counts)
    assert counts["open"] == {"0-2": 1, "2-5": 2, "5-10": 1, ">10": 1}
    assert counts["awaiting"] == {"0-2": 0, "2-5": 0, "5-10": 1, ">10": 0}
    h = rec.headline
    assert (h["open_over_sla"], h["awaiting_ack_over_sla"]) == (2, 1)
    assert _over_sla(counts["open"], SLA) == h["open_over_sla"]
    assert _over_sla(counts["awaiting"], SLA) == h["awaiting_ack_over_sla"]

    # the exceptions are those past the SLA, and their text shows the age with one decimal
    overdue = rec.exceptions[rec.exceptions["kind"].isin(["response_overdue", "ack_overdue"])]
    assert sorted(overdue["id"]) == ["R_OLD", "R_OVER", "T_OVER"]
    detail = overdue.set_index("id")["detail"]
    assert "no response for 5.1 days (SLA 5)" in detail["R_OVER"]
    assert "no response for 10.4 days (SLA 5)" in detail["R_OLD"]
    assert "for 5.2 days (SLA 5)" in detail["T_OVER"]

    # the cards say the same: buckets, over-SLA counts, exceptions
    found = figures(headline_section(rec).data)
    for side, prefix in (("open", "open_age"), ("awaiting", "awaiting_age")):
        for bucket, count in counts[side].items():
            assert found[f"{prefix}_{bucket_key(bucket)}"] == str(count), bucket
    assert (found["open_age_5_10"], found["open_age_over_10"], found["open_over_sla"]) == (
        "1", "1", "2")  # fmt: skip
    assert found["awaiting_ack_over_sla"] == found["awaiting_age_5_10"] == "1"
    html = exceptions_section(rec).data
    assert "5.1 days (SLA 5)" in html and "4.9 days" not in html and "R_AT" not in html


def test_the_chart_legend_and_the_sla_line_agree(rec: reconcile.Reconciliation) -> None:
    (ax,) = ageing_chart(rec).axes
    labels = [t.get_text() for t in ax.get_xticklabels()]
    (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    sla_x = float(line.get_xdata()[0])
    # bars to the right of the SLA line are the ones the legend counts as over the SLA
    right = [p for p in ax.patches if p.get_x() > sla_x]
    left = [p for p in ax.patches if p.get_x() + p.get_width() < sla_x]
    assert len(right) + len(left) == len(ax.patches)  # the line cuts through no bar
    over = int(sum(p.get_height() for p in right))
    assert over == rec.headline["open_over_sla"] + rec.headline["awaiting_ack_over_sla"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["open requests (2 over SLA)", "transcripts awaiting our ack (1 over SLA)"]
    assert labels.index("2-5") < sla_x < labels.index("5-10")
    # the request dated after NOW counts as 0 days, and the chart says so
    assert "1 dated after the as-of time count as 0" in ax.get_xlabel()


def test_nothing_after_the_as_of_time_and_no_negative_age(
    store: Store, rec: reconcile.Reconciliation
) -> None:
    tables = reconcile.load(store)
    volumes = daily_volumes(tables, until=NOW)
    assert volumes["day"].max() <= NOW
    assert volumes.attrs["after_until"] == 1  # RF, dated 0.3 days after NOW
    assert volumes["requests_listed"].sum() == len(AGES) - 1
    fig = daily_volumes_chart(tables, until=NOW)
    (ax,) = fig.axes
    assert "1 dated after the as-of time left out" in ax.get_title()
    assert max(p.get_x() + p.get_width() for p in ax.patches) <= ax.xaxis.convert_units(
        NOW.replace(tzinfo=None)
    )
    # the date labels come from a date locator (never one per bar, so they do not overlap)
    assert len(ax.get_xticks()) <= 10
    # every age the report shows is 0 or more
    buckets = ageing(rec)
    assert sum(buckets["open"].values()) == rec.headline["open_requests"] == len(AGES)
    shown = " ".join(
        [headline_section(rec).data, exceptions_section(rec).data, changes_section(store).data]
    )
    assert not re.search(r"-\d+(\.\d)? days", shown)


def test_volumes_stop_at_the_as_of_time_the_tables_were_loaded_at(store: Store) -> None:
    tables = reconcile.load(store, as_of=NOW)
    volumes = daily_volumes(tables)  # until: the as_of that load stamped on the tables
    assert volumes["day"].max() <= NOW
    assert volumes.attrs["after_until"] == 1


def test_times_show_in_the_zone_asked_for(rec: reconcile.Reconciliation) -> None:
    html = headline_section(rec, tz="America/Toronto").data
    # NOW is 09:00 UTC on 2026-03-10, after Toronto moved to daylight time on March 8
    assert "As of 2026-03-10 05:00 EDT (America/Toronto; stored in UTC)" in html
    assert 'data-tz="America/Toronto"' in html
    assert 'data-as-of="2026-03-10T09:00:00+00:00"' in html  # the machine-readable one is UTC
    assert "As of 2026-03-10 09:00 UTC · SLA 5 days" in headline_section(rec).data
    title = funnel_chart(rec, tz="Asia/Kolkata").get_suptitle()
    assert title == "Lifecycle as of 2026-03-10 14:30 IST"


def test_daily_volumes_count_per_day_in_the_zone() -> None:
    tables = reconcile.empty_tables()
    late = pd.Timestamp("2026-03-09T03:30Z")  # 23:30 the day before in Toronto
    tables["requests"] = pd.DataFrame(
        {"request_id": ["A", "B"], "request_date": [late, late + pd.Timedelta(hours=1)]}
    )
    utc = daily_volumes(tables)
    toronto = daily_volumes(tables, tz="America/Toronto")
    assert utc.set_index(utc["day"].dt.strftime("%m-%d"))["requests_listed"].to_dict() == {
        "03-09": 2}  # fmt: skip
    assert toronto.set_index(toronto["day"].dt.strftime("%m-%d"))["requests_listed"].to_dict() == {
        "03-08": 1, "03-09": 1}  # fmt: skip
    assert str(toronto["day"].dt.tz) == "America/Toronto"
    assert np.array_equal(toronto["requests_listed"], [1, 1])
    assert daily_volumes_chart(tables, tz="America/Toronto").axes[0].get_ylabel() == (
        "per day (America/Toronto)"
    )


@pytest.mark.parametrize("zone", ["Mars/Olympus_Mons", "America", "", "../etc/passwd", "EST5"])
def test_an_unknown_zone_is_a_config_error_naming_it(zone: str) -> None:
    with pytest.raises(ConfigError, match=r"is not a time zone.*America/Toronto") as caught:
        report_zone(zone)
    assert repr(zone) in str(caught.value)


def test_the_profile_timezone_is_the_default_zone() -> None:
    assert load_profile(env={"WORKBENCH_TIMEZONE": "Europe/Paris"}).timezone == "Europe/Paris"
    assert load_profile(env={}).timezone == "UTC"
    assert report_zone("Asia/Tokyo") == "Asia/Tokyo"  # the option wins
    with pytest.raises(ConfigError, match="WORKBENCH_TIMEZONE: 'Nowhere' is not a time zone"):
        load_profile(env={"WORKBENCH_TIMEZONE": "Nowhere"})


def test_a_profile_file_names_its_zone(tmp_path: Path) -> None:
    config = tmp_path / "workbench.toml"
    config.write_text('[profiles.college]\ntimezone = "America/Vancouver"\n')
    profile = load_profile("college", env={}, config_path=config)
    assert profile.timezone == "America/Vancouver"
    assert report_zone(None, profile="college", config_path=str(config)) == "America/Vancouver"
    config.write_text('[profiles.college]\ntimezone = "Pacific"\n')
    with pytest.raises(ConfigError, match=r"timezone.*'Pacific' is not a time zone"):
        load_profile("college", env={}, config_path=config)
