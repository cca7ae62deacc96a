"""One SQLite connection, shared by the threads of a pull, and the transactions around it.

- WAL, so readers (a notebook, Datasette) never block the pull and the pull never blocks them.
- ``synchronous=NORMAL``: in WAL mode a commit survives a crash of the process (``kill -9``)
  and the database cannot be corrupted; only an OS crash or power cut may lose the last few
  commits, which the next pull fetches again. ``FULL`` would fsync on every one of the
  thousands of calls a pull records. The outbox, whose records must survive a power cut
  (they say what was sent), writes with ``durable=True``: ``FULL`` for that transaction.
- The WAL is checkpointed into the database every 2,000 pages (8 MB with 4 kB pages) instead
  of SQLite's 1,000: a pull appends a document to ``calls`` per detail, and copying the index
  pages those appends keep rewriting half as often saves about a fifth of each commit's CPU;
  a checkpoint's pause (it runs in the committing thread) stays in the tens of milliseconds.
- Every write is ``BEGIN IMMEDIATE`` ... ``COMMIT``: the write lock is taken up front, so a
  busy database makes the writer wait (``busy_timeout_s``) instead of failing half-way. A
  write of a single statement (a call's record) runs in autocommit mode instead, which is the
  same for it: the statement takes the write lock as it starts, and waits the same way.
- SQLite errors become :class:`~workbench.errors.StoreError` with a message that says what to do;
  "database is locked" never escapes as a ``sqlite3`` traceback.
- A new database file is created readable and writable by its owner only (0600, whatever
  the umask): it holds students' personal data. SQLite gives its ``-wal`` and ``-shm`` the
  file's mode. An existing file keeps its mode.
- ``read_only=True`` (bundles, reports on stored data) creates nothing next to the database
  (no folder, no lock file, no migration) and refuses writes (``query_only``). It opens the
  database as usual when it can, so it sees a running pull's commits, and SQLite removes the
  ``-wal``/``-shm`` files when the last connection closes. In a folder one cannot write in,
  it reads the file as it is (``immutable=1``): no writer can work there either.
- A read-only store of an older schema is read from a private copy (:meth:`Connection.
  read_copy`): the file is copied (SQLite's backup, consistent even while another program
  writes) into a folder of its own (0700, the system's temporary folder), migrated there, and
  removed with it on close. Reading an archived store never changes it, nor needs the partner.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import StoreError
from workbench.folders import create_private

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import sqlite_utils

WAL_CHECKPOINT_PAGES = 2000  # see the module docstring
# How a read-only store opens, first that works: as usual but refusing writes (SQLite removes
# the -wal and -shm it made when the last connection closes); read-only (a folder one cannot
# write in, a writer's -wal and -shm there); the file as it is (no writer can exist there).
_READ_ONLY_MODES = ("mode=rw", "mode=ro", "mode=ro&immutable=1")


def open_read_only(path: Path, *, busy_timeout_s: float) -> sqlite3.Connection:
    """The database file ``path`` opened to read only, creating nothing beside it: the first of
    ``_READ_ONLY_MODES`` that opens; ``sqlite3.OperationalError`` when none does, another
    ``sqlite3.Error`` at once (a damaged file: no mode reads it)."""
    uri = path.resolve().as_uri()
    for mode in _READ_ONLY_MODES:
        conn = sqlite3.connect(
            f"{uri}?{mode}", uri=True, timeout=busy_timeout_s, isolation_level=None,
            check_same_thread=False,
        )  # fmt: skip
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opens the WAL
        except sqlite3.Error as exc:
            conn.close()  # now: it takes the -wal and -shm it made with it
            if mode == _READ_ONLY_MODES[-1] or not isinstance(exc, sqlite3.OperationalError):
                raise
            continue
        return conn
    raise AssertionError("unreachable: the last mode returns or raises")


def _database(conn: sqlite3.Connection) -> sqlite_utils.Database:
    """sqlite-utils' view of ``conn`` (imported here: it loads pandas, which a report job's
    check of a store does without)."""
    import sqlite_utils

    return sqlite_utils.Database(conn, execute_plugins=False)


def _make_private(path: Path) -> None:
    """A store every user may read (made 0644 before stores were private) loses the others'
    access when its owner opens it to write, its -wal and -shm too, and a warning says so; a
    group's access, an owner's choice, stays."""
    opened = []
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            info = file.stat()
            if info.st_mode & 0o007 and info.st_uid == os.getuid():
                file.chmod(info.st_mode & 0o770)
                opened.append(file.name)
        except OSError:  # not there, or not ours to change: left as it is
            continue
    if opened:
        logger.warning(
            "%s could be read by every user of this machine: no longer (it holds students' data).",
            ", ".join(opened),
        )


class Connection:
    """A thread-safe SQLite connection with translated errors; build one per ``Store``."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float, read_only: bool = False) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self.read_only = read_only
        self.lock = threading.RLock()
        self.file = self.path  # the file read: ``path``, or its private copy (read_copy)
        self._copy: weakref.finalize | None = None
        if str(path) == ":memory:" or str(path).startswith("file:"):
            raise StoreError("The store needs a database file path (WAL and locks need a file).")
        if read_only:
            with self.translated():
                self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"Cannot create the folder of {self.path}: {exc}.") from exc
        try:  # SQLite would create it 0644; its -wal and -shm take the file's mode
            create_private(self.path)
        except FileExistsError:
            _make_private(self.path)
        except OSError as exc:
            raise StoreError(f"Cannot create the database {self.path}: {exc}.") from exc
        with self.translated():
            self._open()

    def _open(self) -> None:
        self.conn = sqlite3.connect(
            str(self.path),
            timeout=self.busy_timeout_s,
            isolation_level=None,  # we issue BEGIN/COMMIT ourselves
            check_same_thread=False,  # threads share it under self.lock
        )
        self.conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self._use_wal()
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        self.db = _database(self.conn)

    def _open_read_only(self) -> None:
        """Open for reading only, creating no file: see the module docstring."""
        if not self.path.is_file():
            raise StoreError(f"No workbench database at {self.path}; run `workbench pull` first.")
        self.conn = open_read_only(self.path, busy_timeout_s=self.busy_timeout_s)
        self.db = _database(self.conn)

    def read_copy(self, prepare: Callable[[sqlite3.Connection], object]) -> None:
        """Read a private copy of the database from now on, ``prepare`` (a migration) run on
        it in one transaction: see the module docstring. Read-only connections only."""
        assert self.read_only and self._copy is None
        try:
            folder = Path(tempfile.mkdtemp(prefix="workbench-store-"))  # 0700
        except OSError as exc:
            raise self._no_copy(exc, tempfile.gettempdir()) from None
        removal = weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
        copy = folder / self.path.name
        try:
            create_private(copy)  # its owner only, like the store: it is the same data
            conn = sqlite3.connect(str(copy), isolation_level=None, check_same_thread=False)
            try:
                with self.lock:
                    self.conn.backup(conn)
                    conn.execute("PRAGMA journal_mode = MEMORY")  # no file beside the copy
                    conn.execute("PRAGMA synchronous = OFF")  # a crash loses only the copy
                    conn.execute("BEGIN IMMEDIATE")
                    prepare(conn)
                    conn.execute("COMMIT")
                    conn.execute("PRAGMA query_only = ON")
            except BaseException:
                conn.close()
                raise
        except (OSError, sqlite3.OperationalError) as exc:  # no room, no access: the copy's
            removal()
            raise self._no_copy(exc, folder) from None
        except sqlite3.Error as exc:  # the store itself (not a database, say)
            removal()
            raise store_error(exc, self.path, self.busy_timeout_s) from _cause(exc)
        except BaseException:
            removal()
            raise
        with self.lock:
            self.conn.close()
            self.conn, self.file, self._copy = conn, copy, removal
            self.db = _database(conn)

    def _no_copy(self, exc: BaseException, where: object) -> StoreError:
        """Why an older store cannot be read: its private copy could not be made."""
        return StoreError(
            f"{self.path} has an older schema, read from a private copy, which could not be "
            f"made in {where} ({exc}). Free room there, or point TMPDIR at a folder of yours "
            "with room; the store itself is unchanged."
        )

    def _use_wal(self) -> None:
        # Two programs opening a brand-new file at once race to switch it to WAL, and SQLite
        # answers the loser "database is locked" at once, without its busy handler: retry.
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                mode = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
                if str(mode).lower() != "wal":
                    self.conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                lowered = str(exc).lower()
                if ("locked" not in lowered and "busy" not in lowered) or (
                    time.monotonic() > deadline
                ):
                    raise
                time.sleep(0.01)

    # -- transactions -------------------------------------------------------------------------

    @contextmanager
    def write(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One write transaction (nested calls join the outer one)."""
        with self.lock, self.translated():
            if self.conn.in_transaction:
                yield self.conn
                return
            if durable:
                self.conn.execute("PRAGMA synchronous = FULL")
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self.conn
                except BaseException:
                    self._abandon()
                    raise
                try:
                    self.conn.execute("COMMIT")
                except BaseException:
                    # A failed COMMIT (disk full, I/O error) may leave the transaction open; the
                    # next write would join it and never commit. Undo it instead.
                    self._abandon()
                    raise
            finally:
                if durable and not self.conn.in_transaction:
                    self.conn.execute("PRAGMA synchronous = NORMAL")

    def _abandon(self) -> None:
        """Roll back the open transaction; when even that fails, close the connection (which
        rolls it back) and open a new one, so that no later write joins it."""
        if self.conn.in_transaction:
            with suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
        if self.conn.in_transaction:
            with suppress(sqlite3.Error):
                self.conn.close()
            if self.read_only:
                self._open_read_only()
            else:
                self._open()

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        """One INSERT, its own transaction (or part of the caller's); the new row's id.

        Outside a transaction the statement runs in autocommit mode: SQLite takes the write
        lock when the statement starts, waiting ``busy_timeout_s`` like ``BEGIN IMMEDIATE``
        would, and commits when it ends. One statement instead of three: a pull records a call
        per detail, from threads that give up and take back the GIL around each statement.
        """
        with self.lock:
            try:
                return int(self.conn.execute(sql, params).lastrowid or 0)
            except sqlite3.Error as exc:
                raise store_error(exc, self.path, self.busy_timeout_s) from _cause(exc)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent read (one snapshot of the database for every query inside)."""
        with self.lock, self.translated():
            if self.conn.in_transaction:
                yield self.conn
                return
            self.conn.execute("BEGIN")
            try:
                yield self.conn
            finally:
                if self.conn.in_transaction:
                    self.conn.execute("COMMIT")

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self.read() as conn:
            return conn.execute(sql, params).fetchall()

    def close(self) -> None:
        with self.lock:
            with suppress(sqlite3.Error):  # closing never matters enough to raise
                self.conn.close()
            if self._copy is not None:
                self._copy()  # removes the private copy and its folder

    # -- errors ------------------------------------------------------------------------------

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Turn ``sqlite3`` errors into ``StoreError`` with advice."""
        try:
            yield
        except sqlite3.Error as exc:
            raise store_error(exc, self.path, self.busy_timeout_s) from _cause(exc)


def store_error(exc: sqlite3.Error, path: Path, timeout_s: float) -> StoreError:
    """A ``StoreError`` that says what happened to ``path`` and what to do about it."""
    text = str(exc)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return StoreError(
            f"The database {path} stayed locked by another program for {timeout_s:g} s "
            "(another workbench pull, or a tool holding an open write transaction). Wait for it "
            "to finish and try again, or give the store a longer busy_timeout_s."
        )
    if "readonly" in lowered or "read-only" in lowered:
        return StoreError(
            f"The database {path} is read-only here ({text}); check the file's permissions or "
            "point WORKBENCH_DB at a writable path."
        )
    if "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
        return StoreError(
            f"{path} is not a usable workbench database ({text}). Restore it from a backup, or "
            "move it aside and let the next pull start a fresh one."
        )
    if "disk" in lowered or "full" in lowered or "unable to open" in lowered:
        return StoreError(f"Cannot write the database {path} ({text}); check disk space and path.")
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreError(
            f"The store refused a write that would break its consistency ({text}); a run, call "
            "or snapshot id given to it does not exist in this database."
        )
    return StoreError(f"The database {path} failed: {text}.")


def _cause(exc: sqlite3.Error) -> BaseException | None:
    # A lock timeout is an expected condition: no sqlite3 traceback behind the clear message.
    lowered = str(exc).lower()
    return None if "locked" in lowered or "busy" in lowered else exc
