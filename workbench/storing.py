"""A pull's fetched details parsed and stored, each with its calls in one transaction or not at
all, each call recorded once: by the pulling thread, or from the first list with
``PROCESS_FROM`` details to fetch by a process of its own for the rest of the pull. That CPU,
about 2 ms a detail, held the GIL against the fetching threads: ``bench/pull.py``'s first pull
was 1.28-1.44x the bare pool so, 1.14-1.22x with the process (which costs about 0.7 s of CPU to
start: the pulling thread stores what comes meanwhile). The process runs :func:`main` of this
very file (``python -P -c``), not the caller's ``__main__`` again as ``multiprocessing`` would:
an analyst's script rarely guards its pull.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import subprocess
import sys
import threading
from contextlib import suppress
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench import pesc
from workbench.api.frames import parse_pescxml
from workbench.store.details import PreparedDetail, pescxml_of

if TYPE_CHECKING:
    from workbench.http.session import Exchange, Recorder, Session
    from workbench.store import Store

PROCESS_FROM = 500  # details of one list: fewer, and the pulling thread stores them
# Details queued for the process: the fetching waits beyond, so memory stays bounded.
QUEUED = 32
BATCH = 16  # details a transaction of the process at most: the pull's own writes wait for it
# The package's folder first (-P: not the cwd's): this very workbench, whatever else is there.
LAUNCH = "import sys; sys.path.insert(0, sys.argv[1]); from workbench import storing as s; s.main()"
Rows = list[dict[str, Any]]
Key = tuple[str, str]  # (list name, request id)
Answer = tuple[dict[Key, str | None], int, str, str | None]  # errors, calls lost, why, failure


class Storing:
    """Stores the rows a pull fetched (``request_id``, ``detail``, ``error``, ``held``: the
    exchanges that fetched it) with :meth:`send`; ``errors``: why each row sent was not stored
    (None: stored), by (list name, request id), complete after the block. ``calls``: the
    session's recorder that writes calls into ``store``; without it no process is started.
    Only the pulling thread reads and writes what is counted; threads move bytes."""

    def __init__(
        self, session: Session, store: Store, *, run_id: int, calls: Recorder | None
    ) -> None:
        self.session, self.store, self.run_id, self.calls = session, store, run_id, calls
        self.errors: dict[Key, str | None] = {}
        self._given: set[Key] = set()  # taken to store, here or there: never taken again
        self._held: dict[Key, int] = {}  # the process's, not answered yet: their exchanges
        self._child: subprocess.Popen[bytes] | None = None
        self._outgoing: queue.Queue[Any] = queue.Queue(QUEUED)
        self._answers: queue.SimpleQueue[Answer | None] = queue.SimpleQueue()  # None: it ended
        self._ready = threading.Event()  # the process has opened the store
        self._failure = self._unsent = ""  # why it failed, in its words; why a row was not sent
        self._over = False  # it has ended, and every answer of it is counted
        self._sender = threading.Thread(target=self._feed, name="workbench-storing", daemon=True)
        self._receiver = threading.Thread(
            target=self._receive, name="workbench-stored", daemon=True
        )

    def expect(self, details: int) -> None:
        """A list has ``details`` to fetch: start the process if that is worth it."""
        worth = self.calls is not None and details >= PROCESS_FROM and os.name == "posix"
        if not worth or self._child is not None or getattr(sys, "frozen", False):
            return
        down, up = os.pipe(), os.pipe()  # (read, write): to the process, and back
        package = str(Path(__file__).resolve().parent.parent)
        fds = (down[0], up[1])  # theirs: read from us, write to us
        argv = [sys.executable, "-P", "-c", LAUNCH, package, *map(str, (*fds, os.getpid()))]
        try:
            self._child = subprocess.Popen(  # noqa: S603 - this interpreter, this module
                argv,
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C at the terminal is the pull's to handle
            )
        except OSError:  # no interpreter to start (an embedded one): the pulling thread stores
            os.close(down[1])
            os.close(up[0])
            return
        finally:
            for fd in fds:
                os.close(fd)
        self._down, self._up = (
            Connection(down[1], readable=False),
            Connection(up[0], writable=False),
        )
        # Threads send and receive: a Ctrl-C never cuts a detail in half on the pipe, and
        # neither process waits on a full pipe the other does not read.
        self._outgoing.put((self.store.reopener(), self.run_id))
        self._sender.start()
        self._receiver.start()

    def _feed(self) -> None:
        try:
            while (item := self._outgoing.get()) is not None:
                self._down.send(item)
        except Exception as exc:  # the process ended, or a detail cannot be sent
            self._unsent = f"{type(exc).__name__}: {exc}"
        finally:
            self._down.close()  # the end of its input: it stores what it has, and ends

    def _receive(self) -> None:
        with suppress(BaseException):  # it ended, or its answer is unreadable: stopped in exit
            while True:
                self._answers.put(self._up.recv())
                self._ready.set()
        self._up.close()  # a process still answering learns it is not heard
        self._answers.put(None)

    def _take(self, wait: float = 0) -> None:
        """Count the answers come so far, waiting ``wait`` seconds for one if none has."""
        with suppress(queue.Empty):
            while not self._over:
                answer = self._answers.get(timeout=wait) if wait else self._answers.get_nowait()
                if answer is None:
                    self._over = True
                    return
                errors, lost, why, failure = answer
                self.errors.update(errors)
                for key in errors:
                    self._held.pop(key, None)
                if lost:
                    self.session.lost(lost, why)
                self._failure, wait = failure or self._failure, 0

    def send(self, list_name: str, dates: dict[str, Any], rows: Rows) -> Rows:
        """Store ``rows`` of ``list_name`` (a batch of ``fetch_all``): queued for the process,
        or here (while it starts, or once it has ended)."""
        self._take()
        here = []
        for row in rows:
            key = (list_name, row["request_id"])
            if key in self._given:  # given again after a Ctrl-C in here
                continue
            self._given.add(key)
            self._held[key] = len(row["held"])  # held until refused: a Ctrl-C may queue it
            if self._child is None or not self._put((*key, dates.get(key[1]), row)):
                del self._held[key]
                here.append(row)
                continue
            for exchange in row["held"]:  # the caller's recorders see it here, the store there
                self.session.record(exchange, skip=self.calls)
        if here:
            for row in store_fetched(self.session, self.store, list_name, dates, here):
                self.errors[list_name, row["request_id"]] = row["error"]
        return _outcomes(rows)

    def _put(self, item: Any, *, last: bool = False) -> bool:
        """Whether ``item`` was queued: not while the process starts (but ``last``), nor once
        it has ended."""
        while self._sender.is_alive() and (last or self._receiver.is_alive()):
            try:
                self._outgoing.put(item, timeout=0.5 if last or self._ready.is_set() else 0)
                return True
            except queue.Full:
                if not last and not self._ready.is_set():
                    return False
        return False

    def __enter__(self) -> Storing:
        return self

    def __exit__(self, *exc: object) -> None:
        """Wait until the process stored all it was sent: a first Ctrl-C waits still (the
        rest is brief), a second stops it at once (its transaction under way is lost)."""
        if self._child is None:
            return
        stopping = ended = False
        try:
            while not self._over:
                try:
                    if not ended:  # the end of its input (unless it has ended)
                        self._put(None, last=True)
                        ended = True
                    self._take(wait=0.5)
                except KeyboardInterrupt:
                    if stopping:
                        raise
                    stopping = True
        finally:
            if self._child.poll() is None:
                self._child.kill()
            code = self._child.wait()
            self._receiver.join()
            self._take()  # what came before it ended
            with suppress(queue.Full):
                self._outgoing.put_nowait(None)  # a sender still waiting for a row ends
            self._sender.join()
            if self._held:  # sent, never answered: fetched again by the next pull
                why = self._failure or (f"it ended with exit code {code}" if code else self._unsent)
                why = "stopped by Ctrl-C" if stopping and code < 0 else why
                error = f"StoreError: the pull's storing process did not store it ({why})"
                self.session.lost(sum(self._held.values()), error)
                self.errors.update(dict.fromkeys(self._held, error))


def main() -> None:
    """The storing process (its arguments: the pipe in, the pipe out, the pull's process id): opens
    the store it is sent, answers once ready, then stores what has come, a batch at a time
    until the end of its input, each answered (errors by key, calls lost, why, None); when it
    fails, its last answer says why."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the pull decides, and tells it by its input
    if sys.platform == "linux":  # killed with a killed pull: the next finds what is missing
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    argv = sys.argv[2:]
    if os.getppid() != int(argv[2]):  # it died before that (elsewhere its input ends)
        sys.exit(1)
    inbox, outbox = (
        Connection(int(argv[0]), writable=False),
        Connection(int(argv[1]), readable=False),
    )
    errors: dict[Key, str | None] = {}  # of the batch under way
    recorder = None
    try:
        reopen, run_id = inbox.recv()
        with reopen() as store:
            recorder = _Calls(store, run_id)
            outbox.send(({}, 0, "", None))
            items: list[Any] = []
            more = True
            while more:  # what has come: more at once when it falls behind
                while more and (not items or (len(items) < BATCH and inbox.poll())):
                    try:
                        items.append(inbox.recv())
                    except EOFError:
                        more = False
                errors = {}
                for list_name, group in itertools.groupby(items, key=lambda item: item[0]):
                    kept = list(group)
                    dates = {request_id: date for _, request_id, date, _ in kept}
                    rows = [row for *_, row in kept]
                    for row in store_fetched(recorder, store, list_name, dates, rows):
                        errors[list_name, row["request_id"]] = row["error"]
                outbox.send((errors, recorder.unrecorded, recorder.why, None))
                items, recorder.unrecorded = [], 0
    except BaseException as exc:  # said by the pull, masked, rather than a traceback here
        lost, why = (recorder.unrecorded, recorder.why) if recorder else (0, "")
        with suppress(OSError):
            outbox.send((errors, lost, why, f"{type(exc).__name__}: {exc}"))
        sys.exit(1)


class _Calls:
    """What :func:`store_fetched` needs of a session, in the storing process: each held
    exchange recorded into the store, under the pull's run."""

    def __init__(self, store: Store, run_id: int) -> None:
        self.store, self.run_id = store, run_id
        self.unrecorded, self.why = 0, ""

    def record(self, exchange: Exchange) -> int | None:
        try:  # as Session.record: a call that cannot be recorded is counted, and the rest go on
            return self.store.record_call(exchange, run_id=self.run_id)
        except Exception as exc:
            self.lost(1, f"{type(exc).__name__}: {exc}")
            return None

    def lost(self, count: int, why: str) -> None:
        self.unrecorded, self.why = self.unrecorded + count, why


def store_fetched(
    session: Any, store: Store, list_name: str, dates: dict[str, Any], fetched: Rows
) -> Rows:
    """Store fetched details in one transaction, each with its calls in a savepoint (one that
    cannot be read or written fails alone); per detail, why it was not stored, if not. Parsing
    on every fetching thread, a commit each, made ``bench/pull.py``'s first pull 10-20 % longer."""
    for row in fetched:
        row["prepared"] = None
        if row["detail"] is not None:
            try:
                row["prepared"] = _prepared(
                    store, list_name, row["request_id"], row["detail"], dates.get(row["request_id"])
                )
            except Exception as exc:  # one detail that cannot be read fails alone
                row["error"] = f"{type(exc).__name__}: {exc}"
    counted = session.unrecorded
    try:
        with store.batch():
            for row in fetched:
                ids = [None, *(session.record(exchange) for exchange in row["held"])]
                if row["prepared"] is not None:
                    try:
                        store.write_details([row["prepared"].called(ids[-1])])
                    except Exception as exc:
                        row["error"] = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # the transaction is lost, its calls with it
        error = f"{type(exc).__name__}: {exc}"
        lost = sum(len(row["held"]) for row in fetched) - (session.unrecorded - counted)
        session.lost(lost, error)  # those not counted already, as they failed
        for row in fetched:
            row["error"] = error
    return _outcomes(fetched)


def _outcomes(rows: Rows) -> Rows:
    """What ``fetch_all`` keeps of each row: its id and its error (not its document)."""
    return [{"request_id": row["request_id"], "error": row["error"]} for row in rows]


def _prepared(store: Store, list_name: str, item: str, detail: dict, listed: Any) -> PreparedDetail:
    """A detail parsed and laid out for the store (``listed``: its listed RequestDate); its
    validation, when ``WORKBENCH_PESC_SCHEMAS`` is set, reports and keeps nothing out."""
    value, fields = pescxml_of(detail)
    _, document, parse_error = parse_pescxml(value)
    validation: dict[str, Any] | None = (
        {"status": "invalid", "note": "not parsed"} if value else None
    )
    if document is not None:
        result = pesc.validate(document)
        validation = {"status": result.status, "schema": result.schema, "note": result.note,
                      "errors": [str(e) for e in result.errors[:20]]}  # fmt: skip
    return store.prepare_detail(
        list_name,
        item,
        request_date=fields.get("RequestDate", listed),
        listed_date=listed,
        pescxml=document.text if document else None,
        seen_at=datetime.now(UTC),
        detail=detail,
        flat=pesc.flatten(document) if document else None,
        children=pesc.records(document) if document else None,
        parse_error=parse_error,
        validation=validation,
    )
