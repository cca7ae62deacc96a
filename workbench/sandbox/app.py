"""The sandbox's ASGI app: identity server, gateway and exchange (spec §4); faults on demand as
its middleware: latency, 500/503, 429 with Retry-After and dropped connections (before the
operation runs, or after it took effect)."""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench import spec
from workbench.errors import PescError
from workbench.pesc import flatten, parse
from workbench.sandbox.generator import iso_ms, shaped_event
from workbench.sandbox.settings import Faults, SandboxSettings
from workbench.sandbox.state import Item, PartnerState
from workbench.sandbox.tokens import IdentityServer, OAuthError, Refusal, same

VALID_ID = re.compile(r"[A-Za-z0-9-]{1,64}")
NOT_FOUND_MESSAGE = "No HTTP resource was found that matches the request URI."
MISSING_KEY = (
    "Access denied due to missing subscription key. "
    "Make sure to include subscription key when making requests to an API."
)
WRONG_KEY = (
    "Access denied due to invalid subscription key. "
    "Make sure to provide a valid key for an active subscription."
)
# Each side of the exchange: its role, its answers for nothing listed and an unknown id (§7).
SIDES = {
    "request": ("supplier", spec.NO_REQUESTS_FOUND, spec.UNKNOWN_REQUEST_ID),
    "transcript": ("consumer", spec.NO_TRANSCRIPTS_FOUND, spec.UNKNOWN_TRANSCRIPT_ID),
}
# A POST on one item: its side, the document it takes, and what closes the item.
SENDS = {
    "send_response": ("request", "TranscriptResponse", "response"),
    "send_transcript": ("request", "CollegeTranscript", "transcript"),
    "send_acknowledgment": ("transcript", "Acknowledgment", "acknowledgment"),
}


def error_answer(style: str, status: int, text: str) -> Response:
    """An error answer in the ``error_body`` style: ``{"Message": text}``, RFC 7807, or text."""
    if style == "problem":
        problem = {"type": "about:blank", "title": HTTPStatus(status).phrase, "status": status}
        problem["detail"] = text
        return JSONResponse(problem, status, media_type="application/problem+json")
    if style == "text":
        return PlainTextResponse(text, status)
    return JSONResponse({"Message": text}, status)


class Partner:
    """The handlers of one sandbox, over its settings, state and identity server."""

    def __init__(
        self, settings: SandboxSettings, state: PartnerState, identity: IdentityServer
    ) -> None:
        self.settings, self.state, self.identity = settings, state, identity

    def app(self) -> ASGIApp:
        """The ASGI app serving all three interfaces."""
        s, faults = self.settings, self.settings.faults
        # §4.4: "a trailing slash may be present", answered in place, never redirected.
        paths = {
            **spec.SEND_ROUTES[s.send_routes],
            "send_acknowledgment": spec.CONSUMER_ACKNOWLEDGMENT_PATH,
        }
        exchange = [
            Route(path + slash, endpoint, methods=[method])
            for path, method, endpoint in (
                (spec.SUPPLIER_PENDING_PATH, "GET", partial(self.listing, "request")),
                (spec.SUPPLIER_REQUEST_PATH, "GET", partial(self.detail, "request")),
                (spec.CONSUMER_PENDING_PATH, "GET", partial(self.listing, "transcript")),
                (spec.CONSUMER_TRANSCRIPT_PATH, "GET", partial(self.detail, "transcript")),
                *((paths[send], "POST", partial(self.send, send)) for send in SENDS),
            )
            for slash in (("", "/") if s.trailing_slash == "accepted" else ("",))
        ]
        if s.exchange_login == "etms":
            login = partial(self.login, self.identity.etms_login)
            exchange.append(Route(spec.ETMS_LOGIN_PATH, login, methods=["POST"]))
        token = Route(spec.TOKEN_PATH, partial(self.login, self.identity.issue), methods=["POST"])
        gateway = [
            Route(spec.DIAGNOSTICS_PATH, self.diagnostics, methods=["GET"]),
            Route(spec.PENDING_PLACEMENT_EVENTS_PATH, self.placement_events, methods=["GET"]),
            Route(spec.PEEK_EVENTS_PATH, self.peek_events, methods=["GET"]),
        ]
        identity = FaultMiddleware(self._interface([token]), faults, latency_only=True)
        mounts = [
            Mount("/identity", identity),
            Mount("/gateway", FaultMiddleware(self._interface(gateway), faults)),
            Mount("/exchange", FaultMiddleware(self._interface(exchange), faults)),
        ]
        return with_transport(self._interface(mounts, root=True))

    def _interface(self, routes: Sequence[BaseRoute], *, root: bool = False) -> Starlette:
        handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
            HTTPException: self._refused
        }
        if root:
            handlers[Exception] = self._server_error
        app = Starlette(routes=routes, exception_handlers=handlers)
        app.router.redirect_slashes = False
        return app

    async def _refused(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if isinstance(exc, OAuthError):  # RFC 6749's body, whatever the partner's error style
            return JSONResponse(exc.body, exc.status_code)
        status, said = exc.status_code, exc.detail
        if status == 401 and self.settings.unauthorized_body == "empty":
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        if status == 404:
            said = NOT_FOUND_MESSAGE
        elif status == 405:
            said = f"The requested resource does not support http method '{request.method}'."
        return error_answer(self.settings.error_body, status, said)

    async def _server_error(self, request: Request, exc: Exception) -> Response:
        return error_answer(self.settings.error_body, 500, "An error has occurred.")

    async def login(self, issue: Callable[..., dict[str, object]], request: Request) -> Response:
        """A form in, a token (or an RFC 6749 error) out."""
        if _media_type(request) != "application/x-www-form-urlencoded":
            raise OAuthError(
                "invalid_request", "The body must be application/x-www-form-urlencoded."
            )
        try:
            body = (await _read_body(request)).decode("utf-8")
        except UnicodeDecodeError:
            raise OAuthError("invalid_request", "The body is not UTF-8.") from None
        form = dict(parse_qsl(body, keep_blank_values=True))
        answer = issue(form, ttl=self.settings.faults.token_ttl)
        return JSONResponse(answer, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    def _subscription(self, request: Request) -> None:
        key = request.headers.get(spec.SUBSCRIPTION_KEY_HEADER)
        if not key:
            raise Refusal(MISSING_KEY, 401)
        if not same(key, self.settings.credentials.subscription_key):
            raise Refusal(WRONG_KEY, 401)

    def _gateway(self, request: Request, scope: str) -> None:
        self._subscription(request)
        if self.identity.verify(request.headers.get("authorization")).scope != scope:
            raise Refusal(f"This token does not grant the '{scope}' scope this API needs.", 403)

    def _feed(self, events: list[dict[str, Any]]) -> JSONResponse:
        """Events as this partner shapes them, in an array or in an object holding one."""
        s = self.settings
        shaped = [shaped_event(e, s.event_shape, s.event_time) for e in events]
        if s.event_list == "object":
            return JSONResponse({"events": shaped, "count": len(shaped)})
        return JSONResponse(shaped)

    async def diagnostics(self, request: Request) -> Response:
        self._gateway(request, spec.INTL_SCOPE)
        c = self.settings.credentials
        return JSONResponse(
            {"name": c.caller_name, "customerCode": c.customer_code, "roles": c.caller_role}
        )

    async def placement_events(self, request: Request) -> Response:
        self._gateway(request, spec.INTL_SCOPE)
        with self.state.lock:
            return self._feed(list(self.state.placement_events))

    async def peek_events(self, request: Request) -> Response:
        self._gateway(request, spec.DOMESTIC_SCOPE)
        raw, most = request.query_params.get("Count", "10"), self.settings.max_peek_count
        if not raw.isdigit() or not 1 <= int(raw) <= most:
            raise Refusal(
                f"The value '{raw[:40]}' is not valid for Count: use an integer 1..{most}."
            )
        return self._feed(self.state.peek(int(raw)))

    def _side(self, kind: str, request: Request) -> dict[str, Item]:
        """The items of a side, once the caller is known to have its role."""
        role = SIDES[kind][0]
        if self.settings.exchange_key_required:
            self._subscription(request)
        client = self.identity.verify(request.headers.get("authorization"))
        if client.role not in (role, "exchange"):  # eTMS: both roles
            raise Refusal(f"This client is not authorised for the {role} role.", 403)
        return self.state.requests if kind == "request" else self.state.transcripts

    def _item(self, kind: str, request: Request) -> Item:
        items, raw_id = self._side(kind, request), request.path_params["id"]
        if not VALID_ID.fullmatch(raw_id):
            shown = raw_id[:64].encode("unicode_escape").decode("ascii")
            raise Refusal(f"The value '{shown}' is not valid for RequestID.")
        with self.state.lock:
            item = items.get(raw_id)
        if item is None:
            raise Refusal(SIDES[kind][2])
        return item

    async def listing(self, kind: str, request: Request) -> Response:
        items = self.state.listed(self._side(kind, request))
        if not items and self.settings.empty_list == "message":  # spec §7; "array": 200 []
            raise Refusal(SIDES[kind][1])
        key = self.settings.id_key
        return JSONResponse([{key: i.id, "RequestDate": iso_ms(i.date)} for i in items])

    async def detail(self, kind: str, request: Request) -> Response:
        item, s = self._item(kind, request), self.settings
        row: dict[str, Any] = {s.id_key: item.id}
        if kind == "request":  # §4.4: the transcript detail carries no RequestDate
            row["RequestDate"] = iso_ms(item.date)
        row[s.pescxml_key] = self.state.document(kind, item)
        return JSONResponse(row if s.detail_shape == "object" else [row])

    async def send(self, operation: str, request: Request) -> Response:
        kind, expects, closes_by = SENDS[operation]
        item = self._item(kind, request)
        if _media_type(request) != "application/json":
            raise Refusal("The request body must be sent as application/json.", 415)
        payload = _pescxml(await _read_body(request))
        try:
            document = parse(payload)
        except PescError as exc:
            raise Refusal(f"The PESCXML value is invalid: {exc}") from exc
        if document.message_type != expects:
            raise Refusal(
                f"The PESCXML value is invalid: expected a {expects} document, "
                f"got {document.message_type[:64]}."
            )
        fields = flatten(document)
        tracked = fields["request_tracking_id"]
        if tracked is not None and tracked != item.tracking:
            raise Refusal(
                "The PESCXML value is invalid: its RequestTrackingID does not match the"
                " tracking ID of the request in the path."
            )
        # DESIGN §3: documents of this environment's process code only; one stating none is taken.
        code, expected = fields["process_code"], self.settings.process_code
        if code is not None and code != expected:
            raise Refusal(
                f"The PESCXML value is invalid: its DocumentProcessCode is {code[:64]!r}, and "
                f"this environment accepts {expected} documents only."
            )
        reply = payload
        if operation == "send_transcript":
            reply = self.state.acknowledgment_for(item, document)
        self.state.record_post(operation, item, payload, closes_by)
        return JSONResponse({"RequestID": item.id, "PESCXML": reply})


async def _read_body(request: Request) -> bytes:
    try:
        return await request.body()
    except ClientDisconnect:  # nobody is left to answer, and it is no server error
        raise Refusal("The client disconnected before sending the whole body.") from None


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _pescxml(body: bytes) -> str:
    """The ``PESCXML`` string of a JSON body (spec §2.5), or Refusal."""
    try:
        data: Any = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refusal("The request body is not valid JSON.") from exc
    if not isinstance(data, dict):
        raise Refusal("The request body must be a JSON object with a PESCXML field.")
    value = next((v for k, v in data.items() if k.lower() == "pescxml"), None)
    if value is None:
        raise Refusal("The PESCXML field is required.")
    if not isinstance(value, str) or not value.strip():
        raise Refusal("The PESCXML value is invalid: it must be a non-empty string.")
    return value


TRANSPORT_KEY = "workbench.sandbox.transport"


def with_transport(app: ASGIApp) -> ASGIApp:
    """``app``, given uvicorn's connection in ``scope[TRANSPORT_KEY]``: ASGI cannot drop a
    connection unanswered (``send`` is a method of the cycle whose ``transport`` it is)."""

    async def app_with_transport(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            transport = getattr(getattr(send, "__self__", None), "transport", None)
            scope.setdefault(TRANSPORT_KEY, transport)
        await app(scope, receive, send)

    return app_with_transport


class FaultMiddleware:
    """Applies ``faults``, read at every call so that they can change while serving."""

    def __init__(self, app: ASGIApp, faults: Faults, *, latency_only: bool = False) -> None:
        self.app, self.faults, self.latency_only = app, faults, latency_only
        self.rng = random.Random()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        f = self.faults
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if f.latency_ms > 0:
            send = _answer_after(send, asyncio.get_running_loop().time() + f.latency_ms / 1000)
        if self.latency_only or not re.search(f.path_pattern, scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        roll = self.rng.random()
        if (roll := roll - f.drop_rate) < 0:
            await drop(scope, send)
        elif (roll := roll - f.error_rate) < 0:
            status = self.rng.choice((500, 503))
            text = "An error has occurred." if status == 500 else "The service is unavailable."
            await JSONResponse({"Message": text}, status)(scope, receive, send)
        elif (roll := roll - f.rate_limit_rate) < 0:
            text = "Rate limit is exceeded. Try again later."
            wait = {"Retry-After": str(max(0, math.ceil(f.retry_after_s)))}
            await JSONResponse({"Message": text}, 429, wait)(scope, receive, send)
        elif roll - f.drop_after_rate < 0:
            # The operation runs (and a POST takes effect), but its answer never arrives.
            await self.app(scope, receive, _discard)
            await drop(scope, send)
        else:
            await self.app(scope, receive, send)


async def _discard(message: Message) -> None:
    pass


def _answer_after(send: Send, deadline: float) -> Send:
    """``send`` holding the answer until ``deadline`` (latency counts from the arrival)."""

    async def delayed(message: Message) -> None:
        if message["type"] == "http.response.start":
            await until(deadline)
        await send(message)

    delayed.deadline = deadline  # type: ignore[attr-defined]  # for drop()
    return delayed


async def until(deadline: float | None) -> None:
    """Wait until ``deadline`` on the loop's clock (None: no wait)."""
    wait = 0 if deadline is None else deadline - asyncio.get_running_loop().time()
    if wait > 0:
        await asyncio.sleep(wait)


async def drop(scope: Scope, send: Send) -> None:
    """Close the connection without an answer, once the latency ``send`` holds is over."""
    await until(getattr(send, "deadline", None))
    transport = scope.get(TRANSPORT_KEY)
    if transport is None:  # not under uvicorn: the nearest thing is an exception
        raise ConnectionAbortedError("sandbox fault: connection dropped")
    transport.abort()
    await asyncio.sleep(0.01)
