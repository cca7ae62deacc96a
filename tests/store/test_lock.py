"""The pull lock file: one file every pull locks, kept in place, refused when it is not SQLite;
a refusal names the pull that holds it."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from workbench.errors import StoreError
from workbench.store import Store
from workbench.store.connection import lock_path


@contextmanager
def _pulling(store: Store) -> Iterator[None]:
    """A pull run of this process, as a pull begins one once it holds the lock."""
    run = store.begin_run(kind="pull")
    yield
    store.finish_run(run, status="ok")


def test_the_lock_file_stays_so_every_pull_locks_the_same_file(db_path: Path) -> None:
    first, second = Store(db_path), Store(db_path)
    path = lock_path(db_path)
    with first.run_lock(timeout_s=1):
        inode = os.stat(path).st_ino
        with (
            pytest.raises(StoreError, match="Another pull is running"),
            second.run_lock(timeout_s=0.1),
        ):
            pass  # pragma: no cover - never entered
    assert os.stat(path).st_ino == inode  # released, never deleted nor replaced
    with second.run_lock(timeout_s=1):
        assert os.stat(path).st_ino == inode
        with (
            pytest.raises(StoreError, match="Another pull is running"),
            first.run_lock(timeout_s=0.1),
        ):
            pass  # pragma: no cover - never entered
    assert os.stat(path).st_ino == inode
    first.close()
    second.close()


def test_a_lock_file_that_is_not_sqlite_is_refused_saying_it_may_be_deleted(store: Store) -> None:
    path = lock_path(store.path)
    path.write_bytes(b"not a database at all" * 10)
    with pytest.raises(StoreError) as refused, store.run_lock(timeout_s=0.5):
        pass  # pragma: no cover - never entered
    message = str(refused.value)
    assert f"Cannot take the pull lock {path}" in message
    assert "safe to delete when no pull of this database is running" in message
    path.unlink()  # as the message says
    with store.run_lock(timeout_s=0.5):
        assert path.exists()


def test_a_symlinked_lock_file_is_refused_and_its_target_left_alone(
    store: Store, tmp_path: Path
) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    before = other.read_bytes()
    path = lock_path(store.path)
    path.symlink_to(other)
    with (
        pytest.raises(StoreError, match=r"is a symbolic link.*Remove it"),
        store.run_lock(timeout_s=0.5),
    ):
        pass  # pragma: no cover - never entered
    assert other.read_bytes() == before


def test_a_fifo_in_place_of_the_lock_file_is_refused(store: Store) -> None:
    path = lock_path(store.path)
    os.mkfifo(path)
    with (
        pytest.raises(StoreError, match=r"is not a regular file.*Remove it"),
        store.run_lock(timeout_s=0.5),
    ):
        pass  # pragma: no cover - never entered


def test_a_store_reached_through_a_symbolic_link_is_locked_as_its_file(db_path: Path) -> None:
    """Two names of one database lock the same file, and a refusal names the real holder."""
    link = db_path.with_name("link.db")
    Store(db_path).close()
    link.symlink_to(db_path)
    real, linked = Store(db_path), Store(link)
    with (
        real.run_lock(timeout_s=1),
        _pulling(real),
        pytest.raises(StoreError, match=rf"Another pull is running on .*\(pid {os.getpid()}"),
        linked.run_lock(timeout_s=0.1),
    ):
        pass  # pragma: no cover - never entered
    assert not link.with_name("link.db.lock").exists()
    real.close()
    linked.close()


def test_a_pull_that_waits_for_another_says_so_before_waiting(db_path: Path, caplog) -> None:
    first, second = Store(db_path), Store(db_path)
    with (
        first.run_lock(timeout_s=1),
        _pulling(first),
        pytest.raises(StoreError, match=r"waited 0\.2 s"),
        second.run_lock(timeout_s=0.2),
    ):
        pass  # pragma: no cover - never entered
    assert f"(pid {os.getpid()}" in caplog.text and "waiting for it, 0.2 s at most" in caplog.text
    first.close()
    second.close()
