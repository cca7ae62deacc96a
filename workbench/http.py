"""The session: one ``httpx.Client`` per interface, with tokens, retries, errors and recording.

- Gateway roles (international, domestic) send ``Subscription-Key`` and ``Accept:
  application/json``; the exchange roles send the key only when one is configured.
- Retries follow :mod:`workbench.retries` (reads yes; a POST only if nothing was sent).
- Failures become :mod:`workbench.errors` through :mod:`workbench.answers`.
- Every HTTP exchange, token requests and retries included, goes to the recorders as an
  :class:`Exchange` with headers and bodies already redacted (:mod:`workbench.redact`).

Example::

    session = Session(load_profile())
    session.call("supplier", "GET", SUPPLIER_PENDING_PATH, operation="supplier.pending_requests")
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from tenacity import Retrying

from workbench.answers import empty_or_raise, redacted_body, transport_failure
from workbench.auth import BearerAuth, ClientCredentials, PasswordGrant, StaticToken, TokenCache
from workbench.config import Profile, RoleSettings, env_prefix
from workbench.errors import PartnerError
from workbench.redact import Redactor
from workbench.retries import RETRY_STATUSES, SAFE_METHODS, RetryableStatus, retrying
from workbench.spec import SUBSCRIPTION_KEY_HEADER

logger = logging.getLogger(__name__)

_EXT = "workbench"
_MAX_POLICIES = 256  # retry policies kept, one per (idempotent, operation)


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


# A recorder may return an id for what it stored (the store's call id); see last_call_id().
Recorder = Callable[[Exchange], Any]


class Session:
    """HTTP for every interface of one profile. Thread-safe; close it when done."""

    def __init__(
        self,
        profile: Profile,
        *,
        recorder: Recorder | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        from workbench import __version__

        self.profile = profile
        self.redactor = Redactor(profile.secrets())
        self.recorders: list[Recorder] = [recorder] if recorder else []
        self.tokens = TokenCache()
        self._transport = transport
        self._user_agent = f"workbench/{__version__}"
        self._lock = threading.Lock()
        self._local = threading.local()  # last_call_id, per thread
        self._clients: dict[str, httpx.Client] = {}
        self._auths: dict[str, BearerAuth] = {}
        self._bases: dict[str, str] = {}  # role -> its base URL as text, ending in "/"
        self._policies: dict[tuple[bool, str], Retrying] = {}
        self._identity = self._new_client("identity", base_url="", headers={})

    # -- clients and credentials ------------------------------------------------------------

    def client(self, role: str) -> httpx.Client:
        """The client of one role (created on first use; ``ConfigError`` if not configured)."""
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
                base = client.base_url
                if settings.base_url and not base.query and not base.fragment:
                    text = str(base)  # its path ends with "/", but an empty one shows as ""
                    self._bases[role] = text if text.endswith("/") else text + "/"
                self._clients[role] = client
            return self._clients[role]

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
            headers={"User-Agent": self._user_agent, **headers},
            timeout=httpx.Timeout(p.read_timeout, connect=p.connect_timeout),
            limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
            transport=self._transport or httpx.HTTPTransport(),
            event_hooks={"request": [_stamp], "response": [self._on_response]},
        )

    def _new_auth(self, settings: RoleSettings) -> BearerAuth:
        if settings.grant == "static":
            assert settings.token is not None
            return StaticToken(role=settings.role, token=settings.token.reveal())
        assert settings.client_id and settings.client_secret
        prefix = env_prefix(settings.role)
        options: dict[str, Any] = {
            "role": settings.role,
            "token_url": settings.token_url,
            "client_id": settings.client_id,
            "client_secret": settings.client_secret.reveal(),
            "scope": settings.scope,
            "cache": self.tokens,
            "post_form": self.post_form,
            "margin": self.profile.token_margin,
            "hint": f"{prefix}CLIENT_ID and {prefix}CLIENT_SECRET",
            "on_token": self.redactor.add,
            "redact": self.redactor.text,
        }
        if settings.grant == "password":
            assert settings.username and settings.password
            return PasswordGrant(
                username=settings.username, password=settings.password.reveal(), **options
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
    ) -> Any:
        """Send one partner operation; its decoded JSON, or ``None`` for an ``empty`` 400.

        ``empty`` lists the 400 messages that mean "nothing to list" (spec §7); ``subject``
        names what the call is about in error messages ("transcript request 'X'").
        """
        self._local.call_id = None
        client = self.client(role)
        response = self._send(
            client, role, method, path, operation=operation, params=params, json=json
        )
        if response.is_success:
            try:
                return response.json()
            except ValueError:
                raise PartnerError(
                    f"{operation}: the {role} interface answered {response.status_code} with a "
                    "body that is not JSON.",
                    status=response.status_code,
                    body=redacted_body(response, self.redactor),
                ) from None
        return empty_or_raise(
            response,
            profile=self.profile,
            redactor=self.redactor,
            role=role,
            operation=operation,
            empty=empty,
            subject=subject,
        )

    def last_call_id(self) -> Any:
        """What the recorders returned for the last exchange of this thread's last ``call``."""
        return getattr(self._local, "call_id", None)

    def post_form(self, url: str, form: dict[str, str]) -> httpx.Response:
        """POST a form to the identity server (token requests; safe to retry: nothing changes)."""
        return self._send(
            self._identity, "identity", "POST", url, operation="token", data=form, retry_unsafe=True
        )

    def close(self) -> None:
        with self._lock:
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
        base = self._bases.get(interface)
        if base is not None and url[:1] == "/" and url[1:2] != "/":
            # What httpx does with an absolute path below base_url, without parsing it twice.
            url = base + url[1:]
        # Tenacity keeps a policy's state per thread, so one policy per operation serves every
        # thread. Never re-entered on one thread: the token fetch an attempt may make inside
        # (auth) is the operation "token", whose client has no auth.
        policy = self._policies.get((idempotent, operation))
        if policy is None:
            policy = retrying(self.profile, idempotent=idempotent, operation=operation)
            if len(self._policies) < _MAX_POLICIES:
                self._policies[(idempotent, operation)] = policy
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
                        response = client.send(request)
                    except httpx.TransportError as exc:
                        self._record(request, None, error=f"{type(exc).__name__}: {exc}")
                        raise
                    if idempotent and response.status_code in RETRY_STATUSES:
                        raise RetryableStatus(response)
                    return response
        except RetryableStatus as exc:
            return exc.response
        except httpx.TransportError as exc:
            raise transport_failure(
                exc,
                redactor=self.redactor,
                interface=interface,
                operation=operation,
                attempts=attempt_number,
                retry_unsafe=retry_unsafe,
            ) from exc
        raise AssertionError("unreachable: tenacity either returns or raises")  # pragma: no cover

    # -- recording ------------------------------------------------------------------

    def _on_response(self, response: httpx.Response) -> None:
        if not self.recorders:
            return
        response.read()
        self._record(response.request, response)

    def _record(
        self, request: httpx.Request, response: httpx.Response | None, *, error: str | None = None
    ) -> None:
        if not self.recorders:
            return
        meta = request.extensions.get(_EXT, {})
        r = self.redactor
        exchange = Exchange(
            interface=meta.get("interface", "?"),
            operation=meta.get("operation", "?"),
            method=request.method,
            url=r.url(str(request.url)),
            attempt=meta.get("attempt", 1),
            started_at=meta.get("started_at", datetime.now(UTC)),
            duration_s=time.perf_counter() - meta.get("t0", time.perf_counter()),
            status=response.status_code if response is not None else None,
            request_headers=r.headers(request.headers.multi_items()),
            request_body=r.body(request.content, request.headers.get("content-type")),
            response_headers=r.headers(response.headers.multi_items())
            if response is not None
            else {},
            response_body=r.body(response.content, response.headers.get("content-type"))
            if response is not None
            else "",
            error=r.text(error) if error else None,
        )
        for recorder in self.recorders:
            try:
                call_id = recorder(exchange)
                if call_id is not None:
                    self._local.call_id = call_id
            except Exception:
                logger.exception("a recorder failed on %s %s", exchange.method, exchange.url)


def _stamp(request: httpx.Request) -> None:
    meta = request.extensions.setdefault(_EXT, {})
    meta["t0"] = time.perf_counter()
    meta["started_at"] = datetime.now(UTC)
