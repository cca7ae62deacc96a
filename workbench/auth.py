"""Bearer tokens as ``httpx.Auth``: password grant, client credentials, or a static token.

A provider puts ``Authorization: Bearer ...`` on each request. OAuth providers fetch their token
from the identity server (spec §4.1), keep it in a :class:`TokenCache` shared by the session
(one entry per identity server, client, grant, user and scope), renew it ahead of expiry, and let
only one thread renew a given entry at a time. A 401 answer triggers one renewal and one retry;
the session turns a second 401 into :class:`~workbench.errors.AuthError`.

The flow is synchronous on purpose: the public API is synchronous, and concurrency comes from
threads sharing one ``httpx.Client`` (DESIGN §2).

Example::

    auth = ClientCredentials(
        role="supplier", token_url=url, client_id="c", client_secret="s",
        scope="transcript_api", cache=TokenCache(), post_form=session.post_form,
    )
    httpx.Client(auth=auth).get(...)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import jwt

from workbench.errors import AuthError, PartnerError, WorkbenchError

# How long a token is taken to live when its login says nothing (spec §8: an hour).
DEFAULT_LIFETIME = 3600.0
# Renew when less than this share of a token's life is left, when shorter than the margin.
_MARGIN_SHARE = 0.1

PostForm = Callable[[str, dict[str, str]], httpx.Response]


@dataclass(frozen=True, repr=False)
class Token:
    """An access token and what we know of its life. Its ``repr`` hides the value."""

    value: str = field(repr=False)
    scope: str | None
    lifetime: float  # seconds from ``obtained`` until the partner stops accepting it
    renew_after: float  # monotonic time after which we ask for a new one
    obtained_at: datetime

    @property
    def expires_at(self) -> datetime:
        return self.obtained_at + timedelta(seconds=self.lifetime)

    def fresh(self) -> bool:
        return time.monotonic() < self.renew_after

    def __repr__(self) -> str:
        return f"<Token scope={self.scope!r} lifetime={self.lifetime:.0f}s>"


class TokenCache:
    """Tokens by key, with one lock per key so that one renewal runs at a time."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._tokens: dict[tuple[str, ...], Token] = {}
        self._locks: dict[tuple[str, ...], threading.Lock] = {}

    def lock(self, key: tuple[str, ...]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def get(self, key: tuple[str, ...]) -> Token | None:
        return self._tokens.get(key)

    def put(self, key: tuple[str, ...], token: Token) -> None:
        with self._guard:
            self._tokens[key] = token

    def discard(self, key: tuple[str, ...], token: Token) -> None:
        """Forget ``token`` unless another thread already replaced it."""
        with self._guard:
            if self._tokens.get(key) is token:
                del self._tokens[key]


class BearerAuth(httpx.Auth):
    """Adds a bearer token; on a 401, renews once (when it can) and retries once."""

    requires_request_body = False
    requires_response_body = False
    grant = "bearer"
    renewable = True

    def __init__(self, *, role: str) -> None:
        self.role = role

    def token(self, *, force: bool = False) -> Token:
        raise NotImplementedError

    def invalidate(self, token: Token) -> None:
        """Drop ``token`` so that the next call renews it."""

    def describe(self) -> dict[str, Any]:
        """What the provider is, for ``workbench doctor``; never the token itself."""
        return {"role": self.role, "grant": self.grant}

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        token = self.token()
        request.headers["Authorization"] = f"Bearer {token.value}"
        response = yield request
        if response.status_code == 401 and self.renewable:
            self.invalidate(token)
            request.headers["Authorization"] = f"Bearer {self.token().value}"
            yield request

    async def async_auth_flow(self, request: httpx.Request) -> Any:
        raise NotImplementedError("workbench sessions are synchronous; use httpx.Client")
        yield request  # pragma: no cover  (makes this an async generator, as httpx expects)


class StaticToken(BearerAuth):
    """A token given by the operator (``WORKBENCH_SUPPLIER_TOKEN``); it cannot be renewed."""

    grant = "static"
    renewable = False

    def __init__(self, *, role: str, token: str) -> None:
        super().__init__(role=role)
        lifetime, scope = _claims(token)
        self._token = Token(
            value=token,
            scope=scope,
            lifetime=lifetime if lifetime is not None else float("inf"),
            renew_after=float("inf"),
            obtained_at=datetime.now(UTC),
        )

    def token(self, *, force: bool = False) -> Token:
        return self._token


class OAuthGrant(BearerAuth):
    """Tokens from a login address (spec §4.1, or OCAS' eTMS login), cached and renewed.

    The form carries what is configured: ``client_id`` and ``client_secret`` when given (OCAS'
    eTMS login takes none), ``scope`` when given. ``fields="etms"`` spells the user's fields
    ``Username`` and ``Password``, as OCAS' clients post them. A token's life is the answer's
    ``expires_in``, else its ``.expires`` date, else its JWT ``exp``, else ``lifetime``.
    """

    def __init__(
        self,
        *,
        role: str,
        token_url: str,
        client_id: str | None,
        client_secret: str | None,
        scope: str | None,
        cache: TokenCache,
        post_form: PostForm,
        margin: float = 60.0,
        lifetime: float = DEFAULT_LIFETIME,
        hint: str = "the client id and secret",
        on_token: Callable[[str], None] | None = None,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        super().__init__(role=role)
        self.token_url, self.client_id, self.scope = token_url, client_id, scope
        self._secret = client_secret
        self._cache, self._post_form = cache, post_form
        self._margin, self._lifetime, self._hint = margin, lifetime, hint
        self._on_token, self._redact = on_token, redact
        self.key: tuple[str, ...] = (token_url, client_id or "", self.grant, scope or "")

    def form(self) -> dict[str, str]:
        optional = {"client_id": self.client_id, "client_secret": self._secret, "scope": self.scope}
        return {"grant_type": self.grant, **{k: v for k, v in optional.items() if v is not None}}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "client_id": self.client_id, "scope": self.scope}

    def token(self, *, force: bool = False) -> Token:
        token = self._cache.get(self.key)
        if token is not None and token.fresh() and not force:
            return token
        with self._cache.lock(self.key):
            current = self._cache.get(self.key)
            # Another thread may have renewed while we waited for the lock.
            if current is not None and current.fresh() and (current is not token or not force):
                return current
            token = self._fetch()
            self._cache.put(self.key, token)
            return token

    def invalidate(self, token: Token) -> None:
        self._cache.discard(self.key, token)

    def _fetch(self) -> Token:
        response = self._post_form(self.token_url, self.form())
        body = _json_object(response)
        if response.status_code != 200 or not isinstance(body.get("access_token"), str):
            raise self._refusal(response, body)
        value = body["access_token"]
        if self._on_token is not None:
            self._on_token(value)
        lifetime = _lifetime(body, value, self._lifetime)
        margin = min(self._margin, lifetime * _MARGIN_SHARE)
        return Token(
            value=value,
            scope=str(body["scope"]) if body.get("scope") is not None else None,
            lifetime=lifetime,
            renew_after=time.monotonic() + lifetime - margin,
            obtained_at=datetime.now(UTC),
        )

    def _refusal(self, response: httpx.Response, body: dict[str, Any]) -> WorkbenchError:
        status = response.status_code
        error = self._redact(str(body["error"])) if body.get("error") else None
        description = body.get("error_description") or body.get("Message") or body.get("message")
        description = self._redact(str(description)) if description else None
        said = ": ".join(x for x in (error, description) if x) or f"HTTP {status}"
        if status == 429 or status >= 500:  # the login failed, not the credentials
            return PartnerError(
                f"The login at {self.token_url} answered {status} to a token request for the "
                f"{self.role} interface ({said}), after retries; try again later.",
                status=status,
                body=self._redact(response.text[: 16 * 1024])[:2000],  # masked, then cut
            )
        if status == 200:  # a login that worked, in a shape we cannot read: not the credentials
            fields = ", ".join(sorted(map(str, body))[:10]) or "none"
            return AuthError(
                f"The login at {self.token_url} answered 200 for the {self.role} interface, "
                f"but with no access_token we can read (its fields: {self._redact(fields)}). "
                "Report the answer's shape (workbench call, or the calls table) to the "
                "partner, or set a token by hand (docs/configuration.md, token).",
                error=None,
                description=None,
            )
        check = {
            "invalid_scope": f"the scope ({self.scope!r})",
            "invalid_grant": getattr(self, "user_hint", self._hint),
        }.get(error or "", self._hint)
        who = f"client {self.client_id!r}" if self.client_id else "no client id"
        return AuthError(
            f"The login at {self.token_url} refused a token for the {self.role} interface "
            f"({self.grant} grant, {who}, scope {self.scope!r}): {said}. Check {check}.",
            error=error,
            description=description,
        )


class ClientCredentials(OAuthGrant):
    """The client-credentials grant (spec §4.1, domestic interface; the exchange roles)."""

    grant = "client_credentials"


class PasswordGrant(OAuthGrant):
    """The password grant (spec §4.1, international interface; OCAS' eTMS login)."""

    grant = "password"

    def __init__(
        self,
        *,
        username: str,
        password: str,
        fields: str = "oauth",
        user_hint: str = "the user name and password",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.username, self._password, self.user_hint = username, password, user_hint
        self._names = ("Username", "Password") if fields == "etms" else ("username", "password")
        # Two users of one client must not share a token; two roles of one user do.
        self.key = (*self.key, username)

    def form(self) -> dict[str, str]:
        user, password = self._names
        return {**super().form(), user: self.username, password: self._password}


def _json_object(response: httpx.Response) -> dict[str, Any]:
    """A login answer's fields, their names as OAuth spells them whatever the partner's case
    and separators (``accessToken``, ``AccessToken``, ``expires-in``...), ``.expires`` kept."""
    try:
        body = response.json()
    except ValueError:
        return {}
    if not isinstance(body, dict):
        return {}
    names = {"accesstoken": "access_token", "expiresin": "expires_in", "tokentype": "token_type"}
    return {
        names.get(str(k).lower().replace("_", "").replace("-", ""), str(k)): v
        for k, v in body.items()
    }


def _lifetime(body: dict[str, Any], token: str, default: float) -> float:
    """Seconds the token lives: ``expires_in``, else ``.expires`` (an HTTP date, as ASP.NET
    logins answer), else ``default``; shortened to the JWT's ``exp`` when that is sooner."""
    lifetime: float | None
    try:
        lifetime = float(body.get("expires_in"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        lifetime = _until(body.get(".expires"))
    from_claims, _ = _claims(token)
    if lifetime is None or not 0 < lifetime < float("inf"):
        return from_claims if from_claims is not None and from_claims > 0 else default
    # `exp` is whole seconds, so a token may die up to 1 s before `expires_in` says; a clock
    # far off makes `exp` useless, and then `expires_in` alone counts.
    if from_claims is not None and 0 < from_claims < lifetime:
        return from_claims
    return lifetime


def _until(expires: Any) -> float | None:
    """Seconds from now until an HTTP date (``Tue, 10 Nov 2026 20:00:00 GMT``) or an ISO
    8601 time; None when it is neither."""
    if not isinstance(expires, str):
        return None
    try:
        when = parsedate_to_datetime(expires)
    except (TypeError, ValueError):
        try:
            when = datetime.fromisoformat(expires.replace("Z", "+00:00"))
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _claims(token: str) -> tuple[float | None, str | None]:
    """Seconds left by the token's own ``exp`` claim and its ``scope``, if it is a JWT."""
    try:
        claims = jwt.decode(token, options={"verify_signature": False, "verify_exp": False})
    except jwt.PyJWTError:
        return None, None
    exp = claims.get("exp")
    left = float(exp) - time.time() if isinstance(exp, int | float) else None
    scope = claims.get("scope")
    return left, str(scope) if scope is not None else None
