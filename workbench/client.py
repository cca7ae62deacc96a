"""``connect()`` and the :class:`Workbench` it returns: every partner operation as a DataFrame.

>>> with wb.connect() as w:          # nothing configured: the embedded sandbox  # doctest: +SKIP
...     w.supplier.requests(w.supplier.pending_requests())
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import httpx
import pandas as pd

from workbench.api import gateway
from workbench.api.exchange import Consumer, Supplier
from workbench.config import ROLES, Profile, load_profile, with_overrides
from workbench.errors import ConfigError, InvalidParameter, WorkbenchError
from workbench.http.masking import printable
from workbench.http.session import Exchange, Recorder, Session

if TYPE_CHECKING:
    from workbench.pull import PullSummary
    from workbench.sandbox import Sandbox, SandboxSettings
    from workbench.store import Store

CLOSED = (
    "This workbench is closed (w.close(), or the end of its `with` block), so its store is "
    "too. Connect again: w = workbench.connect(...)."
)
MAX_READ_PATH = 2048  # the longest path `read` sends: partners' servers refuse longer URLs


class Workbench:
    """A connection to the partner under one profile (``w.supplier``, ``w.consumer``, the
    gateway's operations); close it, or use ``with``."""

    def __init__(
        self,
        profile: Profile,
        *,
        session: Session,
        sandbox: Sandbox | None = None,
        record: bool = True,
    ) -> None:
        self.profile, self.session, self.sandbox = profile, session, sandbox
        self._recording = _Recording(profile, opens=record)  # not self: the finalizer must run
        session.recorders.append(self._recording.record)
        session.reached.append(self._recording.reached)  # binds the store to its partner
        self.supplier = Supplier(session, store=self._sending_store)
        self.consumer = Consumer(session, store=self._sending_store)
        # Closes the clients and the store, and stops an embedded sandbox, even when close()
        # is never called (a notebook cell re-run replaces `w`).
        self._finalizer = weakref.finalize(self, _shutdown, session, sandbox, self._recording)

    @property
    def db(self) -> str:
        """Where the snapshot store lives (``WORKBENCH_DB``, or ``connect(db=...)``)."""
        return self.profile.db

    @property
    def store(self) -> Store:
        """The snapshot store at ``w.db``, opened on first use, recording every call and send.

        A store holding another partner's data opens for reading only: nothing is recorded in
        it, and a pull or a send raises ``ConfigError`` (``workbench store repoint``)."""
        return self._recording.open()

    def writable_store(self) -> Store:
        """The store, for a pull or a send: ``ConfigError`` when it holds another partner's."""
        store = self.store
        if self._recording.refusal is not None:
            raise ConfigError(self._recording.refusal)
        return store

    def pull(self, *, progress: bool | None = None, lock_timeout_s: float = 60.0) -> PullSummary:
        """Store every list and every missing detail (:func:`workbench.pull.pull`)."""
        from workbench.pull import pull

        self.profile.check_interfaces()  # before any file is created
        store = self.writable_store()  # refuses another partner's store, writing nothing
        return pull(self.session, store, run=self.run, progress=progress,
                    lock_timeout_s=lock_timeout_s, calls=self._recording.record)  # fmt: skip

    @contextmanager
    def run(self, run_id: int) -> Iterator[None]:
        """Attribute the calls made inside the block to the store's run ``run_id``."""
        self.store  # noqa: B018 - open it, so the calls are recorded at all
        previous, self._recording.run_id = self._recording.run_id, run_id
        try:
            yield
        finally:
            self._recording.run_id = previous

    def _sending_store(self) -> Store:
        # A send binds the store to its partner, whose lists alone may settle it.
        store = self.writable_store()
        self._recording.bind("exchange")
        return store

    def diagnostics(self) -> pd.DataFrame:
        """Who the partner thinks we are: name, customer_code, roles (one row)."""
        return gateway.diagnostics(self.session)

    def pending_placement_events(self) -> pd.DataFrame:
        """International interface: pending placement events, flattened, ``raw`` JSON kept."""
        return gateway.pending_placement_events(self.session)

    def peek_events(self, count: int | None = 10) -> pd.DataFrame:
        """Domestic interface: up to ``count`` events, without removing them."""
        return gateway.peek_events(self.session, count)

    def read(self, role: str, path: str, *, params: Mapping[str, str] | None = None) -> Any:
        """The decoded JSON of an ad hoc GET of ``path`` below the role's base URL.

        >>> w.read("supplier", "/api/transcriptrequests/no_response")  # doctest: +SKIP
        """
        if role not in ROLES:
            raise InvalidParameter(
                f"{role!r} is not a role; use one of {', '.join(ROLES)}.", parameter="role"
            )
        parts = urlsplit(path)
        segments = unquote(parts.path).split("/")
        bad = (
            not path.startswith("/")
            or path.startswith("//")  # a scheme, a host or a fragment cannot follow one slash
            or "#" in path
            or ".." in segments
            or "." in segments
            or len(path) > MAX_READ_PATH
            or any(not " " < c <= "~" for c in path)  # printable ASCII: percent-encode the rest
        )
        if bad:
            raise InvalidParameter(
                f"{printable(path[:200])!r} is not a path below the {role} interface's base URL: "
                "write it from its first slash, such as /api/transcriptrequests/no_response "
                f"(printable ASCII, percent-encoded, at most {MAX_READ_PATH} characters, no "
                "'..' nor '#').",
                parameter="path",
            )
        return self.session.call(role, "GET", path, operation="read", params=params).value

    def close(self) -> None:
        """Close the HTTP clients and the store, and stop an embedded sandbox; safe twice."""
        self._finalizer()

    def __enter__(self) -> Workbench:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f" at {self.sandbox.root_url}" if self.sandbox is not None else ""
        state = " closed" if not self._finalizer.alive else ""
        return f"<Workbench profile={self.profile.name!r} ({self.profile.origin}{where}){state}>"


def connect(
    profile: str | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    recorder: Recorder | None = None,
    transport: httpx.BaseTransport | None = None,
    sandbox: SandboxSettings | None = None,
    record: bool = True,
    **settings: Any,
) -> Workbench:
    """Open a :class:`Workbench` on a profile (:mod:`workbench.config`).

    ``env`` replaces ``os.environ``; ``settings`` override tuning (``concurrency=16``);
    ``sandbox``: the embedded sandbox's settings; ``recorder`` receives every exchange;
    ``record=False`` records only once :attr:`Workbench.store` is used (no file otherwise).

    >>> w = connect("prod", db="data/prod.db", read_only=True)  # doctest: +SKIP
    """
    resolved = load_profile(profile, env=env, config_path=config_path)
    running = None
    if resolved.is_sandbox:
        from workbench.sandbox import Sandbox, SandboxSettings

        running = Sandbox(sandbox or SandboxSettings()).start()
    try:
        if running is not None:
            resolved = load_profile(
                resolved.name, env=env, config_path=config_path, sandbox_env=running.env
            )
        resolved = with_overrides(resolved, **settings) if settings else resolved
        resolved = replace(resolved, db=os.fspath(db)) if db is not None else resolved
        session = Session(resolved, recorder=recorder, transport=transport)
    except BaseException:
        if running is not None:
            running.stop()
        raise
    return Workbench(resolved, session=session, sandbox=running, record=record)


class _Recording:
    """The store a workbench records in (opened at its first call), and its calls' run."""

    def __init__(self, profile: Profile, *, opens: bool) -> None:
        self.profile, self.opens = profile, opens  # opens: whether the first exchange opens it
        self.lock = threading.Lock()
        self.store: Store | None = None
        self.run_id: int | None = None
        self.refusal: str | None = None  # why nothing is recorded: another partner's, or newer
        self.bound: set[str] = set()  # the sides (gateway, exchange) known to be recorded
        self.closed = False

    def open(self) -> Store:
        with self.lock:
            if self.closed:
                raise WorkbenchError(CLOSED)
            if self.store is None:
                self.store = self._opened()
            return self.store

    def _opened(self) -> Store:
        from workbench.store import Store
        from workbench.store.identity import check_partner, stored_partner
        from workbench.store.migrations import NewerStore

        db, secrets = self.profile.db, self.profile.secrets()
        try:
            check_partner(db, stored_partner(db), self.profile.identity())
        except ConfigError as exc:
            self.refusal = str(exc)
            return Store(db, secrets=secrets, read_only=True)
        Path(db).parent.mkdir(parents=True, exist_ok=True)
        try:
            return Store(db, secrets=secrets)
        except NewerStore as exc:  # never writable by this workbench; a lock or a disk may clear
            self.refusal = str(exc)
            raise

    def reached(self, role: str) -> None:
        """A call of ``role`` reached the partner (:meth:`Session.call`): bind its side."""
        from workbench.store.identity import side_of

        self.bind(side_of(role))

    def bind(self, side: str) -> None:
        """Record the partner of ``side`` (gateway, exchange) in the open store, once."""
        from workbench.store.identity import side_identity

        with self.lock:  # a record=False workbench binds once its store is used
            if side in self.bound or self.store is None or self.refusal is not None:
                return
            claim = side_identity(self.profile.identity(), side)
            if not all(self.store.meta(k) == v for k, v in claim.items() if v):
                try:
                    self.store.claim_partner(claim)  # re-checked in its write transaction
                except ConfigError as exc:
                    self.refusal = str(exc)
                    raise
            self.bound.add(side)

    def record(self, exchange: Exchange) -> int | None:
        """Store one exchange: its call id (None: not recorded)."""
        if self.closed or (self.store is None and not self.opens) or self.refusal is not None:
            return None
        store = self.store if self.store is not None else self.open()
        return None if self.refusal is not None else store.record_call(exchange, run_id=self.run_id)

    def close(self) -> None:
        with self.lock:
            self.closed = True
            if self.store is not None:
                self.store.close()


def _shutdown(session: Session, sandbox: Sandbox | None, recording: _Recording) -> None:
    session.close()
    recording.close()
    if sandbox is not None:
        sandbox.stop()
