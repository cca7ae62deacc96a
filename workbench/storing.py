"""A pull's fetched details parsed and stored, each with its calls in one transaction or not at
all, each call recorded once: by the pulling thread, or from the first list with
``PROCESS_FROM`` details to fetch by a process of its own for the rest of the pull. That CPU,
about 2 ms a detail, held the GIL against the fetching threads: ``bench/pull.py``'s first pull
was 1.28-1.44x the bare pool so, 1.12x with the process (which costs about 0.7 s of CPU to
start). It runs ``python -m workbench.storing``, not the caller's ``__main__`` again as
``multiprocessing`` would: an analyst's script rarely guards its pull.
"""

from __future__ import annotations

import itertools
import os
import queue
import signal
import subprocess
import sys
import threading
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
# Details queued for the process: the fetching waits beyond, so memory stays bounded (a detail
# and its calls are about 40 kB; 512 made a 20,000-detail pull's process 40 MB bigger).
QUEUED = 128
BATCH = 64  # details the process stores in one transaction at most
Rows = list[dict[str, Any]]
Key = tuple[str, str]  # (list name, request id)


class Storing:
    """Stores the rows a pull fetched (``request_id``, ``detail``, ``error``, ``held``: the
    exchanges that fetched it) with :meth:`send`; after the block, ``errors``: why each row sent
    was not stored (None: stored), by (list name, request id). ``calls``: the session's recorder
    that writes calls into ``store``; without it no process is started."""

    def __init__(
        self, session: Session, store: Store, *, run_id: int, calls: Recorder | None
    ) -> None:
        self.session, self.store, self.run_id, self.calls = session, store, run_id, calls
        self.errors: dict[Key, str | None] = {}
        self._held: dict[Key, int] = {}  # rows sent to the process: their exchanges
        self._child: subprocess.Popen[bytes] | None = None
        self._outgoing: queue.Queue[Any] = queue.Queue(QUEUED)

    def expect(self, details: int) -> None:
        """A list has ``details`` to fetch: start the process if that is worth it."""
        worth = self.calls is not None and details >= PROCESS_FROM and os.name == "posix"
        if not worth or self._child is not None or not sys.executable:
            return
        down, up = os.pipe(), os.pipe()  # (read, write): to the process, and back
        package = str(Path(__file__).resolve().parent.parent)  # this workbench, wherever
        path = os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p)
        self._child = subprocess.Popen(  # noqa: S603 - this interpreter, this module
            [sys.executable, "-m", "workbench.storing", str(down[0]), str(up[1]), str(os.getpid())],
            pass_fds=(down[0], up[1]),
            env={**os.environ, "PYTHONPATH": path},
            stdin=subprocess.DEVNULL,
        )
        os.close(down[0])
        os.close(up[1])
        self._down, self._up = (
            Connection(down[1], readable=False),
            Connection(up[0], writable=False),
        )
        self._down.send((self.store.reopener(), self.run_id))
        # A thread sends, so that a Ctrl-C never cuts a detail in half on the pipe.
        self._sender = threading.Thread(target=self._feed, name="workbench-storing", daemon=True)
        self._sender.start()

    def _feed(self) -> None:
        try:
            while (item := self._outgoing.get()) is not None:
                self._down.send(item)
            self._down.send(None)
        except OSError:  # the process ended: __exit__ says what it did not store
            pass

    def send(self, list_name: str, dates: dict[str, Any], rows: Rows) -> Rows:
        """Store ``rows`` of ``list_name`` (a batch of ``fetch_all``): queued for the process,
        or here (also once the process has ended: the rows it had then fail, and the next pull
        fetches them again)."""
        here = []
        for row in rows:
            key = (list_name, row["request_id"])
            if key in self._held or key in self.errors:  # given again after a Ctrl-C in here
                continue
            if self._child is None or not self._queue((*key, dates.get(key[1]), row)):
                here.append(row)
                continue
            self._held[key] = len(row["held"])
            for exchange in row["held"]:  # the caller's recorders see it here, the store there
                self.session.record(exchange, skip=self.calls)
        for row in store_fetched(self.session, self.store, list_name, dates, here) if here else ():
            self.errors[list_name, row["request_id"]] = row["error"]
        return _outcomes(rows)

    def _queue(self, item: Any) -> bool:
        """Whether ``item`` was queued for the process (not once it has ended)."""
        while self._sender.is_alive():
            try:
                self._outgoing.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def __enter__(self) -> Storing:
        return self

    def __exit__(self, *exc: object) -> None:
        """Wait until the process stored all it was sent (a second Ctrl-C stops it at once:
        its transaction under way is lost, calls included)."""
        if self._child is None:
            return
        answer: tuple[dict[Key, str | None], int, str, str | None] | None = None
        try:
            self._queue(None)
            self._sender.join()
            answer = self._up.recv()
        except EOFError:  # it ended without a word
            pass
        finally:
            if answer is None:
                self._child.kill()
            code = self._child.wait()
            self._down.close()
            self._up.close()
        errors, lost, why, crashed = answer or ({}, 0, "", f"exit code {code}")
        if lost:
            self.session.lost(lost, why)
        missing = [key for key in self._held if key not in errors]
        if crashed is not None and missing:  # what it stored is kept; the next pull fetches these
            error = f"StoreError: the pull's storing process failed ({crashed}); pull again"
            self.session.lost(sum(self._held[key] for key in missing), error)
            errors.update(dict.fromkeys(missing, error))
        self.errors.update(errors)


def main(argv: list[str]) -> None:
    """The storing process: reads (how to open the store, the run), then batches until None,
    and answers (errors by key, calls lost, why, None), or (..., what failed) when it fails."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the pull sends what it fetched
    _die_with(int(argv[3]))
    inbox, outbox = (
        Connection(int(argv[1]), writable=False),
        Connection(int(argv[2]), readable=False),
    )
    errors: dict[Key, str | None] = {}
    recorder = None
    try:
        reopen, run_id = inbox.recv()
        with reopen() as store:
            recorder = _Calls(store, run_id)
            items: list[Any] = []
            more = True
            while more:  # what has come, in one transaction a list: more when it falls behind
                while more and (not items or (len(items) < BATCH and inbox.poll())):
                    item = inbox.recv()
                    more = item is not None
                    items += [item] if more else []
                for list_name, group in itertools.groupby(items, key=lambda item: item[0]):
                    kept = list(group)
                    dates = {request_id: date for _, request_id, date, _ in kept}
                    rows = [row for *_, row in kept]
                    for row in store_fetched(recorder, store, list_name, dates, rows):
                        errors[list_name, row["request_id"]] = row["error"]
                items = []
        outbox.send((errors, recorder.unrecorded, recorder.why, None))
    except EOFError:  # the pull ended without a word (killed): what is stored stays
        return
    except BaseException as exc:  # said by the pull, masked, rather than a traceback here
        lost, why = (recorder.unrecorded, recorder.why) if recorder else (0, "")
        outbox.send((errors, lost, why, f"{type(exc).__name__}: {exc}"))
        sys.exit(1)


def _die_with(parent: int) -> None:
    """Be killed with the pull (Linux): a pull killed mid-way stores nothing more after it,
    so the next pull finds exactly what is missing. Elsewhere, the end of the pipe stops it."""
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # it died before that
        os._exit(1)


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


if __name__ == "__main__":
    main(sys.argv)
