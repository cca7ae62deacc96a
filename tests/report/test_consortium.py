"""The consortium report: three sandbox colleges side by side, each read-only, each row equal
to the college's own reconcile report; the same table from their Parquet exports (DuckDB)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench import reconcile
from workbench.cli import app
from workbench.errors import InvalidParameter
from workbench.export import export
from workbench.report import open_store
from workbench.report.job import ReportJob, run_report_job
from workbench.report.stores import EXPORT_TABLES, colleges
from workbench.sandbox import SandboxSettings
from workbench.scenario import act_out
from workbench.store.identity import SANDBOX_TITLE

from .conftest import figures

COLLEGES = ("north", "south", "east")


@dataclasses.dataclass(frozen=True)
class Consortium:
    stores: list[Path]
    exports: list[Path]
    as_of: str  # every report of the module measures at this moment


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of ``folder``: its bytes and mtime."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def consortium(tmp_path_factory: pytest.TempPathFactory) -> Consortium:
    """Three colleges pulled from sandboxes of different seeds (one acted out its morning's
    sends), then each exported as Parquet."""
    root = tmp_path_factory.mktemp("consortium")
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=8)
    stores, exports = [], []
    for seed, college in enumerate(COLLEGES, start=2):
        db = root / "stores" / college / "workbench.db"
        settings = SandboxSettings(seed=seed, start=start, initial_requests=20 + 10 * seed)
        with wb.connect("sandbox", db=db, sandbox=settings) as w:
            w.pull(progress=False)
            if college == "south":
                act_out(w)
            assert w.sandbox is not None
            w.sandbox.advance(hours=8)
            w.pull(progress=False)
        folder = root / "exports" / college
        with open_store(db) as store:
            for name in EXPORT_TABLES:
                export(store, name, "parquet", folder / f"{name}.parquet")
        stores.append(db)
        exports.append(folder)
    as_of = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")  # after
    return Consortium(stores, exports, as_of)


def _run(out: Path, as_of: str, **parameters: object) -> ReportJob:
    return run_report_job("consortium", {"as_of": as_of}, parameters,  # type: ignore[arg-type]
                          no_pull=True, output_dir=str(out), warn=print)  # fmt: skip


@pytest.fixture(scope="module")
def from_stores(consortium: Consortium, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    """The report over the stores, and each store's folder before and after it."""
    before = [_files(db.parent) for db in consortium.stores]
    out = tmp_path_factory.mktemp("consortium-reports")
    job = _run(out, consortium.as_of, stores=[str(p) for p in consortium.stores],
               colleges=list(COLLEGES))  # fmt: skip
    after = [_files(db.parent) for db in consortium.stores]
    return job, before, after


def _table(job: ReportJob, suffix: str) -> pd.DataFrame:
    assert job.run is not None
    found = sorted(job.run.html_path.parent.glob(f"consortium-*.{suffix}"))
    assert len(found) == 1, found
    if suffix == "csv":
        return pd.read_csv(found[0], keep_default_na=False, na_values=[""])
    return pd.read_parquet(found[0])


@pytest.mark.slow
def test_one_row_per_college_beside_the_html_each_equal_to_its_headline(
    consortium: Consortium, from_stores: tuple
) -> None:
    job, _, _ = from_stores
    assert job.run is not None and job.run.html_path.stat().st_size > 0
    assert job.verdict() == (0, [])
    assert escape(SANDBOX_TITLE) in job.run.html_path.read_text()  # its stores: made-up data
    table = _table(job, "csv")
    assert table["college"].tolist() == list(COLLEGES)
    assert table["error"].isna().all()
    parquet = _table(job, "parquet")
    assert parquet["college"].tolist() == list(COLLEGES)
    severities = [f"exceptions_{s}" for s in reconcile.SEVERITIES]
    for db, (_, row) in zip(consortium.stores, table.iterrows(), strict=True):
        with open_store(db) as store:  # as the reconcile notebook reads it
            rec = reconcile.reconcile(reconcile.load(store, as_of=consortium.as_of))
        h = rec.headline
        for key in ("requests", "open_requests", "open_over_sla", "answered",
                    "transcripts_sent", "transcripts_acknowledged", "transcripts_awaiting_ack",
                    "transcripts_received", "exceptions"):  # fmt: skip
            assert row[key] == h[key], (row["college"], key)
            assert parquet.loc[parquet["college"] == row["college"], key].item() == h[key]
        assert [row[s] for s in severities] == [h["exceptions_by_severity"][s]
                                                for s in reconcile.SEVERITIES]  # fmt: skip
        assert (
            sum(row[f"open_age_{b}"] for b in ("0_2", "2_5", "5_10", "over_10"))
            == h["open_requests"]
        )
        kinds = rec.exceptions["kind"].astype(str).value_counts()
        for kind in reconcile.EXCEPTION_KINDS:
            assert row[f"kind_{kind}"] == kinds.get(kind, 0), kind
    assert table["requests"].nunique() == 3  # the seeds made three different colleges
    assert table["transcripts_sent"].max() > 0  # south sent its morning's transcripts


@pytest.mark.slow
def test_the_stores_are_read_only_nothing_changed_or_left_beside_them(from_stores: tuple) -> None:
    _, before, after = from_stores
    assert [sorted(b) for b in before] == [sorted(a) for a in after]
    assert before == after  # bytes and mtimes
    assert not any(name.endswith(("-wal", "-shm")) for files in after for name in files)


@pytest.mark.slow
def test_a_college_equals_its_own_reconcile_report(
    consortium: Consortium, from_stores: tuple, tmp_path: Path
) -> None:
    """The reconcile notebook run on south: every figure it publishes that the table holds."""
    job, _, _ = from_stores
    row = _table(job, "csv").set_index("college").loc["south"]
    single = run_report_job("reconcile", {"as_of": consortium.as_of}, db=str(consortium.stores[1]),
                            no_pull=True, output_dir=str(tmp_path))  # fmt: skip
    assert single.run is not None
    published = figures(single.run.html_path.read_text(encoding="utf-8"))
    shared = [k for k in published if k in row.index]
    assert len(shared) >= 20, shared
    for key in shared:
        assert str(row[key]) == published[key], key
    assert int(published["transcripts_sent"]) > 0


@pytest.mark.slow
def test_the_duckdb_route_gives_the_same_table(
    consortium: Consortium, from_stores: tuple, tmp_path: Path
) -> None:
    job, _, _ = from_stores
    exported = _run(tmp_path, consortium.as_of, exports=[str(p) for p in consortium.exports],
                    colleges=list(COLLEGES))  # fmt: skip
    assert exported.verdict() == (0, [])
    pd.testing.assert_frame_equal(_table(exported, "csv"), _table(job, "csv"))


@pytest.mark.slow
def test_a_missing_or_unreadable_store_is_named_and_the_others_still_reported(
    consortium: Consortium, tmp_path: Path
) -> None:
    missing, garbage = tmp_path / "gone.db", tmp_path / "notes.db"
    garbage.write_text("not a database")
    said: list[str] = []
    job = run_report_job(
        "consortium", {"as_of": consortium.as_of},
        {"stores": [str(consortium.stores[0]), str(missing), str(garbage)]},  # type: ignore[dict-item]
        no_pull=True, output_dir=str(tmp_path / "out"), warn=said.append,
    )  # fmt: skip
    assert any(s.startswith("gone: ") and str(missing) in s for s in said), said
    assert any(s.startswith("notes: ") and str(garbage) in s for s in said), said
    code, reasons = job.verdict()
    assert code == 1
    assert [r.split("'s store")[0] for r in reasons] == ["Exit 1: gone", "Exit 1: notes"]
    table = _table(job, "csv").set_index("college")
    assert pd.isna(table.loc["workbench", "error"])
    assert str(missing) in table.loc["gone", "error"]
    assert str(garbage) in table.loc["notes", "error"]
    assert table.loc["workbench", "requests"] > 0


@pytest.mark.slow
def test_the_verdict_judges_every_college(from_stores: tuple) -> None:
    job, _, _ = from_stores
    strict = dataclasses.replace(job, fail_on="low")
    code, reasons = strict.verdict()
    assert code == 3
    assert sorted(r.split(":")[0] for r in reasons) == sorted(COLLEGES)
    stale = dataclasses.replace(job, max_age_hours=1e-6)  # every list read before that
    code, reasons = stale.verdict()
    assert code == 1 and len(reasons) == 3
    assert all("--max-age" in r for r in reasons)


def test_colleges_are_named_one_per_store() -> None:
    assert colleges(["a/x.db", "b/y.db"]) == {"x": "a/x.db", "y": "b/y.db"}
    assert colleges("a/x.db, b/y.db", "one,two") == {"one": "a/x.db", "two": "b/y.db"}
    with pytest.raises(InvalidParameter, match="1 colleges for 2 stores"):
        colleges(["a/x.db", "b/y.db"], ["one"])
    with pytest.raises(InvalidParameter, match="workbench names more than one store"):
        colleges(["a/workbench.db", "b/workbench.db"])
    with pytest.raises(InvalidParameter, match="at least one store"):
        colleges([])


def test_a_consortium_never_pulls_and_reads_stores_or_exports(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameter, match="pull each college first"):
        run_report_job("consortium", parameters={"stores": ["a.db"]},  # type: ignore[dict-item]
                       output_dir=str(tmp_path))  # fmt: skip
    with pytest.raises(InvalidParameter, match="stores or exports, not both"):
        run_report_job("consortium", parameters={"stores": ["a.db"], "exports": ["e"]},  # type: ignore[dict-item]
                       no_pull=True, output_dir=str(tmp_path))  # fmt: skip


def test_a_damaged_parquet_export_is_a_store_error_naming_the_file(tmp_path: Path) -> None:
    from workbench.errors import StoreError
    from workbench.report.stores import ExportedStore

    for name in EXPORT_TABLES:
        (tmp_path / f"{name}.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(StoreError, match=r"requests\.parquet|\.parquet is not a readable"):
        ExportedStore(tmp_path)


@pytest.mark.slow
def test_the_command_writes_here_under_one_stem_and_prints_every_path(
    consortium: Consortium, here: Path
) -> None:
    """Never beside a college's store (each is only read): in reports/ of the current folder."""
    stores = ",".join(str(p) for p in consortium.stores)
    result = CliRunner().invoke(app, ["report", "--notebook", "consortium", "--as-of",
                                      consortium.as_of, "-p", f"stores={stores}", "-p",
                                      f"colleges={','.join(COLLEGES)}"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    printed = [Path(line) for line in result.stdout.splitlines()]
    stem = printed[-1].with_suffix("")
    assert stem.parent == here / "reports" and stem.name.startswith("consortium-")
    assert printed == [stem.with_suffix(s) for s in (".csv", ".parquet", ".ipynb", ".html")]
    assert sorted(stem.parent.iterdir()) == sorted(printed)
    assert f"The table: {stem}.csv and .parquet" in printed[-1].read_text()
    assert not any((db.parent / "reports").exists() for db in consortium.stores)
