"""The sandbox identity server: OAuth2 token issue (spec §4.1), OCAS' eTMS login on the
exchange, and bearer-token checks (§5). Tokens expire in real time, and sooner as
``Sandbox.advance`` moves the sandbox's clock.

With ``exchange_login="etms"`` the exchange roles have no client at the identity server: one
account logs in at ``POST {exchange}/api/auth/login`` with a form of ``Username``, ``Password``
and ``grant_type=password`` (field names matched case-insensitively, as ASP.NET binds them),
and its token serves both roles. ``token_expiry`` says how an answer gives the token's life:
``expires_in``, an HTTP date in ``.expires`` (ASP.NET's OAuth answers), or not at all."""

from __future__ import annotations

import secrets
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime

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
        self,
        credentials: Credentials,
        *,
        clock: Callable[[], datetime],
        key: bytes | None = None,
        exchange_login: str = "identity",
        expiry: str = "expires_in",
        interfaces: Collection[str] = ("international", "domestic", "supplier", "consumer"),
    ) -> None:
        self.credentials = credentials
        self._clock, self._started = clock, clock()  # the sandbox's simulated time
        self._key = key or secrets.token_bytes(32)
        # Only the clients of the interfaces the account has.
        self._clients = {
            client_id: client
            for client_id, client in credentials.clients().items()
            if client["role"] in interfaces
        }
        self._expiry_style = expiry
        exchange_roles = [role for role in ("supplier", "consumer") if role in interfaces]
        if exchange_login == "etms" and exchange_roles:
            # The exchange's own account replaces its clients, and serves the roles it has.
            for role in exchange_roles:
                del self._clients[getattr(credentials, f"{role}_client_id")]
            self._clients[credentials.exchange_username] = {
                "secret": credentials.exchange_password,
                "grant": "etms",
                "scope": "",
                "role": "exchange" if len(exchange_roles) == 2 else exchange_roles[0],
            }
        self._lock = threading.Lock()
        self.token_requests: Counter[str] = Counter()
        self.issued_tokens: list[str] = []

    def issue(self, form: dict[str, str], *, ttl: int) -> dict[str, object]:
        """Answer a token request (form fields as received) or raise OAuthError."""
        for name in ("grant_type", "client_id", "client_secret"):
            if not form.get(name):
                raise OAuthError("invalid_request", f"The '{name}' parameter is missing.")
        client = self._clients.get(form["client_id"])
        if client is None or client["grant"] == "etms":
            raise OAuthError("invalid_client", "Client authentication failed.", status=401)
        if not _same(form["client_secret"], client["secret"]):
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
        subject = form.get("username") or form["client_id"]
        answer = self._answer(form["client_id"], subject, client, ttl=ttl)
        return {**answer, "scope": client["scope"]}

    def etms_login(self, form: dict[str, str], *, ttl: int) -> dict[str, object]:
        """Answer OCAS' eTMS login (its form fields as received) or raise OAuthError."""
        fields = {k.lower(): v for k, v in form.items()}
        username, password = fields.get("username", ""), fields.get("password", "")
        if fields.get("grant_type") != "password":
            raise OAuthError("unsupported_grant_type", "grant_type must be password.")
        if not username or not password:
            raise OAuthError("invalid_request", "The Username and Password fields are required.")
        client = self._clients.get(username)
        if client is None or client["grant"] != "etms" or not _same(password, client["secret"]):
            raise OAuthError("invalid_grant", "The user name or password is incorrect.")
        return {**self._answer(username, username, client, ttl=ttl), "userName": username}

    def _answer(
        self, client_id: str, subject: str, client: dict[str, str], *, ttl: int
    ) -> dict[str, object]:
        """A signed token for ``client`` and how this server says how long it lives."""
        now = int(self._now())
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "client_id": client_id,
            "scope": client["scope"],
            "role": client["role"],
            "iat": now,
            "exp": now + ttl,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(claims, self._key, algorithm="HS256")
        with self._lock:
            self.token_requests[client_id] += 1
            self.issued_tokens.append(token)
        answer: dict[str, object] = {"access_token": token, "token_type": "Bearer"}
        if self._expiry_style == "expires_in":
            answer["expires_in"] = ttl
        elif self._expiry_style == "dot_expires":
            answer[".issued"] = format_datetime(datetime.fromtimestamp(now, UTC), usegmt=True)
            answer[".expires"] = format_datetime(
                datetime.fromtimestamp(now + ttl, UTC), usegmt=True
            )
        return answer

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
