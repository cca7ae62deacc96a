"""The session: one ``httpx.Client`` per interface, with tokens, retries, limits and recording.

Every HTTP exchange, token requests and retries included, goes to the recorders masked."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from workbench._version import __version__
from workbench.config import Profile
from workbench.errors import TransportError, UnreadableAnswer, WorkbenchError
from workbench.http.answers import answer_value
from workbench.http.auth import BearerAuth, TokenCache
from workbench.http.limits import (
    ACCEPT_ENCODING,
    NOT_SENT,
    RETRY_STATUSES,
    SAFE_METHODS,
    SENT_HEADERS,
    TOO_LARGE,
    UNDECODABLE,
    Deadline,
    RetryableStatus,
    Transport,
    retrying,
)
from workbench.http.masking import Redactor, is_document, is_sent_document, printable
from workbench.spec import SUBSCRIPTION_KEY_HEADER

logger = logging.getLogger(__name__)
_EXT = "workbench"  # the request extension holding what recording needs
CALL_DEADLINE = "WORKBENCH_CALL_DEADLINE"
MAYBE_REACHED = (
    "The partner may or may not have processed the send: it was not resent. Check the pending "
    "list before sending again."
)


@dataclass(frozen=True)
class Exchange:
    interface: str
    operation: str
    method: str
    url: str
    attempt: int
    started_at: datetime
    duration_s: float
    status: int | None
    request_headers: Mapping[str, str]
    request_body: str
    response_headers: Mapping[str, str]
    response_body: str
    error: str | None = None


Recorder = Callable[[Exchange], Any]  # may return an id for what it stored (Answer.call_id)


@dataclass(frozen=True)
class Answer:
    value: Any
    call_id: Any


class Session:
    """HTTP for every interface of one profile. Thread-safe; close it when done."""

    def __init__(
        self,
        profile: Profile,
        *,
        recorder: Recorder | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.profile = profile
        self.redactor = Redactor(profile.secrets())
        self.recorders: list[Recorder] = [recorder] if recorder else []
        self.reached: list[Callable[[str], object]] = []
        self.tokens = TokenCache()
        # Exchanges a recorder could not store (disk full...): a pull that lost any is partial.
        self.unrecorded = 0
        self.unrecorded_error: str | None = None
        self.closed = False
        self._transport = transport
        self._lock = threading.Lock()
        self._local = threading.local()  # this thread's call: its deadline and call ids
        self._limit: Deadline | None = None  # time_limit(): bounds every call, on any thread
        self._clients: dict[str, httpx.Client] = {}
        self._auths: dict[str, BearerAuth] = {}
        self._identity = self._new_client(base_url="", headers={})

    def client(self, role: str) -> httpx.Client:
        """The client of one role (``ConfigError`` if not configured)."""
        self.ensure_open()
        with self._lock:
            if role not in self._clients:
                settings = self.profile.role(role)
                headers = {"Accept": "application/json"}
                if settings.subscription_key is not None:
                    headers[SUBSCRIPTION_KEY_HEADER] = settings.subscription_key.reveal()
                self._auths[role] = auth = BearerAuth(
                    settings,
                    cache=self.tokens,
                    post_form=self.post_form,
                    margin=self.profile.token_margin,
                    lifetime=self.profile.token_lifetime,
                    on_token=self.redactor.add,
                    redact=self.redactor.text,
                )
                self._clients[role] = self._new_client(
                    base_url=settings.base_url or "", headers=headers, auth=auth
                )
            return self._clients[role]

    def ensure_open(self) -> None:
        if self.closed:
            raise WorkbenchError(
                "This workbench is closed (w.close(), or the end of its `with` block), so it "
                "makes no more calls. Connect again: w = workbench.connect(...)."
            )

    def auth(self, role: str) -> BearerAuth:
        """The token provider of one role."""
        self.client(role)
        return self._auths[role]

    def _new_client(
        self, *, base_url: str, headers: dict[str, str], auth: httpx.Auth | None = None
    ) -> httpx.Client:
        p = self.profile
        transport = self._transport or Transport(
            connections=max(10, 2 * p.concurrency),
            max_bytes=p.max_answer_bytes,
            deadline=self._deadline,
        )
        return httpx.Client(
            auth=auth,
            base_url=base_url,
            headers={
                "User-Agent": f"workbench/{__version__}",
                "Accept-Encoding": ACCEPT_ENCODING,
                **headers,
            },
            timeout=httpx.Timeout(p.read_timeout, connect=p.connect_timeout),
            transport=transport,
            event_hooks={"request": [_stamp], "response": [self._on_response]},
        )

    def call(
        self,
        role: str,
        method: str,
        path: str,
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        empty: Collection[str] = (),
        subject: str | None = None,
    ) -> Answer:
        """One partner operation's :class:`Answer`, or its typed error. ``empty``: the 400
        messages meaning "nothing to list" (spec §7). ``reached`` hears of a 2xx with JSON or an
        ``empty`` 400: only the partner answers so (any web server answers a 401 or a 404)."""
        call_ids: list[Any] = [None]  # what the recorders return, token requests included
        self._local.call_ids = call_ids
        try:
            response = self._send(
                self.client(role), role, method, path, operation=operation, params=params, json=json
            )
            value = answer_value(response, self.profile, self.redactor, role, operation,
                                 empty=empty, subject=subject)  # fmt: skip
        except WorkbenchError as exc:
            exc.call_id = call_ids[-1]
            raise
        finally:
            self._local.call_ids = None
        for listener in self.reached:
            listener(role)
        return Answer(value, call_ids[-1])

    def post_form(self, url: str, form: dict[str, str]) -> httpx.Response:
        """POST a form to a login (safe to retry: it changes nothing)."""
        return self._send(
            self._identity, "identity", "POST", url, operation="token", data=form, retry_unsafe=True
        )

    @contextmanager
    def time_limit(self, seconds: float, *, setting: str) -> Iterator[None]:
        """Every call inside the block, on any thread, ends ``seconds`` from now (``setting``)."""
        previous = self._limit
        limit = Deadline(time.monotonic() + seconds, seconds, setting)
        self._limit = limit if previous is None or limit.at < previous.at else previous
        try:
            yield
        finally:
            self._limit = previous

    def close(self) -> None:
        """Close every client; calls made afterwards raise ``WorkbenchError``."""
        with self._lock:
            self.closed = True
            for client in (*self._clients.values(), self._identity):
                client.close()

    def _send(
        self,
        client: httpx.Client,
        interface: str,
        method: str,
        url: str,
        *,
        operation: str,
        retry_unsafe: bool = False,
        **content: Any,
    ) -> httpx.Response:
        """Send with retries (reads, a POST nothing of which was sent) within the deadline."""
        idempotent = method in SAFE_METHODS or retry_unsafe
        outer = self._deadline()  # a call made inside another (a token fetch) keeps its deadline
        seconds = self.profile.call_deadline
        deadline = Deadline(time.monotonic() + seconds, seconds, CALL_DEADLINE)
        for other in (outer, self._limit):
            if other is not None and other.at < deadline.at:
                deadline = other
        self._local.deadline = deadline
        try:
            for attempt_state in retrying(self.profile, idempotent, deadline):
                with attempt_state:
                    attempt = attempt_state.retry_state.attempt_number
                    meta = {"interface": interface, "operation": operation, "attempt": attempt}
                    request = client.build_request(method, url, extensions={_EXT: meta}, **content)
                    if deadline.remaining() <= 0:
                        raise self._failure(request, None, deadline)
                    try:
                        response = client.send(request)
                    except RuntimeError:  # httpx's "client has been closed"
                        self.ensure_open()
                        raise
                    except httpx.TransportError as exc:
                        self._record(request, None, error=f"{type(exc).__name__}: {exc}")
                        raise
                    if idempotent and response.status_code in RETRY_STATUSES:
                        raise RetryableStatus(response)
                    return response
        except RetryableStatus as exc:
            return exc.response
        except httpx.TransportError as exc:
            raise self._failure(request, exc, deadline) from exc
        finally:
            self._local.deadline = outer
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    def _failure(
        self, request: httpx.Request, exc: httpx.TransportError | None, deadline: Deadline
    ) -> TransportError:
        """The error of a network failure or a passed deadline: may a send have reached them?"""
        meta = request.extensions[_EXT]
        operation, interface = meta["operation"], meta["interface"]
        where = self.redactor.url(str(request.url))
        reached = exc is not None and not isinstance(exc, NOT_SENT) and _changes(request)
        if deadline.remaining() <= 0:
            scope = "this call" if deadline.setting == CALL_DEADLINE else "the pull"
            advice = f"Try again later, or raise {deadline.setting} if the partner is slow."
            message = (
                f"{operation}: no complete answer from the {interface} interface at "
                f"{where} within the {deadline.seconds:g} s allowed for {scope} "
                f"({deadline.setting}), retries included; it was given up. "
                + (MAYBE_REACHED if reached else advice)
            )
            return TransportError(message, may_have_reached=reached)
        assert exc is not None
        what = f"{type(exc).__name__}: {self.redactor.text(str(exc)) or 'no detail'}"
        if reached:
            message = (
                f"{operation}: the connection to {where} failed after the request was sent "
                f"({what}). {MAYBE_REACHED}"
            )
        else:
            message = (
                f"{operation}: could not reach the {interface} interface at {where} after "
                f"{meta['attempt']} attempt(s) ({what}). Check the network and the base URL "
                "settings."
            )
        return TransportError(message, may_have_reached=reached)

    def _deadline(self) -> Deadline | None:
        """The deadline of the call running on this thread, if any."""
        return getattr(self._local, "deadline", None)

    def _on_response(self, response: httpx.Response) -> None:
        """Record the answer; fail one over the size cap, or a 2xx that cannot be decoded."""
        request = response.request
        meta = request.extensions.get(_EXT, {})
        what = f"{meta.get('operation', '?')}: the {meta.get('interface', '?')} interface"
        error: WorkbenchError | None = None
        if response.extensions.get(TOO_LARGE):
            reached = _changes(request)
            error = TransportError(
                f"{what} at {self.redactor.url(str(request.url))} answered more than "
                f"{self.profile.max_answer_bytes} bytes once decompressed "
                "(WORKBENCH_MAX_ANSWER_BYTES); it was not read further. Raise "
                "WORKBENCH_MAX_ANSWER_BYTES if answers that large are expected."
                + (" The send reached the partner: check the pending list before resending."
                   if reached else ""),
                may_have_reached=reached,
            )  # fmt: skip
        elif UNDECODABLE in response.extensions:
            said = self.redactor.text(response.extensions[UNDECODABLE])
            error = UnreadableAnswer(
                f"{what} answered {response.status_code} with a body that cannot be decoded as "
                f"its Content-Encoding says ({said}). Nothing was read from it; report it to the "
                "partner if it persists.",
                status=response.status_code,
                body="",
            )
        self._record(request, response, error=str(error) if error else None)
        if isinstance(error, TransportError) or (error is not None and response.is_success):
            raise error

    def _record(
        self, request: httpx.Request, response: httpx.Response | None, *, error: str | None = None
    ) -> None:
        if not self.recorders:
            return
        meta, r = request.extensions.get(_EXT, {}), self.redactor
        interface = meta.get("interface", "?")
        status = response.status_code if response is not None else None
        # A 2xx answer and a document we send are kept as written; the rest is masked by value.
        answered = is_document(interface, status)
        answer_headers: Any = ()
        answer_body, answer_type = b"", None
        if response is not None:
            answer_headers = response.extensions.get(SENT_HEADERS) or response.headers.multi_items()
            answer_body, answer_type = response.content, response.headers.get("content-type")
        sent = is_sent_document(interface, request.method)
        exchange = Exchange(
            interface=interface,
            operation=meta.get("operation", "?"),
            method=request.method,
            url=r.url(str(request.url)),
            attempt=meta.get("attempt", 1),
            started_at=meta.get("started_at", datetime.now(UTC)),
            duration_s=time.perf_counter() - meta.get("t0", time.perf_counter()),
            status=status,
            request_headers=r.headers(request.headers.multi_items()),
            request_body=r.body(
                request.content, request.headers.get("content-type"), document=sent
            ),
            response_headers=r.headers(answer_headers, document=answered),
            response_body=r.body(answer_body, answer_type, document=answered),
            error=r.text(error) if error else None,
        )
        held = getattr(self._local, "held", None)
        call_id = held.append(exchange) if held is not None else self.record(exchange)
        call_ids = getattr(self._local, "call_ids", None)
        if call_id is not None and call_ids is not None:
            call_ids.append(call_id)

    @contextmanager
    def holding(self) -> Iterator[list[Exchange]]:
        """This thread's exchanges in the block, kept for :meth:`record` (``call_id``: None)."""
        self._local.held = held = list[Exchange]()
        try:
            yield held
        finally:
            self._local.held = None

    def lost(self, count: int, why: str) -> str:
        """Count ``count`` exchanges the store did not keep (a pull that lost any is partial);
        ``why``, masked and printable."""
        reason = printable(self.redactor.text(why))
        with self._lock:
            self.unrecorded, self.unrecorded_error = self.unrecorded + count, reason
        return reason

    def record(self, exchange: Exchange, *, skip: Recorder | None = None) -> Any:
        """Give ``exchange`` to the recorders but ``skip``; the id the last one returned."""
        call_id = None
        for recorder in self.recorders:
            if recorder == skip:  # a bound method is a new object at each reading
                continue
            try:
                found = recorder(exchange)
            except Exception as exc:
                # One line per lost record, no traceback: a full disk fails every call alike.
                reason = self.lost(1, f"{type(exc).__name__}: {exc}")
                logger.error(
                    "%s %s was not recorded: %s", exchange.method, printable(exchange.url), reason
                )
                continue
            call_id = call_id if found is None else found
        return call_id


def _stamp(request: httpx.Request) -> None:
    meta = request.extensions.setdefault(_EXT, {})
    meta["t0"], meta["started_at"] = time.perf_counter(), datetime.now(UTC)


def _changes(request: httpx.Request) -> bool:
    """Whether ``request`` may change something at the partner: a send, never a read or a
    login (a timed-out login must not tell the user to check for a send)."""
    meta = request.extensions.get(_EXT, {})
    return request.method not in SAFE_METHODS and meta.get("interface") != "identity"
