"""The session: one ``httpx.Client`` per interface, with tokens, retries, errors and recording.

- Gateway roles (international, domestic) send ``Subscription-Key`` and ``Accept:
  application/json``; the exchange roles send the key only when one is configured.
- Retries follow :mod:`workbench.retries` (reads yes; a POST only if nothing was sent).
- Failures become :mod:`workbench.errors` through :mod:`workbench.status_errors`.
- Every HTTP exchange, token requests and retries included, goes to the recorders as an
  :class:`Exchange` with headers and bodies already redacted (:mod:`workbench.redact`).
- Every call has a deadline, retries and their waits included (``call_deadline``), enforced on
  every socket read and write, so an answer trickled byte by byte or header lines sent forever
  end at it; :meth:`Session.time_limit` bounds a whole pull (``pull_deadline``) the same way.
  Every answer is read decompressed up to ``max_answer_bytes``, never further, a layer at a
  time (:mod:`workbench.codings`), whatever the compression ratio. Both fail the
  call with a :class:`~workbench.errors.TransportError` that names the setting to raise.

Example::

    session = Session(load_profile())
    answer = session.call("supplier", "GET", SUPPLIER_PENDING_PATH, operation="supplier.pending")
    answer.value, answer.call_id  # the decoded JSON, and its id in the store (if recorded)
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpcore
import httpx

from workbench._version import __version__
from workbench.auth import BearerAuth, ClientCredentials, PasswordGrant, StaticToken, TokenCache
from workbench.codings import ACCEPT_ENCODING, AnswerTooLarge, Undecodable, read_capped
from workbench.config import Profile, RoleSettings
from workbench.errors import TransportError, UnreadableAnswer, WorkbenchError
from workbench.redact import Redactor, is_document, is_sent_document
from workbench.retries import NOT_SENT, RETRY_STATUSES, SAFE_METHODS, RetryableStatus, retrying
from workbench.spec import SUBSCRIPTION_KEY_HEADER
from workbench.status_errors import decoded, empty_or_raise, transport_failure
from workbench.terminal import printable

logger = logging.getLogger(__name__)

_EXT = "workbench"


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and its answer (or failure), redacted, as handed to recorders."""

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


# A recorder may return an id for what it stored (the store's call id); see Answer.call_id.
Recorder = Callable[[Exchange], Any]


@dataclass(frozen=True)
class Answer:
    """One call's decoded JSON (``None`` for an ``empty`` 400) and ``call_id``, what the
    recorders returned for its last exchange (``None`` if none did; a failure carries it)."""

    value: Any
    call_id: Any


@dataclass(frozen=True)
class _Deadline:
    """When a call must be over, and the setting that says so."""

    at: float  # time.monotonic()
    seconds: float
    setting: str

    def remaining(self) -> float:
        return self.at - time.monotonic()


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
        # Told the role of every call the partner answered as only it does (see call()).
        self.reached: list[Callable[[str], object]] = []
        self.tokens = TokenCache()
        self._transport = transport
        self._user_agent = f"workbench/{__version__}"
        self._lock = threading.Lock()
        # Exchanges a recorder could not store (disk full, ...), and the last reason; a pull
        # that lost any is partial.
        self.unrecorded = 0
        self.unrecorded_error: str | None = None
        self._local = threading.local()  # the deadline and call ids of this thread's call
        self._clients: dict[str, httpx.Client] = {}
        self._auths: dict[str, BearerAuth] = {}
        self._limit: _Deadline | None = None  # time_limit(): bounds every call, on any thread
        self.closed = False
        self._identity = self._new_client("identity", base_url="", headers={})

    # -- clients and credentials ------------------------------------------------------------

    def client(self, role: str) -> httpx.Client:
        """The client of one role (created on first use; ``ConfigError`` if not configured).

        After :meth:`close`, a ``WorkbenchError`` saying to connect again."""
        self.ensure_open()
        client = self._clients.get(role)
        if client is not None:  # the common case, without the lock
            return client
        with self._lock:
            if role not in self._clients:
                settings = self.profile.role(role)
                headers = {"Accept": "application/json"}
                if settings.subscription_key is not None:
                    headers[SUBSCRIPTION_KEY_HEADER] = settings.subscription_key.reveal()
                self._auths[role] = self._new_auth(settings)
                client = self._new_client(
                    role, base_url=settings.base_url or "", headers=headers, auth=self._auths[role]
                )
                self._clients[role] = client
            return self._clients[role]

    def ensure_open(self) -> None:
        """``WorkbenchError`` saying to connect again, once :meth:`close` has run."""
        if self.closed:
            raise _closed()

    def auth(self, role: str) -> BearerAuth:
        """The token provider of one role."""
        self.client(role)
        return self._auths[role]

    def _new_client(
        self,
        interface: str,
        *,
        base_url: str,
        headers: dict[str, str],
        auth: httpx.Auth | None = None,
    ) -> httpx.Client:
        p = self.profile
        size = max(10, 2 * p.concurrency)
        return httpx.Client(
            auth=auth,
            base_url=base_url,
            # Only what read_capped decodes under the cap (httpx adds br, zstd when installed).
            headers={"User-Agent": self._user_agent, "Accept-Encoding": ACCEPT_ENCODING, **headers},
            timeout=httpx.Timeout(p.read_timeout, connect=p.connect_timeout),
            transport=self._transport
            or _DeadlineTransport(
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                deadline=self._deadline,
            ),
            event_hooks={"request": [_stamp], "response": [self._on_response]},
        )

    def _new_auth(self, settings: RoleSettings) -> BearerAuth:
        if settings.grant == "static":
            assert settings.token is not None
            return StaticToken(role=settings.role, token=settings.token.reveal())
        assert settings.token_url is not None
        secret = settings.client_secret.reveal() if settings.client_secret else None
        client = [k for k in ("client_id", "client_secret") if getattr(settings, k) is not None]
        options: dict[str, Any] = {
            "role": settings.role,
            "token_url": settings.token_url,
            "client_id": settings.client_id,
            "client_secret": secret,
            "scope": settings.scope,
            "cache": self.tokens,
            "post_form": self.post_form,
            "margin": self.profile.token_margin,
            "lifetime": self.profile.token_lifetime,
            "hint": settings.where(*client)
            if client
            else f"the login address ({settings.token_url})",
            "on_token": self.redactor.add,
            "redact": self.redactor.text,
        }
        if settings.grant == "password":
            assert settings.username is not None and settings.password is not None
            return PasswordGrant(
                username=settings.username,
                password=settings.password.reveal(),
                fields="etms" if settings.login == "etms" else "oauth",
                user_hint=settings.where("username", "password"),
                **options,
            )
        return ClientCredentials(**options)

    # -- calls --------------------------------------------------------------------------------

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
        """Send one partner operation: its :class:`Answer`. A failure raises, its ``call_id``
        set as the answer's would be.

        ``empty`` lists the 400 messages that mean "nothing to list" (spec §7); ``subject``
        names what the call is about in error messages ("transcript request 'X'").
        ``reached`` is told the role once the answer proves the partner is at that address:
        a 2xx with JSON, or one of the ``empty`` 400s; any web server answers a 401, a 404 or
        an HTML page, so none of those does (nor a token from the identity server).
        """
        # What the recorders return for this call's exchanges, its token requests included.
        call_ids: list[Any] = [None]
        self._local.call_ids = call_ids
        try:
            client = self.client(role)
            response = self._send(
                client, role, method, path, operation=operation, params=params, json=json
            )
            value = None  # what an ``empty`` 400 answers
            if response.is_success:
                value = decoded(response, redactor=self.redactor, role=role, operation=operation)
            else:
                empty_or_raise(
                    response,
                    profile=self.profile,
                    redactor=self.redactor,
                    role=role,
                    operation=operation,
                    empty=empty,
                    subject=subject,
                )
        except WorkbenchError as exc:
            exc.call_id = call_ids[-1]
            raise
        finally:
            self._local.call_ids = None
        for listener in self.reached:
            listener(role)
        return Answer(value, call_ids[-1])

    def post_form(self, url: str, form: dict[str, str]) -> httpx.Response:
        """POST a form to the identity server (token requests; safe to retry: nothing changes)."""
        return self._send(
            self._identity, "identity", "POST", url, operation="token", data=form, retry_unsafe=True
        )

    @contextmanager
    def time_limit(self, seconds: float, *, setting: str) -> Iterator[None]:
        """Every call inside the block, on any thread, ends ``seconds`` from now at the latest;
        one that cannot fails with a ``TransportError`` naming ``setting``."""
        previous = self._limit
        limit = _Deadline(time.monotonic() + seconds, seconds, setting)
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
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        retry_unsafe: bool = False,
    ) -> httpx.Response:
        idempotent = method in SAFE_METHODS or retry_unsafe
        attempt_number = 0
        policy = retrying(
            self.profile, idempotent=idempotent, operation=operation, remaining=self._remaining
        )
        # This call's deadline; a call made inside it (a token fetch) keeps the earlier one.
        outer = self._deadline()
        seconds = self.profile.call_deadline
        deadline = _Deadline(time.monotonic() + seconds, seconds, "WORKBENCH_CALL_DEADLINE")
        for other in (outer, self._limit):
            if other is not None and other.at < deadline.at:
                deadline = other
        if deadline.remaining() <= 0:
            raise self._past_deadline(
                deadline, client, interface, operation, method, url, sent=False
            )
        self._local.deadline = deadline
        try:
            for attempt in policy:
                with attempt:
                    attempt_number = attempt.retry_state.attempt_number
                    meta = {
                        "interface": interface,
                        "operation": operation,
                        "attempt": attempt_number,
                    }
                    request = client.build_request(
                        method, url, params=params, json=json, data=data, extensions={_EXT: meta}
                    )
                    try:
                        # Streamed: _on_response reads the body, under the size cap.
                        response = client.send(request, stream=True)
                    except RuntimeError as exc:  # httpx's "client has been closed"
                        if self.closed:
                            raise _closed() from exc
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
            if deadline.remaining() <= 0:
                sent = not isinstance(exc, NOT_SENT)
                raise self._past_deadline(
                    deadline, client, interface, operation, method, url, sent=sent
                ) from exc
            raise transport_failure(
                exc,
                redactor=self.redactor,
                interface=interface,
                operation=operation,
                attempts=attempt_number,
                retry_unsafe=retry_unsafe,
            ) from exc
        finally:
            self._local.deadline = outer
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    # -- limits -------------------------------------------------------------------------

    def _deadline(self) -> _Deadline | None:
        """The deadline of the call running on this thread, if any."""
        return getattr(self._local, "deadline", None)

    def _remaining(self) -> float:
        """Seconds left to the call running on this thread (infinite outside a call)."""
        deadline = self._deadline()
        return math.inf if deadline is None else deadline.remaining()

    def _past_deadline(
        self,
        deadline: _Deadline,
        client: httpx.Client,
        interface: str,
        operation: str,
        method: str,
        url: str,
        *,
        sent: bool,
    ) -> TransportError:
        what = "this call" if deadline.setting == "WORKBENCH_CALL_DEADLINE" else "the pull"
        message = (
            f"{operation}: no complete answer from the {interface} interface at "
            f"{self.redactor.url(str(client.build_request(method, url).url))} within the "
            f"{deadline.seconds:g} s allowed for {what} "
            f"({deadline.setting}), retries included; it was given up."
        )
        if method not in SAFE_METHODS and sent:
            message += (
                " The partner may or may not have processed the send: it was not resent. "
                "Check the pending list before sending again."
            )
        else:
            message += f" Try again later, or raise {deadline.setting} if the partner is slow."
        return TransportError(message, may_have_reached=method not in SAFE_METHODS and sent)

    def _too_large(self, request: httpx.Request) -> TransportError:
        meta = request.extensions.get(_EXT, {})
        limit = self.profile.max_answer_bytes
        message = (
            f"{meta.get('operation', '?')}: the answer of the {meta.get('interface', '?')} "
            f"interface at {self.redactor.url(str(request.url))} is larger than {limit} bytes "
            "once decompressed (WORKBENCH_MAX_ANSWER_BYTES); it was not read further. Raise "
            "WORKBENCH_MAX_ANSWER_BYTES if answers that large are expected."
        )
        unsafe = request.method not in SAFE_METHODS
        if unsafe:
            message += " The send reached the partner: check the pending list before resending."
        return TransportError(message, may_have_reached=unsafe)

    # -- recording ------------------------------------------------------------------

    def _on_response(self, response: httpx.Response) -> None:
        """Read the answer, decompressed layer by layer up to ``max_answer_bytes``
        (:mod:`workbench.codings`); then record it.

        A body that does not match its ``Content-Encoding`` reads as empty: a 2xx then fails
        with ``UnreadableAnswer`` (for a send: taken), any other status speaks for itself.
        """
        codings = response.headers.get_list("content-encoding", split_commas=True)
        undecodable: UnreadableAnswer | None = None
        try:
            body = read_capped(response.iter_raw(), codings, limit=self.profile.max_answer_bytes)
        except AnswerTooLarge:
            error = self._too_large(response.request)
            self._record(response.request, response, error=str(error), body=b"")
            raise error from None
        except Undecodable as exc:
            body, undecodable = b"", self._undecodable(response, exc)
        # What Response.read() does (the hook cannot hand back another response: the auth
        # flow reads this one), from the body read under the cap.
        response._content = body
        self._record(response.request, response, error=str(undecodable) if undecodable else None)
        if undecodable is not None and response.is_success:
            raise undecodable

    def _undecodable(self, response: httpx.Response, exc: Undecodable) -> UnreadableAnswer:
        meta = response.request.extensions.get(_EXT, {})
        status = response.status_code
        return UnreadableAnswer(
            f"{meta.get('operation', '?')}: the {meta.get('interface', '?')} interface answered "
            f"{status} with a body that cannot be decoded as its Content-Encoding says "
            f"({self.redactor.text(str(exc))}). Nothing was read from it; report it to the "
            "partner if it persists.",
            status=status,
            body="",
        )

    def _record(
        self,
        request: httpx.Request,
        response: httpx.Response | None,
        *,
        error: str | None = None,
        body: bytes | None = None,
    ) -> None:
        if not self.recorders:
            return
        meta = request.extensions.get(_EXT, {})
        r = self.redactor
        interface = meta.get("interface", "?")
        status = response.status_code if response is not None else None
        # A login carries our credentials both ways; an error answer may echo them. A 2xx
        # answer, and a document we send, are recorded as written (redact.is_document).
        sent = is_sent_document(interface, request.method)
        answered = is_document(interface, status)
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
            response_headers=r.headers(response.headers.multi_items(), document=answered)
            if response is not None
            else {},
            response_body=r.body(
                response.content if body is None else body,
                response.headers.get("content-type"),
                document=answered,
            )
            if response is not None
            else "",
            error=r.text(error) if error else None,
        )
        call_ids = getattr(self._local, "call_ids", None)
        for recorder in self.recorders:
            try:
                call_id = recorder(exchange)
                if call_id is not None and call_ids is not None:
                    call_ids.append(call_id)
            except Exception as exc:
                # One line per lost record, no traceback: a full disk fails every call alike.
                reason = printable(r.text(f"{type(exc).__name__}: {exc}"))
                with self._lock:
                    self.unrecorded += 1
                    self.unrecorded_error = reason
                logger.error(
                    "%s %s was not recorded: %s", exchange.method, printable(exchange.url), reason
                )


def _closed() -> WorkbenchError:
    return WorkbenchError(
        "This workbench is closed (w.close(), or the end of its `with` block), so it makes no "
        "more calls. Connect again: w = workbench.connect(...)."
    )


def _stamp(request: httpx.Request) -> None:
    meta = request.extensions.setdefault(_EXT, {})
    meta["t0"] = time.perf_counter()
    meta["started_at"] = datetime.now(UTC)


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport, over sockets whose every wait ends at the call's deadline.

    The read timeout bounds one read; only this bounds a whole answer, headers included.
    """

    def __init__(self, *, limits: httpx.Limits, deadline: Callable[[], _Deadline | None]) -> None:
        super().__init__(limits=limits)
        # httpx takes no network backend; its pool (httpcore's public API) does.
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(deadline),
        )


class _DeadlineBackend(httpcore.SyncBackend):
    def __init__(self, deadline: Callable[[], _Deadline | None]) -> None:
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        timeout = _clamp(self._deadline(), timeout, httpcore.ConnectTimeout)
        stream = super().connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(
        self, stream: httpcore.NetworkStream, deadline: Callable[[], _Deadline | None]
    ) -> None:
        self._stream, self._deadline = stream, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _clamp(self._deadline(), timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _clamp(self._deadline(), timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        timeout = _clamp(self._deadline(), timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._stream.start_tls(ssl_context, server_hostname, timeout), self._deadline
        )

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


def _clamp(
    deadline: _Deadline | None, timeout: float | None, timed_out: type[Exception]
) -> float | None:
    """``timeout`` shortened to what is left of ``deadline``; ``timed_out`` when nothing is."""
    if deadline is None:
        return timeout
    left = deadline.remaining()
    if left <= 0:
        raise timed_out(f"past the call's deadline ({deadline.setting})")
    return left if timeout is None else min(timeout, left)
