"""One SQLite connection shared by a pull's threads (WAL, every write ``BEGIN IMMEDIATE``,
``synchronous=FULL`` for the outbox's), SQLite's errors as ``StoreError``, and the pull lock."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import StoreError
from workbench.folders import create_private

if TYPE_CHECKING:
    import sqlite_utils

logger = logging.getLogger(__name__)
# What a message of SQLite's means, and what to do (first match).
_ADVICE = (
    (("readonly", "read-only"), "The database {path} is read-only here ({text}); check the "
     "file's permissions or point WORKBENCH_DB at a writable path."),
    (("not a database", "malformed", "corrupt"), "{path} is not a usable workbench database "
     "({text}). Restore it from a backup, or move it aside and let the next pull start a "
     "fresh one."),
    (("disk", "full", "unable to open"), "Cannot write the database {path} ({text}); check "
     "disk space and path."),
    (("constraint failed",), "The store refused a write that would break its rules ({text}): "
     "a value it does not allow, or a run, call or snapshot id it does not hold."),
)  # fmt: skip


def open_read_only(path: Path, *, busy_timeout_s: float) -> sqlite3.Connection:
    """``path`` read creating nothing beside it: as usual, else read-only, else immutable."""
    for mode in ("mode=rw", "mode=ro", "mode=ro&immutable=1"):
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", busy_timeout_s, uri=True,
                               isolation_level=None, check_same_thread=False)  # fmt: skip
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the WAL
            return conn
        except sqlite3.Error as exc:
            conn.close()
            if "immutable" in mode or not isinstance(exc, sqlite3.OperationalError):
                raise
    raise AssertionError("unreachable: the last mode returns or raises")


class Connection:
    """A thread-safe SQLite connection with translated errors; one per ``Store``."""

    conn: sqlite3.Connection
    db: sqlite_utils.Database

    def __init__(self, path: str | Path, *, busy_timeout_s: float, read_only: bool = False) -> None:
        self.path, self.busy_timeout_s, self.read_only = Path(path), busy_timeout_s, read_only
        self.lock = threading.RLock()
        self._writing = False  # inside write()'s own transaction
        self.file = self.path  # or its private copy (read_copy)
        self._copy: tempfile.TemporaryDirectory[str] | None = None  # holds the private copy
        if str(path) == ":memory:" or str(path).startswith("file:"):
            raise StoreError("The store needs a database file path (WAL and locks need a file).")
        if read_only and not self.path.is_file():
            raise StoreError(f"No workbench database at {self.path}; run `workbench pull` first.")
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                create_private(self.path)  # SQLite would create it 0644
            except FileExistsError:
                _make_private(self.path)
            except OSError as exc:
                raise StoreError(f"Cannot create the database {self.path}: {exc}.") from exc
        with self.translated():
            self._open()

    def _open(self) -> None:
        if self.read_only:
            return self._use(open_read_only(self.path, busy_timeout_s=self.busy_timeout_s))
        self._use(sqlite3.connect(str(self.path), self.busy_timeout_s, isolation_level=None,
                                  check_same_thread=False))  # fmt: skip
        self.conn.execute("PRAGMA foreign_keys = ON")
        # Two programs creating a file race to switch it to WAL; the loser is not retried by
        # SQLite's busy handler.
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                if self.conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self.conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        self.conn.execute("PRAGMA synchronous = NORMAL")

    def _use(self, conn: sqlite3.Connection) -> None:
        import sqlite_utils  # here: it loads pandas

        self.conn, self.db = conn, sqlite_utils.Database(conn, execute_plugins=False)

    def read_copy(self, prepare: Callable[[sqlite3.Connection], object]) -> None:
        """Read a private copy from now on (in a 0700 temporary folder), migrated by ``prepare``."""
        assert self.read_only and self._copy is None
        folder, conn = None, None
        with self.translated():
            try:
                folder = tempfile.TemporaryDirectory(prefix="workbench-store-")
                copy = Path(folder.name) / self.path.name
                create_private(copy)
                conn = sqlite3.connect(str(copy), isolation_level=None, check_same_thread=False)
                with self.lock:
                    self.conn.backup(conn)
                    conn.execute("PRAGMA journal_mode = MEMORY")  # no file beside the copy
                    conn.execute("PRAGMA synchronous = OFF")  # a crash loses only the copy
                    conn.execute("BEGIN IMMEDIATE")
                    prepare(conn)
                    conn.execute("COMMIT")
                    conn.execute("PRAGMA query_only = ON")
                    self.conn.close()
                    self._use(conn)
                    self.file, self._copy = copy, folder
            except BaseException as exc:
                if conn is not None:
                    conn.close()
                where = tempfile.gettempdir() if folder is None else folder.name
                if folder is not None:
                    folder.cleanup()
                if isinstance(exc, OSError | sqlite3.OperationalError):
                    raise self._no_copy(exc, where) from None
                raise

    def _no_copy(self, exc: BaseException, where: object) -> StoreError:
        return StoreError(
            f"{self.path} has an older schema, read from a private copy, which could not be "
            f"made in {where} ({exc}). Free room there, or point TMPDIR at a folder of yours "
            "with room; the store itself is unchanged."
        )

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One write transaction (nested calls join the outer one, and fail once SQLite has
        ended it: a full disk rolls it all back, and nothing may go on as if in it)."""
        with self.lock, self.translated():
            if self.conn.in_transaction or self._writing:
                if not self.conn.in_transaction:
                    raise StoreError(
                        f"SQLite ended a write to {self.path} after an error (a full disk, "
                        "say): all of it is undone. Free room, then run it again."
                    )
                yield self.conn
                return
            if durable:
                self.conn.execute("PRAGMA synchronous = FULL")
            try:
                self._writing = True
                try:  # a Ctrl-C just after BEGIN too: an open transaction would block every writer
                    self.conn.execute("BEGIN IMMEDIATE")
                    yield self.conn
                    self.conn.execute("COMMIT")
                except BaseException:
                    self._abandon()  # a failed COMMIT may leave it open
                    raise
            finally:
                self._writing = False
                if durable and not self.conn.in_transaction:
                    self.conn.execute("PRAGMA synchronous = NORMAL")

    def _abandon(self) -> None:
        """Roll back; when even that fails, close and open anew."""
        with suppress(sqlite3.Error):
            self.conn.execute("ROLLBACK")
        if self.conn.in_transaction:
            with suppress(sqlite3.Error):
                self.conn.close()
            self._open()

    def insert(self, table: str, row: dict[str, Any]) -> int:
        """Insert ``row``; its id (sqlite-utils' insert doubled bench/store_write.py's time)."""
        sql = f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"  # noqa: S608
        with self.write() as conn:
            return int(conn.execute(sql, list(row.values())).lastrowid or 0)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent read: one snapshot of the database for the block (a pull in another
        process may commit between two of its statements; outbox marks and upserts are updates)."""
        with self.lock, self.translated():
            if self.conn.in_transaction:
                yield self.conn
                return
            try:  # BEGIN inside: a Ctrl-C just after it must not leave it open
                self.conn.execute("BEGIN")
                yield self.conn
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.read() as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self.lock:
            with suppress(sqlite3.Error):
                self.conn.close()
            if self._copy is not None:
                self._copy.cleanup()

    @contextmanager
    def translated(self) -> Iterator[None]:
        """``sqlite3`` errors as ``StoreError`` saying what happened and what to do."""
        try:
            yield
        except sqlite3.Error as exc:
            if _busy(exc):
                raise StoreError(
                    f"The database {self.path} stayed locked by another program for "
                    f"{self.busy_timeout_s:g} s (another workbench pull, or a tool holding an "
                    "open write transaction). Wait for it to finish and try again, or give the "
                    "store a longer busy_timeout_s."
                ) from None
            text = str(exc)
            advice = next(
                (a for words, a in _ADVICE if any(w in text.lower() for w in words)),
                "The database {path} failed: {text}.",
            )
            raise StoreError(advice.format(path=self.path, text=text)) from exc


def _make_private(path: Path) -> None:
    """Take every user's access to a store (and its -wal, -shm) away, with a warning."""
    opened = []
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with suppress(OSError):
            if (info := file.stat()).st_mode & 0o007 and info.st_uid == os.getuid():
                file.chmod(info.st_mode & 0o770)
                opened.append(file.name)
    if opened:
        logger.warning(
            "%s could be read by every user of this machine: no longer (it holds students' data).",
            ", ".join(opened),
        )


def _busy(exc: BaseException) -> bool:
    return "locked" in str(exc).lower() or "busy" in str(exc).lower()


def lock_path(db_path: Path) -> Path:
    """The pull lock of the database file ``db_path`` names, its links followed."""
    real = db_path.resolve()
    return real.with_name(real.name + ".lock")


@contextmanager
def run_lock(c: Connection, *, timeout_s: float) -> Iterator[None]:
    """Hold the pull lock: an exclusive transaction on ``<db>.lock``, dropped when the process
    ends however it ends; who holds it is the ``running`` pull run."""
    path = lock_path(c.path)
    if path.is_symlink() or (path.exists() and not path.is_file()):  # a link locks its target
        what = "a symbolic link" if path.is_symlink() else "not a regular file"
        raise StoreError(
            f"The pull lock {path} is {what}; the workbench only locks a plain file it creates "
            "itself. Remove it (nothing else uses that name) and try again."
        )
    with closing(sqlite3.connect(str(path), timeout=0, isolation_level=None)) as holder:
        try:
            try:
                holder.execute("BEGIN EXCLUSIVE")
            except sqlite3.OperationalError as busy:
                if not _busy(busy) or timeout_s <= 0:
                    raise
                logger.warning("%s", _held(c, timeout_s, waiting=True))
                holder.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
                holder.execute("BEGIN EXCLUSIVE")
        except sqlite3.DatabaseError as exc:
            if _busy(exc):
                raise StoreError(_held(c, timeout_s)) from None
            raise StoreError(
                f"Cannot take the pull lock {path}: {exc}. It only holds the lock: it is safe "
                "to delete when no pull of this database is running; delete it and try again."
            ) from exc
        yield


def _held(c: Connection, timeout_s: float, *, waiting: bool = False) -> str:
    who = ""
    for pid, host, since in c.rows(  # the holder: the pull it runs
        "SELECT pid, host, started_at FROM runs WHERE kind = 'pull' AND status = 'running' "
        "ORDER BY id DESC LIMIT 1"
    ):
        where = "" if host == socket.gethostname() else f" on {host}"
        who = f" (pid {pid}{where} since {since})"
    where = f"Another pull is running on {c.path.resolve()}{who}"
    if waiting:
        return f"{where}: waiting for it, {timeout_s:g} s at most (--wait)."
    return (
        f"{where}; waited {timeout_s:g} s. Wait for it to finish and try again, or stop that "
        "process (its lock is released the moment it ends)."
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
        pass
    return True
