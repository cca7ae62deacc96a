"""Both event feeds over time: per pull run, per day, the latest events, a chart."""

from __future__ import annotations

from pathlib import Path

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
