"""Only one pull at a time per database, and a lock that dies with its holder.

The lock is SQLite's own exclusive lock on a small side file (``<db>.lock``), held by an open
transaction of a dedicated connection. The operating system drops it when the process ends,
however it ends (``kill -9`` included), so it can never go stale; a second pull waits for it at
most ``timeout_s`` (SQLite's busy handler). Who holds it (pid, host, since) is written to the
``locks`` table of the database, only to make the refusal message useful.

The side file is deleted when the lock is released (POSIX). Deleting a lock file is only safe if
a waiter cannot end up holding the deleted file while a newcomer locks a new one, so the holder
first *retires* it: still holding the lock, it writes the file's inode into it and commits, then
deletes it. Whoever gets the lock of a retired file lets it go and starts again on the path, and
deletes it in its holder's place when it stays there (that holder died between the two steps).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import StoreError
from workbench.store.cells import now_text
from workbench.store.connection import Connection

LOCK_NAME = "pull"
_RETIRING_S = 1.0  # how long a retired lock file may stay before a waiter deletes it itself


def lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


@contextmanager
def run_lock(c: Connection, *, timeout_s: float) -> Iterator[None]:
    """Hold the pull lock of ``c``'s database for the ``with`` block."""
    path = lock_path(c.path)
    holder = _acquire(c, path, timeout_s)
    try:
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
        _release(holder, path)


def _acquire(c: Connection, path: Path, timeout_s: float) -> sqlite3.Connection:
    """A connection holding the exclusive lock of the live (not retired) file at ``path``."""
    deadline = time.monotonic() + max(timeout_s, 0.0)
    retired_since: dict[int, float] = {}
    while True:
        left = max(deadline - time.monotonic(), 0.0)
        holder = sqlite3.connect(str(path), timeout=left, isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            retired = _retired_inode(holder)
        except sqlite3.OperationalError as exc:
            holder.close()
            if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
                raise StoreError(f"Cannot take the pull lock {path}: {exc}.") from exc
            raise StoreError(_busy_message(c, timeout_s)) from None
        if retired is None:
            return holder
        holder.close()  # its holder is deleting it: start again on the file at the path
        now = time.monotonic()
        if now - retired_since.setdefault(retired, now) > _RETIRING_S:
            with contextlib.suppress(OSError):
                if os.stat(path).st_ino == retired:
                    path.unlink()
        if now > deadline:
            raise StoreError(_busy_message(c, timeout_s))
        time.sleep(0.01)


def _retired_inode(holder: sqlite3.Connection) -> int | None:
    found = holder.execute("SELECT 1 FROM sqlite_master WHERE name = 'retired'").fetchone()
    if found is None:
        return None
    row = holder.execute("SELECT inode FROM retired").fetchone()
    return int(row[0]) if row else 0


def _release(holder: sqlite3.Connection, path: Path) -> None:
    """Retire and delete the lock file, then let the lock go. Where files open cannot be
    deleted (Windows), or when anything fails, the file stays: the next pull reuses it."""
    try:
        if os.name == "posix":
            inode = os.stat(path).st_ino
            holder.execute("CREATE TABLE retired (inode INTEGER)")
            holder.execute("INSERT INTO retired VALUES (?)", (inode,))
            holder.execute("COMMIT")
            path.unlink()
    except (OSError, sqlite3.Error):
        pass
    finally:
        holder.close()


def _busy_message(c: Connection, timeout_s: float) -> str:
    rows = c.rows("SELECT pid, host, since FROM locks WHERE name = ?", (LOCK_NAME,))
    who = ""
    if rows:
        pid, host, since = rows[0]
        where = "" if host == socket.gethostname() else f" on {host}"
        who = f" (pid {pid}{where} since {since})"
    return (
        f"Another pull is running on {c.path}{who}; waited {timeout_s:g} s. Wait for it to "
        "finish and try again, or stop that process (its lock is released the moment it ends)."
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
