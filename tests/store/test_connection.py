"""The connection's transactions: a failed COMMIT is undone, never joined by the next write."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from workbench.errors import StoreError
from workbench.store.connection import Connection


class FailingCommit:
    """A sqlite3 connection whose next COMMIT fails the way a full disk makes it fail."""

    def __init__(self, conn: sqlite3.Connection, *, rollback_fails: bool = False) -> None:
        self._conn = conn
        self.failing = {"COMMIT", "ROLLBACK"} if rollback_fails else {"COMMIT"}

    def execute(self, sql: str, *args: Any) -> Any:
        if sql in self.failing:
            self.failing.discard(sql)
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_a_failed_commit_is_rolled_back_and_the_next_write_commits(tmp_path: Path) -> None:
    c = Connection(tmp_path / "wb.db", busy_timeout_s=1)
    with c.write() as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    real = c.conn
    c.conn = FailingCommit(real)  # type: ignore[assignment]
    with pytest.raises(StoreError, match="Cannot write the database"), c.write() as conn:
        conn.execute("INSERT INTO t VALUES (1)")
    assert not real.in_transaction  # not left open for the next write to join
    with c.write() as conn:
        conn.execute("INSERT INTO t VALUES (2)")
    c.conn = real
    c.close()
    reopened = sqlite3.connect(tmp_path / "wb.db")
    assert reopened.execute("SELECT x FROM t").fetchall() == [(2,)]
    reopened.close()


def test_when_the_rollback_fails_too_a_new_connection_takes_over(tmp_path: Path) -> None:
    c = Connection(tmp_path / "wb.db", busy_timeout_s=1)
    with c.write() as conn:
        conn.execute("CREATE TABLE t (x INTEGER)")
    failing = FailingCommit(c.conn, rollback_fails=True)
    c.conn = failing  # type: ignore[assignment]
    with pytest.raises(StoreError), c.write(durable=True) as conn:
        conn.execute("INSERT INTO t VALUES (1)")
    assert c.conn is not failing and not c.conn.in_transaction
    with c.write() as conn:
        conn.execute("INSERT INTO t VALUES (2)")
    assert c.rows("SELECT x FROM t") == [(2,)]
    c.close()
