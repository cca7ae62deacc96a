"""Both event feeds over time: per pull run, per day, the latest events, a chart."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from workbench.report import (
    event_runs,
    events_chart,
    events_section,
    latest_events,
    latest_events_section,
)
from workbench.report.events import event_days, feed_summary
from workbench.store import Store


def test_feeds_per_run_and_per_day(report_db: Path) -> None:
    with Store(report_db) as store:
        runs = event_runs(store)
        snapshots = store.table("snapshots", where="list_name LIKE '%_events'")
        events = store.table("events")
        summary = feed_summary(store).set_index("source")
        days = event_days(store)
        latest = latest_events(store, 5)
        html = events_section(store).data + latest_events_section(store, 5).data
        fig = events_chart(store)
    assert len(runs) == len(snapshots) == 4  # two feeds, two pulls
    assert runs["source"].value_counts().to_dict() == {"placement": 2, "domestic": 2}
    assert (
        runs["listed"].tolist() == snapshots.sort_values(["taken_at", "id"])["item_count"].tolist()
    )
    for source in ("placement", "domestic"):
        mine = events[events["source"] == source]
        assert summary.loc[source, "events"] == len(mine)
        assert days[source].sum() == len(mine)
        assert summary.loc[source, "listed_now"] == int(mine["on_list"].sum())
    assert len(latest) == 5
    when = latest["occurred_at"].fillna(latest["first_seen_at"])
    assert when.is_monotonic_decreasing
    assert "Per pull run" in html and html.count("<tr>") > 10
    assert [ax.get_title() for ax in fig.axes] == ["placement events", "domestic events"]
    assert all(ax.lines for ax in fig.axes)


def test_an_empty_store_has_no_events(tmp_path: Path) -> None:
    with Store(tmp_path / "w.db") as store:
        assert "No events stored yet" in events_section(store).data
        assert "No events stored yet" in latest_events_section(store).data
        fig = events_chart(store)
    assert [t.get_text() for ax in fig.axes for t in ax.texts] == ["no data", "no data"]


def test_the_feeds_read_only_what_they_need(report_copy: Path) -> None:
    """One query per figure; the raw JSON only of the latest ``n`` events, in SQL order."""
    with Store(report_copy) as store:
        everything = store.table("events")
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        try:
            events_section(store)
            latest = latest_events(store, 3)
            events_chart(store)
        finally:
            store.db.conn.set_trace_callback(None)
    on_events = [s for s in statements if re.search(r'\bFROM "?events"?(\s|$)', s)]
    assert len(on_events) == 3  # per feed, per day, the latest
    raw = [s for s in on_events if "raw_json" in s or re.search(r"SELECT \*", s)]
    assert len(raw) == 1 and re.search(r"LIMIT 3\b", raw[0])
    when = everything["occurred_at"].fillna(everything["first_seen_at"])
    expected = everything.assign(_when=when).sort_values("_when", ascending=False, kind="stable")
    assert latest["event_id"].tolist() == expected["event_id"].head(3).tolist()
    assert latest["raw_json"].tolist() == expected["raw_json"].head(3).tolist()


def test_a_feed_with_no_events_counts_zero(tmp_path: Path) -> None:
    with Store(tmp_path / "w.db") as store:
        store.upsert_events("placement", [{"eventId": "e1", "eventType": "x"}])
        summary = feed_summary(store).set_index("source")
        days = event_days(store)
    assert summary.loc["placement", ["events", "listed_now", "event_types"]].tolist() == [1, 0, 1]
    assert summary.loc["domestic", ["events", "listed_now", "event_types"]].tolist() == [0, 0, 0]
    assert isinstance(summary.loc["placement", "first_seen"], pd.Timestamp)
    assert pd.isna(summary.loc["domestic", "first_seen"])
    assert days[["placement", "domestic"]].sum().tolist() == [1, 0]
