"""When to try a request again: the session's retry policy, built on tenacity.

Reads (GET) are retried on 429, 5xx and network errors, with exponential backoff and jitter, or
after the ``Retry-After`` the partner asked for (capped). A POST is retried only when the
connection could not even be opened (nothing was sent): once its bytes may have reached the
partner, it may have been processed, and sending it again could duplicate it. No retry, and no
wait before one, goes past the call's deadline (``call_deadline``): the policy stops instead.

>>> retry_after("3")
3.0
"""

from __future__ import annotations

import email.utils
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)
from tenacity.stop import stop_base

from workbench.config import Profile

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Failures that prove the request never left: safe to retry even for a POST.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class RetryableStatus(Exception):
    """Raised inside an attempt for an answer worth another try; carries that answer."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def retrying(
    profile: Profile, *, idempotent: bool, operation: str, remaining: Callable[[], float]
) -> Retrying:
    """The tenacity policy for one call; ``idempotent`` calls retry more than a POST does.

    ``remaining()`` gives the seconds left to the current call: the policy stops rather than
    wait past them.
    """
    return Retrying(
        stop=stop_after_attempt(profile.max_attempts) | _StopAtDeadline(remaining),
        wait=partial(_wait, fallback=_backoff(profile), cap=profile.retry_after_max),
        retry=retry_if_exception(partial(_retryable, idempotent=idempotent)),
        before_sleep=partial(_log_retry, operation=operation),
        reraise=True,
    )


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _backoff(profile: Profile) -> wait_exponential_jitter:
    return wait_exponential_jitter(
        multiplier=profile.backoff_initial,
        max=profile.backoff_max,
        jitter=profile.backoff_initial,
    )


class _StopAtDeadline(stop_base):
    """Stop when the wait before the next attempt would end at or past the call's deadline."""

    def __init__(self, remaining: Callable[[], float]) -> None:
        self.remaining = remaining

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.upcoming_sleep >= self.remaining()


def _retryable(exc: BaseException, *, idempotent: bool) -> bool:
    if isinstance(exc, RetryableStatus):
        return True
    if isinstance(exc, httpx.TransportError):
        return idempotent or isinstance(exc, NOT_SENT)
    return False


def _wait(state: RetryCallState, *, fallback: wait_exponential_jitter, cap: float) -> float:
    """``Retry-After`` when the partner gave one (capped), else exponential backoff with jitter."""
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, RetryableStatus):
        after = retry_after(exc.response.headers.get("Retry-After"))
        if after is not None:
            return min(after, cap)
    return fallback(state)


def _log_retry(state: RetryCallState, *, operation: str) -> None:
    exc = state.outcome.exception() if state.outcome else None
    why = (
        f"status {exc.response.status_code}"
        if isinstance(exc, RetryableStatus)
        else type(exc).__name__
    )
    wait = state.next_action.sleep if state.next_action else 0.0
    logger.info(
        "%s: %s on attempt %d; retrying in %.2f s", operation, why, state.attempt_number, wait
    )
