"""The sandbox identity server: OAuth2 token issue (spec §4.1) and bearer-token checks (§5).
Tokens expire in real time, and sooner as ``Sandbox.advance`` moves the sandbox's clock."""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import jwt

from workbench.sandbox.settings import Credentials

ISSUER = "workbench-sandbox"


class OAuthError(Exception):
    """An RFC 6749 §5.2 error: ``error`` code, human ``description`` and HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


class TokenRejected(Exception):
    """A bearer token is missing, malformed, expired or wrongly signed (401)."""


@dataclass(frozen=True)
class Grant:
    """What a valid token says about its holder."""

    client_id: str
    scope: str
    role: str


class IdentityServer:
    """Issues HS256 JWTs to the demo clients and checks them on every protected call."""

    def __init__(
        self, credentials: Credentials, *, clock: Callable[[], datetime], key: bytes | None = None
    ) -> None:
        self.credentials = credentials
        self._clock, self._started = clock, clock()  # the sandbox's simulated time
        self._key = key or secrets.token_bytes(32)
        self._clients = credentials.clients()
        self._lock = threading.Lock()
        self.token_requests: Counter[str] = Counter()
        self.issued_tokens: list[str] = []

    def issue(self, form: dict[str, str], *, ttl: int) -> dict[str, object]:
        """Answer a token request (form fields as received) or raise OAuthError."""
        for name in ("grant_type", "client_id", "client_secret"):
            if not form.get(name):
                raise OAuthError("invalid_request", f"The '{name}' parameter is missing.")
        client = self._clients.get(form["client_id"])
        if client is None or not _same(form["client_secret"], client["secret"]):
            raise OAuthError("invalid_client", "Client authentication failed.", status=401)
        grant_type = form["grant_type"]
        if grant_type not in ("password", "client_credentials"):
            raise OAuthError(
                "unsupported_grant_type", f"The grant type '{grant_type}' is not supported."
            )
        if grant_type != client["grant"]:
            raise OAuthError(
                "unsupported_grant_type",
                f"This client may only use the '{client['grant']}' grant.",
            )
        if grant_type == "password":
            self._check_user(form)
        requested = form.get("scope", "").split()
        if requested != [client["scope"]]:
            raise OAuthError(
                "invalid_scope", f"The scope requested is not allowed for this client: {requested}"
            )
        now = int(self._now())
        claims = {
            "iss": ISSUER,
            "sub": form.get("username") or form["client_id"],
            "client_id": form["client_id"],
            "scope": client["scope"],
            "role": client["role"],
            "iat": now,
            "exp": now + ttl,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(claims, self._key, algorithm="HS256")
        with self._lock:
            self.token_requests[form["client_id"]] += 1
            self.issued_tokens.append(token)
        return {
            "access_token": token,
            "expires_in": ttl,
            "token_type": "Bearer",
            "scope": client["scope"],
        }

    def _now(self) -> float:
        """The wall clock, moved on as far as the sandbox's clock was advanced."""
        return time.time() + (self._clock() - self._started).total_seconds()

    def _check_user(self, form: dict[str, str]) -> None:
        username, password = form.get("username", ""), form.get("password", "")
        if not username or not password:
            raise OAuthError("invalid_request", "The password grant needs username and password.")
        ok_user = _same(username, self.credentials.intl_username)
        ok_password = _same(password, self.credentials.intl_password)
        if not (ok_user and ok_password):
            raise OAuthError("invalid_grant", "The user name or password is incorrect.")

    def verify(self, authorization: str | None) -> Grant:
        """The grant behind an ``Authorization`` header, or TokenRejected."""
        if not authorization:
            raise TokenRejected("Authorization has been denied for this request.")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise TokenRejected("Authorization has been denied for this request.")
        try:
            claims = jwt.decode(
                token.strip(),
                self._key,
                algorithms=["HS256"],
                issuer=ISSUER,
                # exp is checked below, with the advances of the sandbox's clock
                options={
                    "require": ["exp", "iat", "scope", "client_id"],
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise TokenRejected("Authorization has been denied for this request.") from exc
        if claims["exp"] <= self._now():
            raise TokenRejected("The access token has expired.")
        client = self._clients.get(claims["client_id"])
        if client is None:
            raise TokenRejected("Authorization has been denied for this request.")
        return Grant(client_id=claims["client_id"], scope=claims["scope"], role=client["role"])


def _same(given: str, expected: str) -> bool:
    """A constant-time comparison of credentials, whatever characters they hold
    (``secrets.compare_digest`` refuses non-ASCII text, so both are compared as UTF-8)."""
    return secrets.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )
