"""The explorer's sorting, accent-free filters, times, document records, version diffs and
acknowledgment totals, driven from Python over a populated store."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

import pandas as pd
import pytest

from workbench import pesc
from workbench.bundle import request_documents
from workbench.errors import ConfigError
from workbench.explorer import Explorer, Source, fold, frame_mask
from workbench.explorer.render import ack_totals_html, parse_order
from workbench.report import versions_section
from workbench.report.job import run_report_job


def _accented(explorer: Explorer) -> str:
    names = explorer.store.table("open_requests")["student_last_name"].dropna()
    accented = [n for n in names if fold(n) != n.casefold()]
    assert accented, "the sandbox's students include accented names"
    return str(accented[0])


def test_fold_drops_case_and_accents() -> None:
    assert fold("Gonçalves") == fold("GONCALVES") == "goncalves"
    assert fold("Ōtake-Müller") == "otake-muller"
    assert fold("Straße") == "strasse"


def test_the_filter_ignores_accents_and_case(explorer: Explorer) -> None:
    name = _accented(explorer)
    plain = fold(name)
    everyone = explorer.store.table("open_requests")
    expected = everyone[everyone["student_last_name"].map(lambda n: plain in fold(n))]
    explorer.search.value = plain.upper()
    assert set(explorer.frame["request_id"]) == set(expected["request_id"])
    assert len(explorer.frame) > 0


def test_the_pandas_filter_of_lists_ignores_accents_too() -> None:
    frame = pd.DataFrame({"name": ["Gonçalves", "Gonzales", None], "n": [1, 2, 3]})
    found = frame_mask(frame, " GONCALVES ")
    assert list(found) == [True, False, False]


def test_headers_sort_both_ways_text_without_accents_missing_last(explorer: Explorer) -> None:
    everyone = explorer.store.table("open_requests")
    explorer.sort.value = "student_last_name"  # what a click on its header writes
    names = list(explorer.frame["student_last_name"])
    assert len(names) == len(everyone)
    assert [fold(n) for n in names] == sorted(fold(n) for n in names)
    html = explorer.rows.value
    assert 'aria-sort="ascending"' in html and "student_last_name ▲" in html
    # the header's next click asks for the other direction
    assert 'data-sort="-student_last_name"' in html
    explorer.sort.value = "-student_last_name"
    assert [fold(n) for n in explorer.frame["student_last_name"]] == sorted(
        (fold(n) for n in names), reverse=True
    )
    assert "student_last_name ▼" in explorer.rows.value


def test_missing_values_sort_last_both_ways(explorer: Explorer) -> None:
    explorer.source.value = Source("table", "outbox")
    explorer.limit.value = 1000
    outbox = explorer.store.table("outbox")
    column = next(c for c in outbox.columns if outbox[c].isna().any() and outbox[c].notna().any())
    for descending in (False, True):
        explorer.sort.value = f"-{column}" if descending else column
        values = explorer.frame[column]
        assert len(values) == len(outbox)
        assert not values.isna().iloc[: int(values.notna().sum())].any()


def test_sorting_a_table_happens_before_the_limit(explorer: Explorer) -> None:
    explorer.source.value = Source("table", "calls")
    explorer.limit.value = 3
    explorer.sort.value = "-id"
    ids = sorted(explorer.store.table("calls")["id"], reverse=True)
    assert list(explorer.frame["id"]) == ids[:3]
    assert f"showing 3 of {len(ids)} rows" in explorer.status.value


def test_sorting_a_list_and_a_vanished_column(explorer: Explorer) -> None:
    explorer.source.value = Source("list", "supplier_requests")
    explorer.limit.value = 1000
    explorer.sort.value = "-item_key"
    keys = list(explorer.frame["item_key"])
    assert keys == sorted(keys, key=fold, reverse=True) and len(keys) > 1
    explorer.source.value = Source("table", "runs")  # no item_key: as stored, no error
    assert list(explorer.frame["id"]) == list(explorer.store.table("runs")["id"])
    assert "▼" not in explorer.rows.value and "workbench-error" not in explorer.status.value


def test_sort_keys() -> None:
    assert parse_order("-a b") == ("a b", True)
    assert parse_order(" name ") == ("name", False)
    assert parse_order("") == (None, False) and parse_order("-")[0] is None


def test_times_show_to_the_second_in_the_zone(db: Path) -> None:
    with Explorer.open(db, tz="America/Toronto") as ex:
        ex.source.value = Source("table", "runs")
        started = ex.frame["started_at"].iloc[0]
        local = started.tz_convert("America/Toronto").strftime("%Y-%m-%d %H:%M:%S")
        assert f"<td>{local}</td>" in ex.rows.value
        assert not re.search(r"\d\d:\d\d:\d\d\.\d", ex.rows.value)  # no fractions of a second
        assert "times in America/Toronto" in ex.status.value
        labels = {value: label for label, value in ex.run.options}
        assert f"#{ex.frame['id'].iloc[0]} · {local} · " in labels[int(ex.frame["id"].iloc[0])]


def test_the_zone_is_the_profiles(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_TIMEZONE", "Asia/Tokyo")
    with Explorer.open(db) as ex:
        assert ex.tz == "Asia/Tokyo"
        assert "times in Asia/Tokyo" in ex.status.value
    with pytest.raises(ConfigError, match="Mars/Olympus"):
        Explorer.open(db, tz="Mars/Olympus")


def test_a_sent_transcript_reads_as_a_record(explorer: Explorer) -> None:
    sent = explorer.store.table("outbox", where="operation = 'send_transcript'")
    rid = str(sent["request_id"].iloc[0])
    explorer.show_document(rid)
    html = explorer.document.value
    ours = pesc.to_frames(str(sent["payload"].iloc[0]))
    record = html.split('data-document="2"', 1)[1].split("</section>", 1)[0]
    courses = record.split('data-table="courses"', 1)[1].split("</table>", 1)[0]
    assert courses.count("<tr>") == len(ours["courses"]) + 1 > 1  # the header and each course
    assert ours["courses"]["title"].notna().any()
    for title in ours["courses"]["title"].dropna():
        assert f"<td>{escape(title)}</td>" in courses
    for table in ("document", "agency_ids", "sessions"):
        assert f'data-table="{table}"' in record
    student = ours["document"]["student_last_name"].iloc[0]
    assert f"<td>student_last_name</td>\n<td>{student}</td>" in record


def test_our_transcript_next_to_the_acknowledgment_totals(explorer: Explorer) -> None:
    sent = explorer.store.table("outbox", where="operation = 'send_transcript'")
    rid = str(sent["request_id"].iloc[0])
    explorer.show_document(rid)
    html = explorer.document.value
    assert "Our transcript against the partner&#x27;s acknowledgment" in html
    courses = len(pesc.to_frames(str(sent["payload"].iloc[0]))["courses"])
    assert f'<tr data-total="courses"><td>courses</td><td>{courses}</td><td>{courses}</td>' in html
    assert "<th>our transcript (sent)</th><th>the partner&#x27;s acknowledgment</th>" in html
    # an acknowledgment that counted otherwise is marked
    found = request_documents(explorer.store, rid)
    ack = found[-1]
    assert ack.message_type == "Acknowledgment"
    total = re.search(r"<CourseTotal>(\d+)</CourseTotal>", ack.text)
    assert total, "the sandbox's acknowledgment totals the courses"
    changed = ack.text.replace(total.group(0), f"<CourseTotal>{courses + 1}</CourseTotal>")
    doctored = [*found[:-1], type(ack)(**{**ack.__dict__, "text": changed})]
    shown = ack_totals_html(doctored)
    row = shown.split('<tr data-total="courses">', 1)[1].split("</tr>", 1)[0]
    assert f"<td>{courses}</td><td>{courses + 1}</td>" in row
    assert 'class="workbench-mismatch">differs' in row
    assert ack_totals_html(found[:1]) == ""  # nothing sent: nothing to set side by side


def _row(html: str, label: str) -> str:
    return html.split(f'<tr data-total="{label}">', 1)[1].split("</tr>", 1)[0]


def test_a_field_the_acknowledgment_leaves_out_is_not_stated_not_differing(
    explorer: Explorer,
) -> None:
    """An acknowledgment without the student's birth date says nothing of it: no red
    "differs"; one without its CourseTotal leaves out what it owes."""
    sent = explorer.store.table("outbox", where="operation = 'send_transcript'")
    found = request_documents(explorer.store, str(sent["request_id"].iloc[0]))
    ack = found[-1]
    assert "<BirthDate>" in ack.text and "<CourseTotal>" in ack.text
    changed = re.sub(r"<BirthDate>[^<]*</BirthDate>", "", ack.text)
    changed = re.sub(r"<CourseTotal>[^<]*</CourseTotal>", "", changed)
    doctored = [*found[:-1], type(ack)(**{**ack.__dict__, "text": changed})]
    shown = ack_totals_html(doctored)
    birth = _row(shown, "birth date")
    assert re.search(r"<td>\d{4}-\d\d-\d\d</td><td>not stated</td>", birth)
    assert '<td class="workbench-unstated">not stated by the acknowledgment</td>' in birth
    assert "differs" not in birth and "mismatch" not in birth
    assert "not stated by the acknowledgment (a required total)" in _row(shown, "courses")
    assert _row(shown, "student last name").endswith("<td>same</td>")


def test_a_diff_between_any_two_versions(explorer: Explorer) -> None:
    rows = explorer.store.db.execute(
        "SELECT item_id FROM documents GROUP BY item_id HAVING count(*) > 1 LIMIT 1"
    ).fetchall()
    assert rows, "the populated store holds a document in two versions"
    item = str(rows[0][0])
    explorer.document_id.value = item
    assert [v for _, v in explorer.version_a.options] == [0, 1, 2]
    assert not explorer.version_a.disabled
    default = versions_section(explorer.store, item, max_chars=500_000).data
    assert default in explorer.document.value
    explorer.version_a.value = 2
    explorer.version_b.value = 1
    chosen = versions_section(explorer.store, item, compare=(2, 1), max_chars=500_000).data
    assert chosen != default and chosen in explorer.document.value
    explorer.version_b.value = 2
    assert "Pick two different versions" in explorer.document.value
    explorer.version_a.value = 1
    forward = versions_section(explorer.store, item, compare=(1, 2), max_chars=500_000).data
    assert forward in explorer.document.value


def test_report_refuses_the_explorer_before_pulling(db: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'explore' is not a report: it is interactive"):
        run_report_job("explore", db=str(db), no_pull=False, output_dir=str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_the_cli_exits_2_on_the_explorer(db: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from workbench.cli import app

    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["report", "--notebook", "explore", "--db", str(db), "--output-dir", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "is not a report" in result.output and "make lab" in result.output
    assert not out.exists()
