"""Freshness: when each list and feed was last read, how the last pull went, and `--max-age`.

Crafted stores: runs and snapshots written through the store, then dated by SQL (a store
cannot write the past), and the session's populated store aged by hours for the CLI.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from lxml import html as lxml_html
from typer.testing import CliRunner

from workbench.cli import app
from workbench.report import freshness, freshness_section
from workbench.store import Store

T0 = pd.Timestamp("2026-03-10T09:00Z")
ALL_READ = {n: {"error": None} for n in ("supplier_requests", "consumer_transcripts",
                                        "domestic_events")}  # fmt: skip
PARTNER_ERROR = "HTTP 503 <script>alert(1)</script> from the gateway"


def stamp(when: pd.Timestamp) -> str:
    return when.tz_convert("UTC").strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def date_run(db: Path, run_id: int, when: pd.Timestamp) -> None:
    """Date run ``run_id`` and its snapshots at ``when`` (it started a minute before)."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE runs SET started_at = ?, finished_at = ? WHERE id = ?",
            (stamp(when - pd.Timedelta(minutes=1)), stamp(when), run_id),
        )
        conn.execute("UPDATE snapshots SET taken_at = ? WHERE run_id = ?", (stamp(when), run_id))
    conn.close()


def age_store(db: Path, hours: float) -> None:
    """Move every run and snapshot of ``db`` ``hours`` into the past."""
    back = pd.Timedelta(hours=hours)
    with sqlite3.connect(db) as conn:
        for table, columns in (
            ("runs", ("started_at", "finished_at")),
            ("snapshots", ("taken_at",)),
        ):
            for column in columns:
                rows = conn.execute(f"SELECT rowid, {column} FROM {table}").fetchall()  # noqa: S608
                conn.executemany(
                    f"UPDATE {table} SET {column} = ? WHERE rowid = ?",  # noqa: S608
                    [(stamp(pd.Timestamp(v) - back), r) for r, v in rows if v is not None],
                )
    conn.close()


@pytest.fixture
def two_pulls(tmp_path: Path) -> Path:
    """A complete pull 30 hours before T0 (international skipped: no credentials), then a
    partial one 2 hours before T0: the consumer list failed and one request's detail too."""
    db = tmp_path / "crafted.db"
    with Store(db) as store:
        first = store.begin_run(profile="prod")
        store.record_snapshot(first, "supplier_requests", [{"RequestID": "RQ-1"}])
        store.record_snapshot(first, "consumer_transcripts", [{"RequestID": "TR-1"}])
        store.record_snapshot(first, "domestic_events", [{"eventId": "E1"}])
        skipped = {"international": "no credentials"}
        store.finish_run(first, status="ok", summary={"lists": ALL_READ, "failures": [],
                                                      "skipped": skipped})  # fmt: skip
        second = store.begin_run(profile="prod")
        store.record_snapshot(second, "supplier_requests", [{"RequestID": "RQ-1"},
                                                             {"RequestID": "RQ-9"}])  # fmt: skip
        store.record_snapshot(second, "domestic_events", [{"eventId": "E1"}])
        lists = {**ALL_READ, "consumer_transcripts": {"error": PARTNER_ERROR}}
        failures = [
            {"list": "consumer_transcripts", "id": "(list)", "error": PARTNER_ERROR},
            {"list": "supplier_requests", "id": "RQ-9", "error": "read timed out"},
        ]
        store.finish_run(second, status="partial", summary={"lists": lists, "failures": failures,
                                                            "skipped": skipped})  # fmt: skip
    date_run(db, first, T0 - pd.Timedelta(hours=30))
    date_run(db, second, T0 - pd.Timedelta(hours=2))
    return db


def test_each_list_is_as_old_as_its_last_complete_read(two_pulls: Path) -> None:
    with Store(two_pulls, read_only=True) as store:
        fresh = freshness(store, T0)
    by_name = {f.name: f for f in fresh.lists}
    assert by_name["supplier_requests"].last_read_at == T0 - pd.Timedelta(hours=2)
    assert by_name["supplier_requests"].age_hours == pytest.approx(2.0)
    consumer = by_name["consumer_transcripts"]  # failed in the last pull: read 30 hours ago
    assert consumer.age_hours == pytest.approx(30.0) and consumer.error == PARTNER_ERROR
    assert by_name["placement_events"].skipped == "no credentials"
    assert not by_name["placement_events"].used
    assert fresh.age_hours == pytest.approx(30.0)  # the oldest list in use
    assert fresh.last_pull_status == "partial"
    assert fresh.last_pull_at == T0 - pd.Timedelta(hours=2)
    assert fresh.last_ok_pull_at == T0 - pd.Timedelta(hours=30)
    assert fresh.failed_lists == ["consumer_transcripts"]
    assert fresh.items_not_fetched == 1
    assert [item_id for _, item_id, _ in fresh.not_fetched] == ["RQ-9"]
    assert fresh.is_stale(24) and not fresh.is_stale(30) and not fresh.is_stale(48)
    assert "consumer_transcripts was last read 30.0 hours before" in (fresh.warning(24) or "")
    assert fresh.warning(48) is None


def test_only_what_the_store_held_at_as_of_counts(two_pulls: Path) -> None:
    with Store(two_pulls, read_only=True) as store:
        fresh = freshness(store, T0 - pd.Timedelta(hours=10))
    assert fresh.last_pull_status == "ok" and fresh.failed_lists == []
    assert fresh.age_hours == pytest.approx(20.0)
    assert not fresh.is_stale(24)
    with Store(two_pulls, read_only=True) as store:
        before = freshness(store, T0 - pd.Timedelta(hours=31))
    assert before.last_pull_at is None and before.age_hours is None and before.is_stale(1e9)
    assert "no pull has read any list" in (before.warning() or "")


def test_a_list_in_use_never_read_makes_the_store_stale_at_any_limit(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    with Store(db) as store:
        run = store.begin_run()
        store.record_snapshot(run, "supplier_requests", [{"RequestID": "RQ-1"}])
        lists = {"supplier_requests": {"error": None}, "consumer_transcripts": {"error": "401"}}
        store.finish_run(run, status="partial", summary={"lists": lists, "failures": []})
        fresh = freshness(store)
    assert fresh.never_read == ["consumer_transcripts"]
    assert fresh.age_hours is None and fresh.is_stale(1e9)
    assert "consumer_transcripts never read" in (fresh.warning(1e9) or "")


def test_an_empty_store_is_stale_and_says_to_pull(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.db") as store:
        fresh = freshness(store)
        html = freshness_section(fresh).data
    assert fresh.last_pull_at is None and fresh.is_stale()
    assert 'data-freshness="stale"' in html and "No pull has finished" in html
    assert "workbench pull" in html


def test_the_section_warns_first_and_escapes_the_partner_s_words(two_pulls: Path) -> None:
    with Store(two_pulls, read_only=True) as store:
        fresh = freshness(store, T0)
    html = freshness_section(fresh, max_age_hours=24, tz="America/Toronto").data
    root = lxml_html.fromstring(html)
    banner = root.xpath("//*[@data-freshness]")[0]
    assert banner.get("data-freshness") == "stale" and banner.get("data-age-hours") == "30.0"
    assert "Stale data" in banner.text_content()
    assert "<script>" not in html and "&lt;script&gt;" in html
    last = root.xpath("//*[@data-last-pull]")[0]
    assert last.get("data-last-pull") == "partial"
    assert "1 item(s) not fetched" in last.text_content()
    assert "2026-03-08 23:00 EDT" in last.text_content()  # the last complete pull, in Toronto
    assert root.xpath('//*[@data-figure="items_not_fetched"]')[0].get("data-value") == "1"
    assert "RQ-9" in html and "read timed out" in html
    fine = freshness_section(fresh, max_age_hours=48).data
    assert 'data-freshness="fresh"' in fine and 'data-max-age-hours="48"' in fine


def test_the_figures_for_delivery_hold_no_id_and_no_partner_text(two_pulls: Path) -> None:
    with Store(two_pulls, read_only=True) as store:
        data = freshness(store, T0).as_dict(24)
    dumped = json.dumps(data)
    assert "RQ-9" not in dumped and "timed out" not in dumped and "503" not in dumped
    assert data["stale"] is True and data["max_age_hours"] == 24 and data["hours_old"] == 30.0
    assert data["failed_lists"] == ["consumer_transcripts"] and data["items_not_fetched"] == 1
    assert data["last_pull_status"] == "partial"
    assert set(data["last_read"]) == {"supplier_requests", "consumer_transcripts",
                                      "domestic_events"}  # fmt: skip


def test_a_pull_that_never_finished_is_named_and_counts_as_a_problem(two_pulls: Path) -> None:
    """A pull that crashed (or still runs) after the last finished one: its run and start
    in the section and the figures, never hidden behind the last finished pull."""
    with Store(two_pulls) as store:
        before = store.begin_run(profile="prod")  # crashed before the first finished pull
        crashed = store.begin_run(profile="prod")  # started 1 hour before T0, never finished
    with sqlite3.connect(two_pulls) as conn:
        conn.execute("UPDATE runs SET started_at = ? WHERE id = ?",
                     (stamp(T0 - pd.Timedelta(hours=40)), before))  # fmt: skip
        conn.execute("UPDATE runs SET started_at = ? WHERE id = ?",
                     (stamp(T0 - pd.Timedelta(hours=1)), crashed))  # fmt: skip
    conn.close()
    with Store(two_pulls, read_only=True) as store:
        fresh = freshness(store, T0)
        earlier = freshness(store, T0 - pd.Timedelta(hours=10))
    assert fresh.last_pull_run == 2 and fresh.last_pull_status == "partial"
    assert fresh.unfinished_run == crashed
    assert fresh.unfinished_started_at == T0 - pd.Timedelta(hours=1)
    assert fresh.problems[0] == (
        f"pull run {crashed} started 2026-03-10 08:00 UTC and never finished (crashed or "
        "still running)"
    )
    data = fresh.as_dict(24)
    assert data["unfinished_pull"] == {"run": crashed, "started_at": "2026-03-10T08:00:00+00:00"}
    assert len(fresh.problems) == 1
    html = freshness_section(fresh, max_age_hours=48, tz="America/Toronto").data
    said = lxml_html.fromstring(html).xpath("//*[@data-unfinished-run]")[0]
    assert said.get("data-unfinished-run") == str(crashed) and "wb-alert" in said.get("class")
    assert said.text_content() == (
        f"Pull run {crashed} started 2026-03-10 04:00 EDT and never finished (crashed or still "
        "running). If no pull is running, pull again."
    )
    last = lxml_html.fromstring(html).xpath("//*[@data-last-pull]")[0].text_content()
    assert "never finished" not in last  # said once, above the last finished pull
    # the one that crashed before a pull finished is history, not a problem of this store
    assert earlier.last_pull_run == 1 and earlier.unfinished_run is None
    assert earlier.problems == () and earlier.as_dict()["unfinished_pull"] is None


def _report(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["report", "--no-pull", "--output-dir", "reports", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def aged_copy(report_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The session's populated store, every pull 30 hours older; the project's notebooks; no
    WORKBENCH_* setting, cwd beside the store."""
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(report_copy.parent)
    age_store(report_copy, 30)
    return report_copy


@pytest.mark.slow
def test_a_stale_store_warns_at_the_top_and_max_age_exits_1(aged_copy: Path) -> None:
    code, out, err = _report("--db", str(aged_copy), "--max-age", "24")
    assert code == 1, err
    assert "Exit 1 (--max-age 24): Stale data" in " ".join(err.split())
    html = Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8")
    banner = lxml_html.fromstring(html).xpath("//*[@data-freshness]")[0]
    assert banner.get("data-freshness") == "stale" and float(banner.get("data-age-hours")) >= 30
    assert "Stale data" in banner.text_content()
    assert html.index("data-freshness") < html.index('data-figure="requests"')  # first section

    code, out, err = _report("--db", str(aged_copy), "--max-age", "48")
    assert code == 0, err
    html = Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8")
    assert 'data-freshness="fresh"' in html and 'data-max-age-hours="48"' in html


@pytest.mark.slow
def test_the_events_report_opens_with_freshness_too(aged_copy: Path) -> None:
    code, out, err = _report("--notebook", "events", "--db", str(aged_copy), "--max-age", "24")
    assert code == 1, err
    html = Path(out.strip().splitlines()[-1]).read_text(encoding="utf-8")
    assert 'data-freshness="stale"' in html
    assert html.index("data-freshness") < html.index("Feeds and pull runs")


@pytest.mark.parametrize("hours", ["0", "-1", "nan", "inf"])
def test_max_age_is_checked_before_anything_runs(tmp_path: Path, hours: str) -> None:
    code, _, err = _report("--db", str(tmp_path / "none.db"), f"--max-age={hours}")
    assert code == 2 and "--max-age" in err and "not a number of hours" in " ".join(err.split())
    assert not (tmp_path / "none.db").exists()
