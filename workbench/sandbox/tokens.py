"""The sandbox identity server: OAuth2 tokens (spec §4.1), OCAS' eTMS login (one account for both
exchange roles) and bearer checks (§5); tokens expire sooner as ``Sandbox.advance`` moves."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any, NamedTuple

import jwt
from starlette.exceptions import HTTPException

from workbench.sandbox.settings import SandboxSettings
from workbench.spec import DOMESTIC_SCOPE, EXCHANGE_SCOPE, INTL_SCOPE

ISSUER = "workbench-sandbox"
DENIED = "Authorization has been denied for this request."


class OAuthError(HTTPException):
    """An RFC 6749 §5.2 error: ``error`` code, human ``description`` and HTTP status."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(status, description)
        self.body = {"error": error, "error_description": description}


class Refusal(HTTPException):
    """A request the sandbox refuses, with its 4xx status (a bad bearer token: 401)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(status, message)


def same(given: str, known: str) -> bool:
    """Whether a credential given is the one known, in a time that does not tell how close."""
    return secrets.compare_digest(given.encode(), known.encode())


class Client(NamedTuple):
    """What the identity server lets a client (or the eTMS account) do."""

    secret: str
    grant: str  # "password", "client_credentials" or "etms"
    scope: str
    role: str  # an interface, or "exchange" for an eTMS account of both exchange roles


class IdentityServer:
    """Issues HS256 JWTs to the demo clients and checks them on every protected call."""

    def __init__(self, settings: SandboxSettings, *, clock: Callable[[], datetime]) -> None:
        c, interfaces = settings.credentials, settings.account
        self.credentials = c
        self._clock, self._started = clock, clock()  # the sandbox's simulated time
        self._key, self._expiry = secrets.token_bytes(32), settings.token_expiry
        self._clients = {  # only those of the account's interfaces
            getattr(c, f"{prefix}_client_id"): Client(
                getattr(c, f"{prefix}_client_secret"), grant, scope, role
            )
            for prefix, grant, scope, role in (
                ("intl", "password", INTL_SCOPE, "international"),
                ("domestic", "client_credentials", DOMESTIC_SCOPE, "domestic"),
                ("supplier", "client_credentials", EXCHANGE_SCOPE, "supplier"),
                ("consumer", "client_credentials", EXCHANGE_SCOPE, "consumer"),
            )
            if role in interfaces
        }
        roles = [role for role in ("supplier", "consumer") if role in interfaces]
        if settings.exchange_login == "etms" and roles:
            # The exchange's own account replaces its clients, and serves the roles it has.
            for role in roles:
                del self._clients[getattr(c, f"{role}_client_id")]
            served = "exchange" if len(roles) == 2 else roles[0]
            self._clients[c.exchange_username] = Client(c.exchange_password, "etms", "", served)

    def issue(self, form: dict[str, str], *, ttl: int) -> dict[str, object]:
        """Answer a token request (form fields as received) or raise OAuthError."""
        for name in ("grant_type", "client_id", "client_secret"):
            if not form.get(name):
                raise OAuthError("invalid_request", f"The '{name}' parameter is missing.")
        client = self._clients.get(form["client_id"])
        secret = form["client_secret"]
        if client is None or client.grant == "etms" or not same(secret, client.secret):
            raise OAuthError("invalid_client", "Client authentication failed.", status=401)
        if form["grant_type"] != client.grant:
            raise OAuthError(
                "unsupported_grant_type", f"This client may only use the '{client.grant}' grant."
            )
        if client.grant == "password":
            username, password = form.get("username", ""), form.get("password", "")
            if not username or not password:
                raise OAuthError(
                    "invalid_request", "The password grant needs username and password."
                )
            c = self.credentials
            if not (same(username, c.intl_username) & same(password, c.intl_password)):
                raise OAuthError("invalid_grant", "The user name or password is incorrect.")
        requested = form.get("scope", "").split()
        if requested != [client.scope]:
            raise OAuthError(
                "invalid_scope", f"The scope requested is not allowed for this client: {requested}"
            )
        subject = form.get("username") or form["client_id"]
        return {**self._answer(form["client_id"], subject, client, ttl=ttl), "scope": client.scope}

    def etms_login(self, form: dict[str, str], *, ttl: int) -> dict[str, object]:
        """Answer OCAS' eTMS login (its form fields as received) or raise OAuthError."""
        fields = {k.lower(): v for k, v in form.items()}
        username, password = fields.get("username", ""), fields.get("password", "")
        if fields.get("grant_type") != "password":
            raise OAuthError("unsupported_grant_type", "grant_type must be password.")
        if not username or not password:
            raise OAuthError("invalid_request", "The Username and Password fields are required.")
        client = self._clients.get(username)
        if client is None or client.grant != "etms" or not same(password, client.secret):
            raise OAuthError("invalid_grant", "The user name or password is incorrect.")
        return {**self._answer(username, username, client, ttl=ttl), "userName": username}

    def _answer(
        self, client_id: str, subject: str, client: Client, *, ttl: int
    ) -> dict[str, object]:
        """A signed token for ``client``, and its life as this server says it."""
        now = int(self._now())
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "client_id": client_id,
            "scope": client.scope,
            "role": client.role,
            "iat": now,
            "exp": now + ttl,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(claims, self._key, algorithm="HS256")
        answer: dict[str, object] = {"access_token": token, "token_type": "Bearer"}
        if self._expiry == "expires_in":
            answer["expires_in"] = ttl
        elif self._expiry.startswith("dot_expires"):
            for key, moment in ((".issued", now), (".expires", now + ttl)):
                when = datetime.fromtimestamp(moment, UTC)
                iso = self._expiry == "dot_expires_iso"
                answer[key] = when.isoformat() if iso else format_datetime(when, usegmt=True)
        return answer

    def _now(self) -> float:
        """The wall clock, moved on as far as the sandbox's clock was advanced."""
        return time.time() + (self._clock() - self._started).total_seconds()

    def verify(self, authorization: str | None) -> Client:
        """The client behind an ``Authorization`` header, or a 401 Refusal."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refusal(DENIED, 401)
        required = ["exp", "iat", "scope", "client_id"]  # exp checked below, on the sandbox clock
        options: Any = {"require": required, "verify_exp": False, "verify_iat": False}
        try:
            claims = jwt.decode(token.strip(), self._key, ["HS256"], options, issuer=ISSUER)
        except jwt.PyJWTError as exc:
            raise Refusal(DENIED, 401) from exc
        if claims["exp"] <= self._now():
            raise Refusal("The access token has expired.", 401)
        client = self._clients.get(claims["client_id"])
        if client is None:
            raise Refusal(DENIED, 401)
        return client
