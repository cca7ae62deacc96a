"""What an answer may cost: a deadline per call, a size cap per answer, retries within them."""

from __future__ import annotations

import email.utils
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpcore
import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential, wait_random

ACCEPT_ENCODING = "gzip, deflate"  # only what read_capped decodes under the cap
MAX_LAYERS = 2  # compressing layers; more is no use to anyone but an attacker
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Failures that prove the request never left: safe to retry even for a POST.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Response extensions: over the cap, undecodable (why), and the headers as the partner sent them.
TOO_LARGE, UNDECODABLE, SENT_HEADERS = "wb.too_large", "wb.undecodable", "wb.headers"
_STEP = 64 * 1024
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}
_CORE_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
                httpcore.ProxyError, httpcore.UnsupportedProtocol)  # fmt: skip


@dataclass(frozen=True)
class Deadline:
    at: float  # time.monotonic()
    seconds: float
    setting: str

    def remaining(self) -> float:
        return self.at - time.monotonic()


Clock = Callable[[], Deadline | None]  # the deadline of the call running on this thread


class Transport(httpx.BaseTransport):
    """httpcore's pool whose every connect, read and write ends at the call's deadline (header
    lines trickled forever), each answer decoded 64 KiB at a time up to ``max_bytes`` (a gzip
    bomb never inflates past it); past it, or undecodable: empty, an extension says why."""

    def __init__(self, *, connections: int, max_bytes: int, deadline: Clock) -> None:
        self.max_bytes = max_bytes
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=connections,
            max_keepalive_connections=connections,
            network_backend=_Backend(deadline),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core = httpcore.Request(
            request.method,
            httpcore.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        extensions: dict[str, Any] = {}
        try:
            answer = self._pool.handle_request(core)
            headers = httpx.Headers(answer.headers)
            extensions[SENT_HEADERS] = headers.multi_items()
            try:
                codings = headers.get_list("content-encoding")
                body = read_capped(answer.iter_stream(), codings, limit=self.max_bytes)
            except AnswerTooLarge:
                body, extensions[TOO_LARGE] = b"", True
            except Undecodable as exc:
                body, extensions[UNDECODABLE] = b"", str(exc)
            finally:
                answer.close()
        except _CORE_ERRORS as exc:
            raise getattr(httpx, type(exc).__name__, httpx.TransportError)(str(exc)) from exc
        for name in ("content-encoding", "content-length"):  # the body is decoded already
            headers.pop(name, None)
        return httpx.Response(
            answer.status,
            headers=headers,
            content=body,
            extensions={**answer.extensions, **extensions},
        )

    def close(self) -> None:
        self._pool.close()


class _Backend(httpcore.SyncBackend):
    def __init__(self, deadline: Clock) -> None:
        self._deadline = deadline

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, *args: Any, **kwargs: Any
    ) -> httpcore.NetworkStream:
        timeout = _clamp(self._deadline(), timeout, httpcore.ConnectTimeout)
        stream = super().connect_tcp(host, port, timeout, *args, **kwargs)
        return _Stream(stream, self._deadline)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadline: Clock) -> None:
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
        stream = self._stream.start_tls(ssl_context, server_hostname, timeout)
        return _Stream(stream, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


def _clamp(
    deadline: Deadline | None, timeout: float | None, timed_out: type[Exception]
) -> float | None:
    """``timeout`` shortened to what is left of ``deadline``; ``timed_out`` when nothing is."""
    if deadline is None:
        return timeout
    left = deadline.remaining()
    if left <= 0:
        raise timed_out(f"past the call's deadline ({deadline.setting})")
    return left if timeout is None else min(timeout, left)


class AnswerTooLarge(Exception):
    pass


class Undecodable(ValueError):
    pass


def read_capped(raw: Iterable[bytes], codings: Sequence[str], *, limit: int) -> bytes:
    """The body of ``raw`` chunks decoded through ``codings`` (outermost last); ``AnswerTooLarge``
    past ``limit`` bytes, ``Undecodable`` when it is not what they say (gzip or deflate)."""
    layers = [c.strip().lower() for part in codings for c in part.split(",")]
    layers = [c for c in layers if c not in ("", "identity")]
    unknown = sorted({c for c in layers if c not in _WBITS})
    if unknown:
        raise Undecodable(
            f"unsupported Content-Encoding {', '.join(unknown)} (we ask for {ACCEPT_ENCODING})"
        )
    if len(layers) > MAX_LAYERS:
        raise Undecodable(f"{len(layers)} layers of Content-Encoding (at most {MAX_LAYERS})")
    stream: Iterable[bytes] = raw
    for coding in reversed(layers):
        stream = _inflated(stream, coding)
    size, parts = 0, []
    for part in stream:
        size += len(part)
        if size > limit:
            raise AnswerTooLarge
        parts.append(part)
    return b"".join(parts)


def _inflated(chunks: Iterable[bytes], coding: str) -> Iterator[bytes]:
    """``chunks`` inflated ``_STEP`` bytes at a time; deflate may be zlib-wrapped or raw."""
    decoder = zlib.decompressobj(_WBITS[coding])
    started = False
    try:
        for data in chunks:
            while data:
                try:
                    out = decoder.decompress(data, _STEP)
                except zlib.error:
                    if coding != "deflate" or started:
                        raise
                    decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, no header
                    out = decoder.decompress(data, _STEP)
                started, data = True, decoder.unconsumed_tail
                yield out
                while not data and len(out) == _STEP:  # output may wait inside zlib
                    out = decoder.decompress(b"", _STEP)
                    yield out
        while not decoder.eof and (out := decoder.decompress(b"", _STEP)):
            yield out
    except zlib.error as exc:
        raise Undecodable(f"the body is not valid {coding}: {exc}") from exc


class RetryableStatus(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def retrying(profile: Any, idempotent: bool, deadline: Deadline) -> Retrying:
    """At most ``max_attempts`` within the deadline; ``Retry-After`` (capped), else backoff."""
    backoff = wait_exponential(
        multiplier=profile.backoff_initial, max=profile.backoff_max
    ) + wait_random(0, profile.backoff_initial)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        answer = exc.response if isinstance(exc, RetryableStatus) else None
        after = retry_after(answer.headers.get("Retry-After")) if answer is not None else None
        return backoff(state) if after is None else min(after, profile.retry_after_max)

    def retryable(exc: BaseException) -> bool:
        if isinstance(exc, httpx.TransportError):
            return idempotent or isinstance(exc, NOT_SENT)
        return isinstance(exc, RetryableStatus)

    def stop(state: RetryCallState) -> bool:
        spent = state.attempt_number >= profile.max_attempts
        return spent or state.upcoming_sleep >= deadline.remaining()

    return Retrying(stop=stop, wait=wait, retry=retry_if_exception(retryable), reraise=True)


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    value = (value or "").strip()
    left = float(value) if value.isdigit() else seconds_until(value)
    return None if left is None else max(0.0, left)


def seconds_until(when: Any) -> float | None:
    """Seconds from now (negative: past) until an HTTP date or an ISO 8601 time, else None."""
    if not isinstance(when, str):
        return None
    try:
        moment = email.utils.parsedate_to_datetime(when)
    except (TypeError, ValueError):
        try:
            moment = datetime.fromisoformat(when)
        except ValueError:
            return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (moment - datetime.now(UTC)).total_seconds()
