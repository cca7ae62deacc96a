"""The events notebook run as ``workbench report --notebook events`` runs it (the library job):
its HTML holds readable tables and charts, counts by occurrence day in the report's zone, and
no raw JSON, whatever shape the partner gives its events."""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from tests.notebook_code import notebook_code
from workbench.report.job import run_report_job
from workbench.store import Store

pytestmark = pytest.mark.slow
TORONTO = "America/Toronto"
EVENTS = notebook_code("events")  # what notebooks/events.ipynb defines


@pytest.fixture(autouse=True)
def _clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No profile setting from outside; the kernel starts in a temporary folder."""
    for name in ("WORKBENCH_TIMEZONE", "WORKBENCH_PROFILE", "WORKBENCH_DB", "WORKBENCH_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_the_events_report(report_copy: Path, tmp_path: Path) -> None:
    said: list[str] = []
    job = run_report_job(
        "events", {"tz": TORONTO}, db=str(report_copy), no_pull=True,
        output_dir=str(tmp_path / "reports"), say=said.append, warn=said.append,
    )  # fmt: skip
    assert job.run is not None, said
    assert job.verdict() == (0, [])
    html = job.run.html_path.read_text(encoding="utf-8")
    with Store(report_copy) as store:
        events = store.table("events")
    # no raw JSON: neither the column nor an event's keys, quoted or escaped
    assert "raw_json" not in html
    assert not re.search(r"&quot;(eventId|payload|occurredAt)&quot;|\"eventId\"", html)
    assert html.count('src="data:image/png;base64,') == 2  # per day, breakdowns
    for title in ("Feeds", "Per pull run", "Latest placement events", "Latest domestic events"):
        assert f"<h4>{title}</h4>" in html, title
    assert f'alt="Events per day they occurred ({TORONTO})' in html  # the charts' zone
    # the per-day counts the chart draws: by the day each event occurred in Toronto
    with Store(report_copy) as store:
        shown = EVENTS.event_days(store, tz=TORONTO).set_index("day")
    occurred = pd.to_datetime(events["occurred_at"], utc=True).dt.tz_convert(TORONTO)
    expected = (
        events.assign(day=occurred.dt.date).groupby(["day", "source"]).size().unstack(fill_value=0)
    )  # fmt: skip
    for day, row in expected.iterrows():
        for source in ("placement", "domestic"):
            assert shown.loc[day, source] == row.get(source, 0), (day, source)
    assert shown["total"].sum() == len(events)
    assert (shown["total"] > 0).sum() > 1  # not everything on the day it was first seen
    # latest events: times to the second in the report's zone, fields flattened
    latest = html.split("<h4>Latest domestic events</h4>", 1)[1]
    assert f"<th>occurred ({TORONTO})</th>" in latest and "<th>program name</th>" in latest
    assert re.search(r"<td>\d{4}-\d\d-\d\d\xa0\d\d:\d\d:\d\d</td>", latest)


def test_the_events_report_of_a_partner_shaping_events_as_kind_at(sandbox_factory, tmp_path):
    """Events as ``{id, kind, at, payload}``, in an object holding their array: the notebook
    counts their types, draws them on the days they occurred, and lists the latest first."""
    sb = sandbox_factory(event_shape="kind_at", event_list="object")
    db = tmp_path / "kind_at.db"
    with wb.connect(env=sb.env, db=db) as w:
        assert w.pull(progress=False).status == "ok"
    said: list[str] = []
    job = run_report_job(
        "events", {"tz": TORONTO}, db=str(db), no_pull=True,
        output_dir=str(tmp_path / "reports"), say=said.append, warn=said.append,
    )  # fmt: skip
    assert job.run is not None, said
    assert job.verdict() == (0, [])
    html = job.run.html_path.read_text(encoding="utf-8")
    truth = [*sb.state.placement_events, *sb.state.domestic_events]

    def table_after(title: str) -> pd.DataFrame:
        body = html.split(f"<h4>{title}</h4>", 1)[1]
        return pd.read_html(io.StringIO(body.split("<h4>", 1)[0]))[0]

    with Store(db) as store:
        types = (
            notebook_code("events")
            .events_breakdown(store, "event_type")
            .set_index("event_type")["total"]
            .to_dict()
        )
        days = EVENTS.event_days(store, tz=TORONTO).set_index("day")["total"]
    assert types == dict(Counter(e["eventType"] for e in truth))  # no "(not given)"
    occurred = pd.to_datetime([e["occurredAt"] for e in truth], utc=True).tz_convert(TORONTO)
    assert days[days > 0].to_dict() == Counter(occurred.date)
    assert "had no time of their own" not in html
    latest = table_after("Latest domestic events")[f"occurred ({TORONTO})"].tolist()
    newest = sorted(sb.state.domestic_events, key=lambda e: e["occurredAt"], reverse=True)
    expected = pd.to_datetime([e["occurredAt"] for e in newest[:20]], utc=True)
    assert latest == list(expected.tz_convert(TORONTO).strftime("%Y-%m-%d\xa0%H:%M:%S"))
