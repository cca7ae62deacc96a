"""Only one pull at a time per database, and a lock that dies with its holder.

The lock is SQLite's own exclusive lock on a small side file (``<db>.lock``), held by an open
transaction of a dedicated connection. The operating system drops it when the process ends,
however it ends (``kill -9`` included), so it can never go stale; a second pull waits for it at
most ``timeout_s`` (SQLite's busy handler). Who holds it (pid, host, since) is written to the
``locks`` table of the database, only to make the refusal message useful.

The side file stays when the lock is released, on purpose: every pull locks the same file, so
two pulls can never each hold a lock on a different one. Deleting it on release would let a
waiter hold the deleted file while a newcomer locks a new one at the same path.
"""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import StoreError
from workbench.store.cells import now_text
from workbench.store.connection import Connection

LOCK_NAME = "pull"
logger = logging.getLogger(__name__)


def lock_path(db_path: Path) -> Path:
    """The lock of the database file ``db_path`` names, its symbolic links followed: every
    name of one database locks one file."""
    real = db_path.resolve()
    return real.with_name(real.name + ".lock")


@contextmanager
def run_lock(c: Connection, *, timeout_s: float) -> Iterator[None]:
    """Hold the pull lock of ``c``'s database for the ``with`` block."""
    path = lock_path(c.path)
    _check_lock_file(path)
    holder = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    try:
        try:
            try:
                holder.execute("BEGIN EXCLUSIVE")
            except sqlite3.OperationalError as busy:
                if "locked" not in str(busy).lower() or timeout_s <= 0:
                    raise
                # Said before waiting, so a pull that seems to hang says why.
                logger.warning("%s", _busy_message(c, timeout_s, waiting=True))
                holder.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
                holder.execute("BEGIN EXCLUSIVE")
        except sqlite3.DatabaseError as exc:
            text = str(exc).lower()
            if "locked" in text or "busy" in text:
                raise StoreError(_busy_message(c, timeout_s)) from None
            raise StoreError(
                f"Cannot take the pull lock {path}: {exc}. It only holds the lock: it is safe "
                "to delete when no pull of this database is running; delete it and try again."
            ) from exc
        with c.write() as conn:
            conn.execute(
                "INSERT INTO locks (name, pid, host, since) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET pid = excluded.pid, host = excluded.host, "
                "since = excluded.since, run_id = NULL",
                (LOCK_NAME, os.getpid(), socket.gethostname(), now_text()),
            )
        try:
            yield
        finally:
            with c.write() as conn:
                conn.execute(
                    "DELETE FROM locks WHERE name = ? AND pid = ?", (LOCK_NAME, os.getpid())
                )
    finally:
        holder.close()


def _check_lock_file(path: Path) -> None:
    """Refuse a ``<db>.lock`` that is not a plain file: locking through a symbolic link would
    write into its target, and a FIFO or a folder cannot hold the lock."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"Cannot read the pull lock {path}: {exc.strerror}.") from exc
    if stat.S_ISREG(mode):
        return
    what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
    raise StoreError(
        f"The pull lock {path} is {what}; the workbench only locks a plain file it creates "
        "itself. Remove it (nothing else uses that name) and try again."
    )


def _busy_message(c: Connection, timeout_s: float, *, waiting: bool = False) -> str:
    rows = c.rows("SELECT pid, host, since FROM locks WHERE name = ?", (LOCK_NAME,))
    who = ""
    if rows:
        pid, host, since = rows[0]
        where = "" if host == socket.gethostname() else f" on {host}"
        who = f" (pid {pid}{where} since {since})"
    if waiting:
        return (
            f"Another pull is running on {c.path.resolve()}{who}: waiting for it, "
            f"{timeout_s:g} s at most (--wait)."
        )
    return (
        f"Another pull is running on {c.path.resolve()}{who}; waited {timeout_s:g} s. Wait for "
        "it to finish and try again, or stop that process (its lock is released the moment it "
        "ends)."
    )


def process_alive(pid: int | None, host: str | None) -> bool | None:
    """True/False when we can tell (same host, POSIX), None when we cannot."""
    if pid is None or host != socket.gethostname() or os.name != "posix":
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (dead, not yet reaped) still answers kill(0)
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True
