"""A report or troubleshoot on a database that cannot be a workbench store is refused with exit 2
before anything is pulled or run: no sandbox, no kernel, no HTML, and the file left as it was."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import ConfigError
from workbench.report.job import check_store
from workbench.store import Store


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--output-dir", "reports"])
    return result.exit_code, " ".join(result.output.split())  # one line, wrapping undone


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total REAL)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada')")
    conn.close()
    return path


def _nothing_ran(here: Path) -> None:
    assert not (here / "reports").exists()  # no notebook, no HTML
    assert not (here / "data").exists()  # no default database pulled into


def test_a_zero_byte_file_is_refused_and_left_empty(here: Path) -> None:
    empty = here / "empty.db"
    empty.touch()
    code, out = _run("report", "--db", str(empty), "--no-pull")
    assert code == 2, out
    assert f"{empty} is an empty file (0 bytes), not a workbench store" in out
    assert f"Run `workbench pull --db {empty}` first" in out
    assert empty.stat().st_size == 0
    assert sorted(p.name for p in here.iterdir()) == ["empty.db"]  # no -wal, -shm, lock


@pytest.mark.parametrize("pull", [False, True], ids=["no-pull", "pull"])
def test_a_foreign_sqlite_file_is_refused_naming_its_tables(here: Path, pull: bool) -> None:
    foreign = _foreign(here / "crm.db")
    before = _digest(foreign)
    code, out = _run("report", "--db", str(foreign), *([] if pull else ["--no-pull"]))
    assert code == 2, out
    assert f"{foreign} is an SQLite database but not a workbench store" in out
    assert "(tables: customers, orders)" in out
    assert "pass the --db of a workbench database" in out
    assert "WORKBENCH_DB" not in out  # --db was given: that is what to change
    assert _digest(foreign) == before
    _nothing_ran(here)


def test_a_missing_file_is_refused_and_not_created(here: Path) -> None:
    missing = here / "nowhere" / "w.db"
    code, out = _run("report", "--db", str(missing), "--no-pull")
    assert code == 2, out
    assert f"There is no database at {missing}" in out
    assert f"Run `workbench pull --db {missing}` first" in out
    assert "leave out --no-pull" in out
    assert not missing.parent.exists()
    _nothing_ran(here)


def test_troubleshoot_checks_the_same_way(here: Path) -> None:
    foreign = _foreign(here / "crm.db")
    code, out = _run("troubleshoot", "RQ-1", "--db", str(foreign), "--no-pull")
    assert code == 2, out
    assert "not a workbench store (tables: customers, orders)" in out
    _nothing_ran(here)


def test_a_file_that_is_not_sqlite_is_refused(here: Path) -> None:
    text = here / "notes.db"
    text.write_text("id,name\n1,Ada\n", encoding="utf-8")
    code, out = _run("report", "--db", str(text), "--no-pull")
    assert code == 2, out
    assert f"{text} is not an SQLite database, so not a workbench store" in out
    assert text.read_text(encoding="utf-8") == "id,name\n1,Ada\n"


def test_an_sqlite_file_without_tables_is_refused_without_a_pull(here: Path) -> None:
    bare = here / "bare.db"
    sqlite3.connect(bare).execute("PRAGMA user_version = 7").connection.close()
    assert bare.stat().st_size > 0
    code, out = _run("report", "--db", str(bare), "--no-pull")
    assert code == 2, out
    assert "an SQLite database with no table, not a workbench store" in out


def test_a_store_of_another_schema_version_is_refused(here: Path) -> None:
    path = here / "future.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    code, out = _run("report", "--db", str(path), "--no-pull")
    assert code == 2, out
    # a newer store: upgrade (a pull would refuse it too)
    assert re.search(r"schema version 99, newer .*\(up to \d\)\. Upgrade workbench", out), out


def test_a_pull_may_create_the_store_in_a_missing_or_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    check_store(empty, pulling=True)
    check_store(tmp_path / "new.db", pulling=True)
    assert empty.stat().st_size == 0 and not (tmp_path / "new.db").exists()


def test_a_workbench_store_passes(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    Store(path).close()
    before = _digest(path)
    check_store(path, pulling=False)
    check_store(path, pulling=True)
    assert _digest(path) == before


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder, not a database"):
        check_store(tmp_path, pulling=True)


def test_a_damaged_store_is_refused_and_nothing_is_left_beside_it(tmp_path: Path) -> None:
    """A store whose first page is damaged: SQLite says so (not a lock, so no other way of
    opening is tried), and the connection that found out is closed at once, taking the -wal
    and -shm it made with it."""
    db = tmp_path / "damaged.db"
    with Store(db):
        pass
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xa5" * 3996  # the header stays SQLite's; the schema page is garbage
    db.write_bytes(bytes(data))
    with pytest.raises(ConfigError, match=r"cannot be read as a workbench store .*malformed"):
        check_store(db, pulling=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.db"]
    assert db.read_bytes() == data
