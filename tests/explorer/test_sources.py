"""What the explorer offers: only the store's own tables, only pull runs that can be compared,
and nothing of a previous source left on screen under an error."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from workbench.explorer import Explorer, Source
from workbench.export import sources
from workbench.report import pull_runs
from workbench.store import Store


@pytest.fixture
def copy(db: Path, tmp_path: Path) -> Path:
    """A private copy of the populated database, for a test that writes to it."""
    target = tmp_path / "copy.db"
    with closing(sqlite3.connect(db)) as source, closing(sqlite3.connect(target)) as out:
        source.backup(out)
    return target


@pytest.fixture
def analyzed(copy: Path) -> Iterator[Explorer]:
    """An explorer on a copy where ``ANALYZE`` created SQLite's ``sqlite_stat1``."""
    with closing(sqlite3.connect(copy)) as conn:
        conn.execute("ANALYZE")
        conn.commit()
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "sqlite_stat1" in names
    with Explorer.open(copy) as ex:
        yield ex


def test_sqlite_internals_are_not_offered(analyzed: Explorer) -> None:
    labels = [label for label, _ in analyzed.source.options]
    assert [label for label in labels if "sqlite_" in label] == []
    assert all(not name.startswith("sqlite_") for name in sources(analyzed.store))


def test_every_source_offered_loads(analyzed: Explorer) -> None:
    analyzed.limit.value = 1
    assert len(analyzed.source.options) > 10  # tables, views and lists, every one tried below
    for _label, source in analyzed.source.options:
        analyzed.source.value = source
        assert "workbench-error" not in analyzed.status.value, source
        assert "showing" in analyzed.status.value, source


def test_only_runs_that_finished_ok_or_partial_are_compared(copy: Path) -> None:
    with Store(copy) as store:
        ok = pull_runs(store)["id"].tolist()
        failed = store.begin_run(kind="pull")
        store.record_snapshot(failed, "supplier_requests", [])  # half a pull, then it failed
        store.finish_run(failed, status="failed")
        running = store.begin_run(kind="pull")  # this process is alive: it stays running
    assert len(ok) == 2
    with Explorer.open(copy) as ex:
        offered = [v for _, v in ex.run_a.options]
        assert offered == ok[::-1]  # newest first, neither the failed nor the running one
        assert [v for _, v in ex.run.options] == ["latest", *ok[::-1]]
        assert (ex.run_a.value, ex.run_b.value) == (ok[0], ok[1])
        assert failed not in offered and running not in offered
        expected = ex.store.diff(ok[0], ok[1])
        assert not expected.empty
        pd.testing.assert_frame_equal(ex.diff_frame, expected, check_like=True)
        assert "No list changed" not in ex.diff.value


def test_fewer_than_two_usable_runs_say_so(tmp_path: Path) -> None:
    path = tmp_path / "one.db"
    with Store(path) as store:
        run = store.begin_run(kind="pull")
        store.record_snapshot(run, "supplier_requests", [{"RequestID": "R1"}])
        store.finish_run(run, status="ok")
        store.finish_run(store.begin_run(kind="pull"), status="failed")
    with Explorer.open(path) as ex:
        assert [v for _, v in ex.run_a.options] == [run]
        assert "needs two pull runs that finished ok or partial" in ex.diff.value


def test_an_error_clears_the_previous_rows(copy: Path) -> None:
    with Explorer.open(copy) as ex:
        assert not ex.frame.empty and "<td>" in ex.rows.value
        assert ex.document_id.options
        with closing(sqlite3.connect(copy)) as other:  # dropped while the explorer is open
            other.execute("DROP VIEW latest_snapshots")
        ex.source.value = Source("view", "latest_snapshots")
        assert "workbench-error" in ex.status.value
        assert ex.rows.value == ""
        assert ex.frame.empty and ex.rows_found.total == 0
        assert ex.document_id.options == ()
        ex.source.value = Source("view", "open_requests")  # and the next source shows again
        assert "<td>" in ex.rows.value and "workbench-error" not in ex.status.value
