"""Trends over the store's pulls: ten pull runs against a moving sandbox, with sends between
them, and each series compared with figures the test works out from what it sent and what the
partner listed (never from ``trends`` itself)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.notebook_code import notebook_code
from tests.report.conftest import figures
from tests.watched import WatchedSandbox
from workbench import pesc, reconcile
from workbench.cli import app
from workbench.errors import InvalidParameter
from workbench.report import trends, trends_chart
from workbench.sandbox import SandboxSettings
from workbench.scenario import transcript_for
from workbench.store import Store

SLA = 5.0
RUNS = 10
DAY = timedelta(days=1)


@dataclass
class Expected:
    """What the test knows after each pull: ids listed, what it sent and when."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    answered: dict[str, datetime] = field(default_factory=dict)  # request id -> first answer
    acked: dict[str, datetime] = field(default_factory=dict)  # transcript id -> our ack
    sent: dict[str, datetime] = field(default_factory=dict)  # request id -> our transcript


@dataclass(frozen=True)
class History:
    db: Path
    expected: list[dict[str, Any]]


def _figures_now(sb: Any, w: wb.Workbench, done: Expected, run_id: int) -> dict[str, Any]:
    """The trend point for ``run_id``, worked out from the partner's lists and our sends."""
    finished = w.store.table("runs", where="id = ?", params=[run_id]).loc[0, "finished_at"]
    dates = {i: sb.state.requests[i].date for i in WatchedSandbox.pending_request_ids(sb)}
    dates |= {i: sb.state.requests[i].date for i in done.answered}
    open_ = [i for i in WatchedSandbox.pending_request_ids(sb) if i not in done.answered]
    waiting = [i for i in WatchedSandbox.pending_transcript_ids(sb) if i not in done.acked]
    to_answer = [max((at - dates[i]) / DAY, 0) for i, at in done.answered.items()]
    # ``reconcile`` rounds ages to 0.1 day before comparing them with the SLA
    late = [i for i in open_ if round((finished.to_pydatetime() - dates[i]) / DAY, 1) > SLA]
    within = sum(d <= SLA for d in to_answer)
    to_ack = [(at - sb.state.transcripts[i].date) / DAY for i, at in done.acked.items()]
    live = reconcile.reconcile(reconcile.load(w.store), sla_days=SLA)  # as of now, not as_of
    return {
        "run_id": run_id,
        "open_requests": len(open_),
        "transcripts_awaiting_ack": len(waiting),
        "answered": len(to_answer),
        "answered_within_sla": within,
        "sla_decided": len(to_answer) + len(late),
        "within_sla_share": within / (len(to_answer) + len(late)),
        "median_response_days": statistics.median(to_answer) if to_answer else None,
        "median_ack_days": statistics.median(to_ack) if to_ack else None,
        "partner_ack_count": len(done.sent),
        "kinds": live.exceptions["kind"].astype(str).value_counts().to_dict(),
        "live_open": live.headline["open_requests"],
    }


def _act(sb: Any, w: wb.Workbench, done: Expected, round_: int) -> None:
    """A response (Hold), a transcript and an acknowledgment: the oldest open items on even
    rounds (late, over the SLA), the newest on odd ones."""
    open_ = sorted((i for i in WatchedSandbox.pending_request_ids(sb) if i not in done.answered),
                   key=lambda i: sb.state.requests[i].date, reverse=bool(round_ % 2))  # fmt: skip
    for rid, kind in zip(open_, ("response", "transcript"), strict=False):
        document = w.store.document(rid, list_name="supplier_requests")
        if kind == "response":
            w.supplier.send_response(
                rid, pesc.build_response(document, status="Hold", hold_reason="Financial")
            )
        else:
            w.supplier.send_transcript(rid, transcript_for(document, rid, index=round_))
            done.sent[rid] = datetime.now(UTC)
        done.answered[rid] = datetime.now(UTC)
    waiting = sorted((i for i in WatchedSandbox.pending_transcript_ids(sb) if i not in done.acked),
                     key=lambda i: sb.state.transcripts[i].date)  # fmt: skip
    if waiting:
        w.consumer.send_acknowledgment(waiting[0])
        done.acked[waiting[0]] = datetime.now(UTC)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    """Ten pulls, twelve partner hours apart, ending a day and a half before now (nothing is
    dated in the future); no cancellations, re-issues or closures elsewhere, so the partner's
    lists and our sends tell every figure."""
    db = tmp_path_factory.mktemp("trends") / "workbench.db"
    start = datetime.now(UTC).replace(second=0, microsecond=0) - 6 * DAY
    settings = SandboxSettings(
        seed=4, start=start, initial_requests=14, initial_transcripts=8, requests_per_hour=0.5,
        transcripts_per_hour=0.25, closed_elsewhere_per_hour=0, reissue_per_hour=0,
        resubmission_per_hour=0, cancellation_per_hour=0, initial_placement_events=0,
        initial_domestic_events=0, placement_events_per_hour=0, domestic_events_per_hour=0,
    )  # fmt: skip
    done = Expected()
    with wb.connect("sandbox", db=db, sandbox=settings) as w:
        sb = w.sandbox
        assert sb is not None
        for round_ in range(RUNS):
            if round_:
                _act(sb, w, done, round_)
                sb.advance(hours=12)
            summary = w.pull(progress=False)
            assert summary.status == "ok", summary
            done.runs.append(_figures_now(sb, w, done, summary.run_id))
    return History(db, done.runs)


@pytest.mark.slow
def test_trends_over_ten_pulls_show_the_right_series(history: History) -> None:
    with Store(history.db, read_only=True) as store:
        t = trends(store, days=14, sla_days=SLA)
    p = t.points
    assert len(p) == t.runs_in_window == RUNS
    assert p["run_id"].tolist() == [e["run_id"] for e in history.expected]
    assert p["at"].is_monotonic_increasing and (p["status"] == "ok").all()
    for row, e in zip(p.to_dict("records"), history.expected, strict=True):
        where = f"run {e['run_id']}"
        for key in ("open_requests", "transcripts_awaiting_ack", "answered",
                    "answered_within_sla", "sla_decided"):  # fmt: skip
            assert (where, key, row[key]) == (where, key, e[key])
        assert row["open_requests"] == e["live_open"]
        assert row["within_sla_share"] == pytest.approx(e["within_sla_share"])
        for key in ("median_response_days", "median_ack_days"):
            if e[key] is None:
                assert pd.isna(row[key]), (where, key)
            else:  # our clock stamped each send a few milliseconds before the test did
                assert row[key] == pytest.approx(e[key], abs=1e-3), (where, key)
        if e["partner_ack_count"]:  # the sandbox acknowledges a transcript as it takes it
            assert row["median_partner_ack_days"] == pytest.approx(0, abs=1e-3)
        else:
            assert pd.isna(row["median_partner_ack_days"])
        kinds = {k: int(v) for k, v in t.by_kind.loc[e["run_id"]].items() if v}
        assert (where, kinds) == (where, e["kinds"])
        assert row["exceptions"] == sum(e["kinds"].values())
    # the series move: answers pile up, some late, some in time
    assert p["answered"].iloc[-1] == 2 * (RUNS - 1) > p["answered"].iloc[0] == 0
    assert 0 < p["within_sla_share"].iloc[-1] < 1
    assert p["open_requests"].nunique() > 1 and p["median_ack_days"].notna().any()


@pytest.mark.slow
def test_the_window_and_thinning_choose_the_runs(history: History) -> None:
    ids = [e["run_id"] for e in history.expected]
    with Store(history.db, read_only=True) as store:
        runs = store.table("runs").set_index("id")["finished_at"]
        fifth, third = runs[ids[4]], runs[ids[2]]
        window = (fifth - third) / pd.Timedelta(days=1)
        t = trends(store, days=window, until=fifth, sla_days=SLA)
        assert t.points["run_id"].tolist() == ids[3:5]  # after the start, up to until included
        one_a_day = trends(store, days=14, sla_days=SLA, max_points=3)
        before = trends(store, days=14, until=runs[ids[0]] - pd.Timedelta(seconds=1))
    days = runs[ids].dt.date
    last_of_each_day = [i for i, d in days.items() if d != days.get(i + 1)]
    assert one_a_day.runs_in_window == RUNS
    assert one_a_day.points["run_id"].tolist() == last_of_each_day
    assert before.points.empty and before.runs_in_window == 0


@pytest.mark.slow
def test_the_section_is_self_contained_and_says_what_it_counts(history: History) -> None:
    with Store(history.db, read_only=True) as store:
        t = trends(store, days=14, sla_days=SLA)
    html = notebook_code("reconcile").trends_section(t, tz="America/Toronto").data
    assert f'data-trend-points="{RUNS}"' in html and 'data-trend-days="14"' in html
    assert html.count("data:image/png;base64,") == 1 and "http" not in html.split("<style>")[0]
    assert html.count("<tr>") == RUNS + 1  # the header and one row per run
    last = t.points.iloc[-1]
    share = f"{last['answered_within_sla']} of {last['sla_decided']}"
    assert share in html
    median = last["median_response_days"]  # days with one decimal, as ages show: 9.0, not 9
    assert pd.notna(median) and f"<td>{median:.1f}</td>" in html
    assert len(trends_chart(t).axes) == 4


def test_an_empty_store_has_no_trend_yet(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.db") as store:
        t = trends(store, days=7)
    assert t.points.empty and t.by_kind.empty and t.runs_in_window == 0
    assert list(t.points.columns)[:3] == ["run_id", "at", "status"]
    html = notebook_code("reconcile").trends_section(t).data
    assert 'data-trend-points="0"' in html and "no trend yet" in html
    assert len(trends_chart(t).axes) == 4  # each panel says "no data"


@pytest.mark.parametrize("days", [0, -1, float("nan"), float("inf"), "7", True])
def test_a_window_that_is_not_a_number_of_days_is_refused(tmp_path: Path, days: Any) -> None:
    with Store(tmp_path / "empty.db") as store, pytest.raises(InvalidParameter) as caught:
        trends(store, days=days)
    assert caught.value.parameter == "trend_days" and "number of days" in str(caught.value)


@pytest.mark.slow
def test_report_trend_days_reaches_the_notebook(report_copy: Path, tmp_path: Path) -> None:
    arguments = ["--db", str(report_copy), "--no-pull", "--output-dir", str(tmp_path)]
    result = CliRunner().invoke(app, ["report", *arguments, "--trend-days", "3"])
    assert result.exit_code in (0, 3), result.output
    html = Path(result.stdout.strip().splitlines()[-1]).read_text()
    with Store(report_copy, read_only=True) as store:
        pulls = store.table("runs", where="kind = 'pull'")
    assert f'data-trend-points="{len(pulls)}"' in html and 'data-trend-days="3"' in html
    assert figures(html)  # the rest of the report is there too

    refused = CliRunner().invoke(app, ["report", "--db", str(report_copy), "--no-pull",
                                       "--trend-days", "0"])  # fmt: skip
    assert refused.exit_code == 2 and "--trend-days" in refused.output
