"""``open_store``: a missing database is an error that says what to do, never a new file."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import StoreError
from workbench.report import open_store
from workbench.store import Store


def test_a_missing_database_is_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nothing.db"
    with pytest.raises(StoreError) as caught:
        open_store(path)
    message = str(caught.value)
    assert f"No workbench database at {path}" in message
    assert "run `workbench pull` first" in message
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_the_default_comes_from_workbench_db(tmp_path: Path, monkeypatch) -> None:
    missing = tmp_path / "from-env.db"
    monkeypatch.setenv("WORKBENCH_DB", str(missing))
    with pytest.raises(StoreError, match=r"from-env\.db"):
        open_store()


def test_an_existing_database_opens(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    Store(path).close()
    with open_store(str(path)) as store:
        assert store.path == path
        assert store.table("runs").empty


def test_a_relative_path_is_named_from_where_the_kernel_runs(tmp_path: Path, monkeypatch) -> None:
    """A scheduled job's kernel starts in the job's staging folder: the error says so."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match=f"No workbench database at {tmp_path}/data/w.db;"):
        open_store("data/w.db")
