"""Bearer tokens as ``httpx.Auth``: the password grant, client credentials, or a static token."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from workbench.config import RoleSettings
from workbench.errors import AuthError, PartnerError, WorkbenchError
from workbench.http.events import field_value
from workbench.http.limits import seconds_until

DEFAULT_LIFETIME = 3600.0  # spec §8: a token lives an hour when its login says nothing
_MARGIN_SHARE = 0.1  # renew with this share of a short token's life left, at the latest
PostForm = Callable[[str, dict[str, str]], httpx.Response]


@dataclass(frozen=True)
class Token:
    """An access token and what we know of its life; its ``repr`` hides the value."""

    value: str = field(repr=False)
    scope: str | None
    lifetime: float  # seconds from ``obtained_at`` until the partner stops accepting it
    renew_after: float  # time.monotonic() after which we ask for a new one
    obtained_at: datetime

    @property
    def expires_at(self) -> datetime:
        return self.obtained_at + timedelta(seconds=self.lifetime)

    def fresh(self) -> bool:
        return time.monotonic() < self.renew_after


class TokenCache(dict[tuple[str, ...], Token]):
    """Tokens by key, with one lock per key: one renewal at a time, and a slow identity server
    stalls only the roles that log in there."""

    def __init__(self) -> None:
        super().__init__()
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, ...], threading.Lock] = {}

    def lock(self, key: tuple[str, ...]) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def discard(self, key: tuple[str, ...], token: Token) -> None:
        """Forget ``token`` unless another thread already replaced it."""
        with self._guard:
            if self.get(key) is token:
                del self[key]


class BearerAuth(httpx.Auth):
    """A role's bearer token: a static one, or one from a login (spec §4.1, or OCAS' eTMS login)
    kept in the :class:`TokenCache`, renewed ahead of expiry by one thread at a time; on a 401
    renewed once and the request retried once (a second 401 is the session's ``AuthError``)."""

    def __init__(
        self,
        settings: RoleSettings,
        *,
        cache: TokenCache,
        post_form: PostForm,
        margin: float = 60.0,
        lifetime: float = DEFAULT_LIFETIME,
        on_token: Callable[[str], None] = lambda token: None,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        self.settings, self.role, self.grant = settings, settings.role, settings.grant
        self.token_url, self.client_id, self.scope = (
            settings.token_url or "", settings.client_id, settings.scope
        )  # fmt: skip
        self._cache, self._post_form = cache, post_form
        self._margin, self._lifetime = margin, lifetime
        self._on_token, self._redact = on_token, redact
        # Two users of one client must not share a token.
        user = (settings.username or "",) if self.grant == "password" else ()
        self.key = (self.token_url, self.client_id or "", self.grant, self.scope or "", *user)
        self._static: Token | None = None
        if settings.token is not None:  # its life is unknown: a 401 says it ended
            inf = float("inf")
            self._static = Token(settings.token.reveal(), None, inf, inf, datetime.now(UTC))

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response]:
        token = self.token()
        request.headers["Authorization"] = f"Bearer {token.value}"
        response = yield request
        if response.status_code == 401 and self._static is None:
            self._cache.discard(self.key, token)
            request.headers["Authorization"] = f"Bearer {self.token().value}"
            yield request

    def form(self) -> dict[str, str]:
        s = self.settings
        secret = s.client_secret.reveal() if s.client_secret else None
        optional = {"client_id": s.client_id, "client_secret": secret, "scope": s.scope}
        form = {"grant_type": self.grant, **{k: v for k, v in optional.items() if v is not None}}
        if self.grant == "password":
            assert s.username is not None and s.password is not None
            names = ("Username", "Password") if s.login == "etms" else ("username", "password")
            form |= dict(zip(names, (s.username, s.password.reveal()), strict=True))
        return form

    def token(self, *, force: bool = False) -> Token:
        if self._static is not None:
            return self._static
        token = self._cache.get(self.key)
        if token is not None and token.fresh() and not force:
            return token
        with self._cache.lock(self.key):
            current = self._cache.get(self.key)
            # Another thread may have renewed while we waited for the lock.
            if current is not None and current.fresh() and (current is not token or not force):
                return current
            token = self._fetch()
            self._cache[self.key] = token
            return token

    def _fetch(self) -> Token:
        response = self._post_form(self.token_url, self.form())
        body = _json_object(response)
        value = field_value(body, "access_token")
        if response.status_code != 200 or not isinstance(value, str):
            raise self._refusal(response, body)
        self._on_token(value)
        lifetime = _lifetime(body, self._lifetime)
        scope = str(found) if (found := field_value(body, "scope")) is not None else None
        renew = time.monotonic() + lifetime - min(self._margin, lifetime * _MARGIN_SHARE)
        return Token(value, scope, lifetime, renew, datetime.now(UTC))

    def _refusal(self, response: httpx.Response, body: dict[str, Any]) -> WorkbenchError:
        status = response.status_code
        error = self._redact(str(found)) if (found := field_value(body, "error")) else None
        description = field_value(body, "error_description", "message")
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
                "partner, or set a token by hand (docs/configuration.md, token)."
            )
        s = self.settings
        client = [k for k in ("client_id", "client_secret") if getattr(s, k) is not None]
        hint = s.where(*client) if client else f"the login address ({self.token_url})"
        if error == "invalid_scope":
            hint = f"the scope ({self.scope!r})"
        elif error == "invalid_grant" and self.grant == "password":
            hint = s.where("username", "password")
        who = f"client {self.client_id!r}" if self.client_id else "no client id"
        return AuthError(
            f"The login at {self.token_url} refused a token for the {self.role} interface "
            f"({self.grant} grant, {who}, scope {self.scope!r}): {said}. Check {hint}."
        )


def _json_object(response: httpx.Response) -> dict[str, Any]:
    """A login answer's fields, read by :func:`.events.field_value` (``accessToken`` too)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _lifetime(body: dict[str, Any], default: float) -> float:
    """Seconds the token lives: ``expires_in``, else ``.expires`` (an HTTP date), else default."""
    try:
        lifetime: float | None = float(field_value(body, "expires_in"))
    except (TypeError, ValueError):
        lifetime = seconds_until(field_value(body, ".expires"))
    return lifetime if lifetime is not None and 0 < lifetime < float("inf") else default
