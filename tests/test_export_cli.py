"""`workbench export NAME`: a table, a view and a partner list as of a run, written as csv, xlsx
and parquet, read back (pandas, openpyxl, pyarrow, DuckDB) and compared with the store's own
frame; refusals with exit 2; the README's DuckDB one-liner, run as printed."""

from __future__ import annotations

import os
import re
import shlex
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import duckdb
import openpyxl
import pandas as pd
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.watched import WatchedSandbox
from workbench import pesc
from workbench.cli import app
from workbench.sandbox import SandboxSettings
from workbench.store import LIST_NAMES, Store

README = Path(__file__).resolve().parents[1] / "README.md"
EXCEL_CELL = 32_767


@dataclass(frozen=True)
class Pulled:
    """A store pulled twice from a sandbox, with one request answered in between: run 1's
    ``supplier_requests`` holds ``answered``, the latest does not."""

    db: Path
    answered: str


@pytest.fixture(scope="module")
def pulled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pulled]:
    sb = WatchedSandbox(SandboxSettings()).start()
    db = tmp_path_factory.mktemp("export") / "data" / "workbench.db"
    try:
        with wb.connect(env=sb.env, db=db) as w:
            w.pull(progress=False)
            rid = sb.pending_request_ids()[0]
            request = str(w.supplier.request(rid).loc[0, "pescxml"])
            w.supplier.send_response(
                rid, pesc.build_response(request, status="Hold", hold_reason="Financial")
            )
            w.pull(progress=False)
    finally:
        sb.stop()
    yield Pulled(db, rid)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No WORKBENCH_* variable and no workbench.toml: the default profile, in ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _export(db: Path, *args: str):
    return CliRunner().invoke(app, ["export", *args, "--db", str(db)])


def _store_frame(db: Path, name: str, run: int | None) -> pd.DataFrame:
    """What the store itself says: the table or view, or the list as run ``run`` left it."""
    with Store(db, read_only=True) as store:
        if name not in LIST_NAMES:
            return store.table(name)
        if run is None:
            return store.as_of()[name]
        finished = store.table("runs", where="id = ?", params=[run]).loc[0, "finished_at"]
        return store.as_of(finished)[name]


def _times(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if isinstance(frame[c].dtype, pd.DatetimeTZDtype)]


def _text(value: object) -> str:
    return "" if value is None or value is pd.NA or pd.isna(value) else str(value)  # type: ignore[arg-type]


def _same_csv(path: Path, want: pd.DataFrame) -> None:
    got = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(got.columns) == list(want.columns)
    for column in want.columns:
        if column in _times(want):
            parsed = pd.to_datetime(got[column].replace("", None), utc=True, format="ISO8601")
            assert parsed.dt.as_unit("us").tolist() == want[column].dt.as_unit("us").tolist()
        else:
            assert got[column].tolist() == [_text(v) for v in want[column]], column


def _same_xlsx(path: Path, want: pd.DataFrame, name: str) -> None:
    book = openpyxl.load_workbook(path)
    assert book.sheetnames == [name]
    header, *rows = list(book[name].values)
    times = _times(want)
    assert list(header) == [f"{c}_utc" if c in times else c for c in want.columns]
    assert len(rows) == len(want)
    for i, column in enumerate(want.columns):
        got = [row[i] for row in rows]
        if column in times:
            expected = want[column].dt.tz_convert("UTC").dt.tz_localize(None)
            for a, b in zip(got, expected, strict=True):
                assert (a is None) == pd.isna(b)
                if a is not None:  # a serial number of days: exact to well under a millisecond
                    assert abs(pd.Timestamp(a) - b) < timedelta(milliseconds=1)
        elif pd.api.types.is_float_dtype(want[column]):  # Excel keeps 15 significant digits
            assert got == pytest.approx(want[column].tolist(), rel=1e-14, nan_ok=True), column
        else:  # Excel shows 32,767 characters of a cell: a longer value is cut
            assert [_text(v) for v in got] == [_text(v)[:EXCEL_CELL] for v in want[column]]


def _same_parquet(path: Path, want: pd.DataFrame) -> None:
    got = pq.read_table(path).to_pandas()
    for column in _times(want):  # parquet keeps microseconds, as Spark reads them
        got[column] = got[column].dt.as_unit("us")
        want = want.assign(**{column: want[column].dt.as_unit("us")})
    pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=True)
    counted = duckdb.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()
    assert counted == (len(want),)


SOURCES = [("calls", None), ("open_requests", None), ("supplier_requests", 1)]


@pytest.mark.parametrize("fmt", ["csv", "xlsx", "parquet"])
@pytest.mark.parametrize(("name", "run"), SOURCES, ids=[s[0] for s in SOURCES])
def test_a_round_trip_gives_the_stores_own_frame(pulled, tmp_path, clean_env, name, run, fmt):
    out = tmp_path / f"{name}.{fmt}"
    as_of = ["--as-of", str(run)] if run else []
    result = _export(pulled.db, name, "--format", fmt, "--out", str(out), *as_of)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out)  # the path, absolute, and no row
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    want = _store_frame(pulled.db, name, run)
    assert len(want) > 0
    assert f"Wrote {len(want)} rows" in result.stderr
    if fmt == "csv":
        _same_csv(out, want)
    elif fmt == "xlsx":
        _same_xlsx(out, want, name)
        long = [c for c in want.columns if any(len(_text(v)) > EXCEL_CELL for v in want[c])]
        for column in long:
            assert f"Note: {column}: " in result.stderr and "cut" in result.stderr
    else:
        _same_parquet(out, want)


def test_a_list_as_of_a_run_is_that_runs_list(pulled, tmp_path, clean_env):
    then, now = tmp_path / "then.parquet", tmp_path / "now.parquet"
    assert (
        _export(pulled.db, "supplier_requests", "--as-of", "1", "--out", str(then)).exit_code == 0
    )
    latest = _export(pulled.db, "supplier_requests", "--out", str(now))
    assert latest.exit_code == 0 and "(the latest)" in latest.stderr
    ids_then = set(pq.read_table(then).column("request_id").to_pylist())
    ids_now = set(pq.read_table(now).column("request_id").to_pylist())
    assert pulled.answered in ids_then and pulled.answered not in ids_now
    assert ids_now < ids_then


def test_the_default_path_is_beside_the_database_and_no_row_is_printed(pulled, clean_env):
    result = _export(pulled.db, "open_requests", "--format", "xlsx")
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip())
    assert path.is_absolute() and path.parent == pulled.db.parent / "exports"
    assert re.fullmatch(r"open_requests-\d{8}T\d{6}Z\.xlsx", path.name)
    names = _store_frame(pulled.db, "open_requests", None)
    student = next(c for c in names.columns if "last_name" in c or "surname" in c)
    assert names[student].notna().any()
    for value in names[student].dropna():
        assert str(value) not in result.output
    path.unlink()


def test_the_format_follows_the_out_suffix_and_a_clash_is_refused(pulled, tmp_path, clean_env):
    out = tmp_path / "runs.parquet"
    assert _export(pulled.db, "runs", "--out", str(out)).exit_code == 0
    assert pq.read_table(out).num_rows == len(_store_frame(pulled.db, "runs", None))
    clash = _export(pulled.db, "runs", "--out", str(tmp_path / "r.csv"), "--format", "xlsx")
    assert clash.exit_code == 2 and "ends in .csv but the format is xlsx" in clash.output
    unknown = _export(pulled.db, "runs", "--format", "json")
    assert unknown.exit_code == 2 and "csv, xlsx, parquet" in unknown.output


def test_an_unknown_name_exits_2_with_what_there_is(pulled, clean_env):
    result = _export(pulled.db, "open_request")
    assert result.exit_code == 2
    assert "NAME" in result.output and "'open_request'" in result.output
    for known in ("open_requests", "calls", "supplier_requests"):
        assert known in result.output


def test_an_existing_file_is_replaced_only_with_force(pulled, tmp_path, clean_env):
    out = tmp_path / "runs.csv"
    out.write_text("keep me")
    out.chmod(0o644)
    refused = _export(pulled.db, "runs", "--out", str(out))
    assert refused.exit_code == 2 and "--force" in refused.output
    assert out.read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    forced = _export(pulled.db, "runs", "--out", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    assert len(pd.read_csv(out)) == len(_store_frame(pulled.db, "runs", None))
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["calls", "--as-of", "1"], "calls is a table: only the partner lists"),
        (
            ["supplier_requests", "--as-of", "99"],
            "there is no run 99 in the store (the latest: 2, 1)",
        ),
        (["supplier_requests", "--as-of", "yesterday-ish"], "neither a run id nor an ISO 8601"),
        (["supplier_requests", "--as-of", "2999-01-01"], "is in the future"),
    ],
)
def test_an_unusable_as_of_exits_2(pulled, tmp_path, clean_env, args, said):
    result = _export(pulled.db, *args, "--out", str(tmp_path / "x.csv"))
    assert result.exit_code == 2
    assert "--as-of" in result.output and said in " ".join(result.output.split())
    assert not (tmp_path / "x.csv").exists()


def test_a_list_as_of_a_time_before_any_pull_is_empty(pulled, tmp_path, clean_env):
    out = tmp_path / "empty.csv"
    result = _export(pulled.db, "supplier_requests", "--as-of", "2001-01-01", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "no snapshot of supplier_requests" in result.stderr
    assert pd.read_csv(out).empty


def test_parquet_without_pyarrow_says_how_to_install_it(pulled, tmp_path, clean_env, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
    result = _export(pulled.db, "runs", "--format", "parquet", "--out", str(tmp_path / "r.pq"))
    assert result.exit_code == 2
    assert "pip install 'workbench[parquet]'" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_missing_database_exits_2_and_is_not_created(tmp_path, clean_env):
    result = _export(tmp_path / "none.db", "runs")
    assert result.exit_code == 2
    assert "There is no database at" in result.output
    assert not (tmp_path / "none.db").exists()


@pytest.mark.slow
def test_the_readmes_duckdb_one_liner_runs_as_printed(pulled, tmp_path, clean_env):
    section = README.read_text().split("### Exporting", 1)[1].split("\n#", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block, "README: ### Exporting shows the export and DuckDB commands in a ``` block"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert any("duckdb" in line for line in lines)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "workbench.db").symlink_to(pulled.db)  # the default profile's db
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    outputs = []
    for line in lines:
        done = subprocess.run(
            shlex.split(line), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        outputs.append(done.stdout)
    count = len(_store_frame(pulled.db, "supplier_requests", None))
    assert re.search(rf"\b{count}\b", outputs[-1]), outputs[-1]


def test_xlsx_keeps_partner_text_as_text(pulled, tmp_path, clean_env):
    """A formula stays text, and characters XML cannot hold are written as escapes."""
    db = tmp_path / "copy.db"
    with sqlite3.connect(pulled.db) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    hostile = '=HYPERLINK("http://127.0.0.1/x","open")\x01\x1b[2J'
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE calls SET error = ? WHERE id = 1", (hostile,))
    out = tmp_path / "calls.xlsx"
    result = _export(db, "calls", "--out", str(out))
    assert result.exit_code == 0, result.output
    sheet = openpyxl.load_workbook(out)["calls"]
    column = [c.value for c in sheet[1]].index("error") + 1
    cell = sheet.cell(row=2, column=column)
    assert cell.data_type == "s"
    assert cell.value == '=HYPERLINK("http://127.0.0.1/x","open")\\x01\\x1b[2J'
