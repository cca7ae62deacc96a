"""The events report: counts by the day, weekday and hour events occurred (in the report's
zone), by type, program and campus, readable latest events, charts whose labels do not repeat,
and the cap warning. A crafted store: every event first seen on one day, occurring on others;
the two with no readable time of their own are placed on that day, and said so."""

from __future__ import annotations

import io
import re
from collections import Counter
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from matplotlib import dates as mdates

import workbench as wb
from tests.notebook_code import notebook_code
from workbench.report import figure_html
from workbench.store import Store

EVENTS = notebook_code("events")  # what notebooks/events.ipynb defines

SEEN = "2026-03-10T09:00:00Z"  # every crafted event is first seen then, a week after most occur
TORONTO = "America/Toronto"
CPAN = {"programCode": "CPAN", "programName": "Computer Programming & Analysis"}
ODD = {"programCode": "B&A", "programName": "Business & <Accounting>"}


def _event(eid: str, kind: str, when: str | None, **payload: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"eventId": eid, "eventType": kind, "payload": payload}
    if when is not None:
        event["occurredAt"] = when
    return event


PLACEMENT = [
    _event("p1", "PlacementCreated", "2026-03-02T10:15:30Z", **CPAN, campus="Main"),
    _event("p2", "OfferIssued", "2026-03-02T23:30:00Z", **ODD, campus="Downtown",
           givenName="Zoë", familyName="O'Brien"),
    _event("p3", "PlacementCreated", "2026-03-03T03:00:00Z", **CPAN, campus="Lakeshore"),
    _event("p4", "PlacementUpdated", None, campus="Main"),  # no occurrence time, no program
]  # fmt: skip
DOMESTIC = [
    # program and campus at the top of the event, not in a payload
    {"eventId": "d1", "eventType": "ApplicationSubmitted", "occurredAt": "2026-03-02T10:00:00Z",
     "programCode": "CPAN", "programName": CPAN["programName"], "campus": "Main"},
    _event("d2", "OfferMade", "2026-03-04T12:00:00Z", programCode="PNUR",
           programName="Practical Nursing", campus="Main", conditions=["English 12", "Math"]),
    _event("d3", "ApplicationSubmitted", "2026-03-04T12:59:59Z", programCode="PNUR",
           programName="Practical Nursing", campus="Online", source="web"),
    _event("d4", "ApplicationSubmitted", "yesterday", programCode="PNUR"),  # not a time
    _event("d5", "OfferMade", "2026-03-06T08:00:00+02:00", **CPAN, campus="Main"),
]  # fmt: skip
FEEDS = {"placement": PLACEMENT, "domestic": DOMESTIC}


@pytest.fixture
def crafted_db(tmp_path: Path) -> Path:
    db = tmp_path / "events.db"
    with Store(db) as store:
        for source, events in FEEDS.items():
            store.record_snapshot(None, f"{source}_events", events, taken_at=SEEN)
    return db


# -- what the test expects, computed from the crafted events without the workbench ----------


def _fields(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, **event.get("payload", {})}


def _occurred(event: dict[str, Any], tz: str | None) -> datetime:
    """When the event occurred, else (no time, or not a time) when it was first seen."""
    try:
        when = datetime.fromisoformat(event["occurredAt"])
    except (KeyError, ValueError):
        when = datetime.fromisoformat(SEEN)
    return when.astimezone(ZoneInfo(tz or "UTC"))


def _key(event: dict[str, Any], by: str, tz: str | None) -> Any:
    f = _fields(event)
    if by == "event_type":
        return f["eventType"]
    if by == "campus":
        return f.get("campus", "(not given)")
    if by == "program":
        if "programName" in f:
            return f"{f['programName']} ({f['programCode']})"
        return f.get("programCode", "(not given)")
    when = _occurred(event, tz)
    return {"day": when.date(), "weekday": when.strftime("%a"), "hour": when.hour}[by]


def _expected(by: str, tz: str | None = None) -> dict[Any, tuple[int, int, int]]:
    """key -> (placement, domestic, total), for keys that have events."""
    counts = Counter((_key(e, by, tz), source) for source, events in FEEDS.items() for e in events)
    keys = {k for k, _ in counts if k is not None}
    return {
        k: (counts[k, "placement"], counts[k, "domestic"],
            counts[k, "placement"] + counts[k, "domestic"])
        for k in keys
    }  # fmt: skip


def _counted(frame: pd.DataFrame, by: str) -> dict[Any, tuple[int, int, int]]:
    rows = frame.set_index(by)[["placement", "domestic", "total"]]
    return {k: tuple(int(v) for v in row) for k, row in rows.iterrows() if row["total"]}


# -- counts ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tz", [None, TORONTO])
def test_days_are_when_events_occurred_in_the_report_zone(crafted_db: Path, tz: str | None):
    with Store(crafted_db) as store:
        days = EVENTS.event_days(store, tz=tz)
    expected = _expected("day", tz)
    assert _counted(days, "day") == expected
    # every day between the first and the last is listed, those without events as zeros
    first, last = min(expected), max(expected)
    assert days["day"].tolist() == [
        first + timedelta(days=n) for n in range((last - first).days + 1)
    ]
    assert days.attrs["without_time"] == 2  # p4 has no occurrence time, d4's is not a time
    assert _counted(days, "day")[date(2026, 3, 10)] == (1, 1, 2)  # the day they were first seen


def test_the_zone_moves_events_across_midnight(crafted_db: Path) -> None:
    with Store(crafted_db) as store:
        utc = _counted(EVENTS.event_days(store), "day")
        toronto = _counted(EVENTS.event_days(store, tz=TORONTO), "day")
    assert utc[date(2026, 3, 3)] == (1, 0, 1)  # p3 at 03:00 UTC ...
    assert date(2026, 3, 3) not in toronto  # ... is 22:00 the day before in Toronto
    assert toronto[date(2026, 3, 2)] == (3, 1, 4)


@pytest.mark.parametrize("by", ["event_type", "program", "campus", "weekday", "hour"])
@pytest.mark.parametrize("tz", [None, TORONTO])
def test_breakdowns_equal_counts_computed_here(crafted_db: Path, by: str, tz: str | None):
    with Store(crafted_db) as store:
        frame = EVENTS.events_breakdown(store, by, tz=tz)
    assert _counted(frame, by) == _expected(by, tz)
    if by in ("weekday", "hour"):
        assert len(frame) == (7 if by == "weekday" else 24)  # every one listed, in order
    else:
        assert frame["total"].is_monotonic_decreasing
    assert frame["total"].sum() == len(PLACEMENT) + len(DOMESTIC)
    assert frame.attrs["without_time"] == 2


def test_an_unknown_breakdown_is_refused(crafted_db: Path) -> None:
    with Store(crafted_db) as store, pytest.raises(ValueError, match="one of event_type"):
        EVENTS.events_breakdown(store, "colour")


# -- what the HTML shows ------------------------------------------------------------------


def _tables(html: str) -> dict[str, pd.DataFrame]:
    """Each ``<h4>`` heading of ``html`` -> the table after it."""
    out = {}
    for title, body in re.findall(r"<h4>(.*?)</h4>(.*?)(?=<h4>|$)", html, re.S):
        if "<table" in body:
            out[title] = pd.read_html(io.StringIO(body))[0]
    return out


@pytest.mark.parametrize("tz", [None, TORONTO])
def test_the_section_says_which_events_count_when_first_seen(crafted_db: Path, tz: str | None):
    with Store(crafted_db) as store:
        html = (
            EVENTS.events_section(store, tz=tz).data
            + EVENTS.latest_events_section(store, 10, tz=tz).data
        )
    assert "Business &amp; &lt;Accounting&gt;" in html  # escaped, never markup
    note = "2 events had no time of their own: each is counted at the time it was first seen."
    assert html.count(note) == 1  # the charts count per day, weekday...: said once


def test_latest_events_are_readable_tables(crafted_db: Path) -> None:
    with Store(crafted_db) as store:
        html = EVENTS.latest_events_section(store, 10, tz=TORONTO).data
        first_three = EVENTS.latest_events(store, 3, source="domestic")
    shown = html.split("</style>", 1)[1]
    assert "raw_json" not in shown and "{" not in shown and "eventId" not in shown
    tables = _tables(html)
    placement, domestic = tables["Latest placement events"], tables["Latest domestic events"]
    assert len(placement) == len(PLACEMENT) and len(domestic) == len(DOMESTIC)
    column = f"occurred ({TORONTO})"
    assert {"program code", "program name", "campus", "event type", "event id"} <= set(domestic)
    by_id = domestic.set_index("event id")
    assert by_id.loc["d5", column] == "2026-03-06\u00a001:00:00"  # 06:00 UTC, to the second
    # not a time: placed when first seen, said so, and shown as the partner wrote it
    assert by_id.loc["d4", column] == "2026-03-10\u00a005:00:00 (first seen)"
    assert by_id.loc["d4", "occurred at"] == "yesterday"
    assert "occurred at" not in placement  # read as a time: its own column only
    assert by_id.loc["d2", "conditions"] == "English 12, Math"
    assert by_id.loc["d1", "program code"] == "CPAN"  # top-level fields flattened too
    assert by_id.loc["d3", "source"] == "domestic"  # the feed; the event's own field beside it
    assert by_id.loc["d3", "source (field)"] == "web"
    assert placement.set_index("event id").loc["p2", "given name"] == "Zoë"
    # latest first by when they occurred; d4 (no time) sorts by when it was first seen
    assert first_three["event_id"].tolist() == ["d4", "d5", "d3"]
    assert list(domestic[column]) == sorted(domestic[column], reverse=True)


def test_a_hostile_payload_keeps_the_latest_events_table_small(tmp_path: Path) -> None:
    """50 events with 200 fields each, none shared, and a 1 MB value: the common fields get
    columns, the rest one "other fields" cell each, and every cell is cut with an ellipsis."""
    events = []
    for i in range(50):
        odd = {f"k{i}_{j}": j for j in range(200)}
        intake = "A" * 1_000_000 if i == 0 else "2026-09"
        events.append(_event(f"h{i:02d}", "OfferMade", f"2026-03-02T10:{i:02d}:00Z",
                             **CPAN, campus="Main", intake=intake, **odd))  # fmt: skip
    with Store(tmp_path / "hostile.db") as store:
        store.record_snapshot(None, "domestic_events", events, taken_at=SEEN)
        html = EVENTS.latest_events_section(store, 50).data
    assert len(html) < 150_000  # was 12.7 MB for the fields, 50 MB for the value
    table = _tables(html)["Latest domestic events"]
    assert len(table) == 50
    keys = [k.replace("_", " ") for k in sorted(f"k49_{j}" for j in range(200))]  # as stored
    # program and campus, then the fields most events have, then, among fields as common, the
    # first found (in the latest event)
    own = ["program code", "program name", "campus", "intake", *keys[: EVENTS.EVENT_COLUMNS - 1]]
    assert list(table.columns) == ["source", "occurred (UTC)", "event type", *own,
                                   EVENTS.OTHER_FIELDS, "first seen (UTC)", "on list",
                                   "event id"]  # fmt: skip
    by_id = table.set_index("event id")
    assert by_id.loc["h00", "intake"] == "A" * (EVENTS.EVENT_CELL_CHARS - 1) + "\u2026"
    assert by_id.loc["h01", "intake"] == "2026-09"
    assert by_id.loc["h01", EVENTS.OTHER_FIELDS].startswith("k1 0: 0; k1 1: 1; k1 10: 10; ")
    assert by_id.loc["h49", EVENTS.OTHER_FIELDS].startswith(f"{keys[EVENTS.EVENT_COLUMNS - 1]}: ")
    assert str(by_id.loc["h49", "k49 0"]) == "0"
    assert by_id.loc["h01", "k49 0"] == "\u2013"  # the dash of a missing value
    assert all(len(str(v)) <= EVENTS.EVENT_CELL_CHARS for v in table.to_numpy().ravel())


def test_an_empty_store_has_no_events(tmp_path: Path) -> None:
    with Store(tmp_path / "w.db") as store:
        assert "No events stored yet" in EVENTS.events_section(store).data
        latest = EVENTS.latest_events_section(store).data
        figs = [EVENTS.events_days_chart(store), EVENTS.events_breakdown_chart(store)]
    assert "No placement events stored yet." in latest and "No domestic events" in latest
    assert [t.get_text() for t in figs[0].axes[0].texts] == ["no data"]
    assert all(t.get_text() == "no data" for ax in figs[1].axes for t in ax.texts)


# -- charts -------------------------------------------------------------------------------


def _labels(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text()]


def test_the_days_chart_stacks_the_counts_and_labels_each_day_once(crafted_db: Path) -> None:
    with Store(crafted_db) as store:
        fig = EVENTS.events_days_chart(store)
    figure_html(fig)  # drawn: tick labels are set
    (ax,) = fig.axes
    assert _labels(ax) == [f"Mar {d:02d}" for d in range(2, 11)]
    heights: Counter[float] = Counter()
    for bar in ax.patches:
        middle = bar.get_x() + bar.get_width() / 2
        assert middle % 1 == pytest.approx(0.5)  # centred on its day: noon
        heights[int(middle)] += bar.get_height()
    assert sorted(heights.values()) == sorted(
        [*(t for _, _, t in _expected("day").values()), 0, 0, 0, 0]  # and Mar 05, 07-09, empty
    )
    assert "2 with no time of their own on the day first seen" in ax.get_title()


def test_a_long_span_labels_days_without_repeating(tmp_path: Path) -> None:
    start = datetime(2026, 1, 1, 12)
    events = [{"eventId": f"e{n}", "occurredAt": (start + timedelta(days=n)).isoformat() + "Z"}
              for n in range(0, 400, 3)]  # fmt: skip
    with Store(tmp_path / "w.db") as store:
        store.record_snapshot(None, "domestic_events", events[:20])
        short = EVENTS.events_days_chart(store)
        store.record_snapshot(None, "domestic_events", events)
        long = EVENTS.events_days_chart(store)
    for fig in (short, long):
        figure_html(fig)
        labels = _labels(fig.axes[0])
        assert len(labels) >= 3 and len(labels) == len(set(labels)), labels
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", label) for label in _labels(long.axes[0]))


def test_the_breakdown_chart_shows_the_counts(crafted_db: Path) -> None:
    with Store(crafted_db) as store:
        fig = EVENTS.events_breakdown_chart(store, tz=TORONTO)
    figure_html(fig)
    panels = {ax.get_title(): ax for ax in fig.axes}
    campus = panels["By campus"]
    widths: Counter[str] = Counter()
    for bar in campus.patches:
        widths[campus.get_yticklabels()[round(bar.get_y() + bar.get_height() / 2)].get_text()] += (
            bar.get_width()
        )
    assert dict(widths) == {k: v[2] for k, v in _expected("campus").items()}
    hours = panels[f"By hour they occurred ({TORONTO})"]
    assert _labels(hours) == [str(h) for h in range(24)]
    assert sum(b.get_height() for b in hours.patches) == sum(
        t for _, _, t in _expected("hour", TORONTO).values()
    )


def test_the_feeds_per_pull_run(report_db: Path) -> None:
    with Store(report_db) as store:
        runs = EVENTS.event_runs(store)
        snapshots = store.table("snapshots", where="list_name LIKE '%_events'")
        events = store.table("events")
        summary = EVENTS.feed_summary(store).set_index("source")
    assert len(runs) == len(snapshots) == 4  # two feeds, two pulls
    assert runs["source"].value_counts().to_dict() == {"placement": 2, "domestic": 2}
    assert (
        runs["listed"].tolist() == snapshots.sort_values(["taken_at", "id"])["item_count"].tolist()
    )
    for source in ("placement", "domestic"):
        mine = events[events["source"] == source]
        assert summary.loc[source, "events"] == len(mine)
        assert summary.loc[source, "listed_now"] == int(mine["on_list"].sum())


def test_the_feeds_read_only_what_they_need(report_copy: Path) -> None:
    """Raw JSON leaves SQLite only for the latest ``n`` events: the counts are made there."""
    with Store(report_copy) as store:
        everything = store.table("events")
        statements: list[str] = []
        store.db.conn.set_trace_callback(statements.append)
        try:
            EVENTS.events_section(store)
            latest = EVENTS.latest_events(store, 3)
        finally:
            store.db.conn.set_trace_callback(None)
    on_events = [s for s in statements if re.search(r'\bFROM "?events"?(\s|$)', s)]
    assert len(on_events) == 3  # the summary, the facts counted per day, the latest
    raw = [s for s in on_events if re.search(r"(SELECT|,)\s*(raw_json|\*)\s*(,|FROM)", s)]
    assert len(raw) == 1 and re.search(r"LIMIT 3\b", raw[0])
    expected = everything.sort_values("occurred_at", ascending=False, kind="stable")
    assert latest["event_id"].tolist() == expected["event_id"].head(3).tolist()


def test_a_feed_with_no_events_counts_zero(tmp_path: Path) -> None:
    with Store(tmp_path / "w.db") as store:
        event = {"eventId": "e1", "eventType": "x", "occurredAt": "2026-03-02T10:00:00Z"}
        store.record_snapshot(None, "placement_events", [event])
        summary = EVENTS.feed_summary(store).set_index("source")
        days = EVENTS.event_days(store)
    assert summary.loc["placement", ["events", "listed_now", "event_types"]].tolist() == [1, 1, 1]
    assert summary.loc["domestic", ["events", "listed_now", "event_types"]].tolist() == [0, 0, 0]
    assert isinstance(summary.loc["placement", "first_seen"], pd.Timestamp)
    assert pd.isna(summary.loc["domestic", "first_seen"])
    assert days[["placement", "domestic"]].sum().tolist() == [1, 0]


# -- the cap warning ----------------------------------------------------------------------


def test_a_feed_read_at_the_partners_learned_cap_is_warned_of(sandbox_factory, tmp_path: Path):
    sb = sandbox_factory(max_peek_count=20, initial_domestic_events=30)
    with wb.connect(env=sb.env, db=tmp_path / "wb.db") as w:
        w.pull(progress=False)
        html = EVENTS.events_section(w.store).data
    assert 'class="wb-figure wb-alert" data-cut-off="domestic"' in html
    assert "answered 20 events" in html and "may be unseen" in html
    assert "20 is the most this partner hands out at once" in html
    assert "ask the partner" in html and "WORKBENCH_PEEK_COUNT" not in html


def test_a_feed_read_at_the_profiles_count_says_what_to_raise(
    sandbox_factory, tmp_path: Path
) -> None:
    sb = sandbox_factory(initial_domestic_events=30)
    with wb.connect(env={**sb.env, "WORKBENCH_PEEK_COUNT": "10"}, db=tmp_path / "wb.db") as w:
        w.pull(progress=False)
        html = EVENTS.events_section(w.store).data
        assert "answered 10 events" in html
        assert "Raise WORKBENCH_PEEK_COUNT (peek_count in the profile) above 10" in html
        # a later pull that could not read the feed says nothing of it: the warning stays
        failed = w.store.begin_run()
        unread = {"lists": {"domestic_events": {"error": "timeout"}}}
        w.store.finish_run(failed, status="partial", summary=unread)
        assert "answered 10 events" in EVENTS.events_section(w.store).data
        # one that read all of it clears it
        later = w.store.begin_run()
        w.store.finish_run(later, status="ok",
                           summary={"lists": {"domestic_events": {"cut_off_at": 0}}})  # fmt: skip
        assert "data-cut-off" not in EVENTS.events_section(w.store).data


# -- implausible times --------------------------------------------------------------------


ODD_SEEN = "2026-03-05T00:00:00Z"


@pytest.fixture
def odd_db(crafted_db: Path) -> Path:
    """The crafted store and three events a partner may send, first seen on March 5: of year
    1, of 9999 (both read as times, so stored as such), and one of year 1 kept elsewhere."""
    with Store(crafted_db) as store:
        store.record_snapshot(None, "domestic_events", [
            _event("y1", "OfferMade", "0001-01-01T00:00:00Z", **CPAN),
            _event("y9", "OfferMade", "9999-12-31T23:59:59Z", campus="Main"),
        ], taken_at=ODD_SEEN)  # fmt: skip
        store.record_snapshot(None, "placement_events", [
            {"eventId": "n1", "eventInfo": {"timestamp": "0001-01-01T00:00:00Z", "data": {}}},
        ], taken_at=ODD_SEEN)  # fmt: skip
    return crafted_db


def test_an_implausible_time_is_listed_and_counted_when_first_seen(odd_db: Path) -> None:
    with Store(odd_db) as store:
        days = EVENTS.event_days(store, tz=TORONTO)
        weekdays = EVENTS.events_breakdown(store, "weekday", tz=TORONTO)
        html = EVENTS.events_section(store, tz=TORONTO).data
        latest = EVENTS.latest_events(store, 3, source="domestic")
        latest_html = EVENTS.latest_events_section(store, 20, tz=TORONTO).data
        figs = [
            EVENTS.events_days_chart(store, tz=TORONTO),
            EVENTS.events_breakdown_chart(store, tz=TORONTO),
        ]
    # counted on the day first seen, as an event with no time is
    assert days.attrs["implausible"] == 3 and days.attrs["without_time"] == 2
    assert min(days["day"]) == date(2026, 3, 2) and max(days["day"]) == date(2026, 3, 10)
    assert days[["placement", "domestic"]].to_numpy().sum() == 12
    assert weekdays["total"].sum() == 12 and weekdays.attrs["implausible"] == 3
    # each listed, with the field and the value as the partner wrote them
    assert 'data-problems="3"' in html
    rows = re.findall(r"<tr><td>(\w+)</td><td>(\w+)</td><td>([\w.]+)</td><td>([^<]+)</td>", html)
    assert sorted(rows) == [
        ("domestic", "y1", "occurredAt", "0001-01-01T00:00:00Z"),
        ("domestic", "y9", "occurredAt", "9999-12-31T23:59:59Z"),
        ("placement", "n1", "eventInfo.timestamp", "0001-01-01T00:00:00Z"),
    ]
    assert "Times outside the plausible dates" in html
    assert "3 events gave times outside the plausible dates" in html
    # the latest are the latest plausible ones; the odd ones show their value, marked
    assert latest["event_id"].tolist() == ["d4", "d5", "y9"]  # y9 by when first seen
    assert "9999-12-31\u00a018:59:59 (implausible)" in latest_html  # Toronto, 5 hours behind
    assert "0000-12-31\u00a018:42:28 (implausible)" in latest_html  # local mean time
    for fig in figs:
        figure_html(fig)  # draws
    (ax,) = figs[0].axes
    low, high = (mdates.num2date(x) for x in ax.get_xlim())
    assert (low.date(), high.date()) == (date(2026, 3, 2), date(2026, 3, 11))
    assert "3 with an implausible time on the day first seen" in ax.get_title()
    assert "3 with an implausible time" in figs[1].get_suptitle()


def test_a_store_whose_pulls_skip_both_feeds_says_so(sandbox, tmp_path: Path) -> None:

    env = {**sandbox.env, "WORKBENCH_INTERFACES": "supplier,consumer"}
    with wb.connect(env=env, db=tmp_path / "x.db") as w:
        w.pull(progress=False)
    with Store(tmp_path / "x.db", read_only=True) as store:
        said = EVENTS.events_section(store).data
    assert "skip both event feeds (international: not in the profile&#x27;s interfaces;" in said
    assert "run `workbench pull`" not in said
