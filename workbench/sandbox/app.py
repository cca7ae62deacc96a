"""The sandbox's ASGI application: identity server, gateway and transcript exchange (spec §4).

``build_app(sandbox_core)`` returns one Starlette app that mounts the three interfaces under
``/identity``, ``/gateway`` and ``/exchange`` (three base URLs), plus ``/_sandbox`` controls.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench import spec
from workbench.errors import PescError
from workbench.pesc import flatten, parse
from workbench.sandbox.events import shaped_event
from workbench.sandbox.faults import FaultMiddleware, with_transport
from workbench.sandbox.settings import SandboxSettings
from workbench.sandbox.state import Item, PartnerState, iso_ms
from workbench.sandbox.tokens import Grant, IdentityServer, OAuthError, TokenRejected

Endpoint = Callable[[Request], Awaitable[Response]]
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


class Refusal(Exception):
    """A request the sandbox refuses: ``status`` and the message become its 4xx answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def error_answer(style: str, status: int, text: str) -> Response:
    """An error answer as a partner writes them (``error_body``): ``{"Message": text}``, RFC
    7807 problem details with the text in ``detail`` (as ASP.NET Core writes them), or the
    text alone."""
    if style == "problem":
        problem = {
            "type": "about:blank",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": text,
        }
        return JSONResponse(problem, status_code=status, media_type="application/problem+json")
    if style == "text":
        return PlainTextResponse(text, status_code=status)
    return JSONResponse({"Message": text}, status_code=status)


@dataclass
class Core:
    """Everything the handlers share."""

    settings: SandboxSettings
    state: PartnerState
    identity: IdentityServer
    hits: Counter[tuple[str, str]]

    @property
    def token_ttl(self) -> int:
        override = self.settings.faults.token_ttl
        return override if override is not None else self.settings.token_ttl


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Refusal(f"The request body is larger than {limit} bytes.", 413)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Refusal(f"The request body is larger than {limit} bytes.", 413)
            chunks.append(chunk)
    except ClientDisconnect:
        # The client hung up mid-body: nobody is left to answer, and it is no server error.
        raise Refusal("The client disconnected before sending the whole body.") from None
    return b"".join(chunks)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


# -- identity server (§4.1) --------------------------------------------------------------


def _login(core: Core, issue: Callable[..., dict[str, object]]) -> Endpoint:
    """A login endpoint: a form in, a token (or an RFC 6749 error) out."""

    async def login(request: Request) -> Response:
        if _media_type(request) != "application/x-www-form-urlencoded":
            err = OAuthError(
                "invalid_request", "The body must be application/x-www-form-urlencoded."
            )
            return JSONResponse(err.body(), status_code=400)
        try:
            body = await _read_body(request, 64_000)
            form = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except Refusal as exc:
            return JSONResponse({"error": "invalid_request", "error_description": str(exc)}, 413)
        except UnicodeDecodeError:
            err = OAuthError("invalid_request", "The body is not UTF-8.")
            return JSONResponse(err.body(), status_code=400)
        try:
            answer = issue(form, ttl=core.token_ttl)
        except OAuthError as err:
            return JSONResponse(err.body(), status_code=err.status)
        return JSONResponse(answer, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    return login


def identity_routes(core: Core) -> list[Route]:
    return [Route(spec.TOKEN_PATH, _login(core, core.identity.issue), methods=["POST"])]


# -- gateway (§4.2, §4.3, §5) ------------------------------------------------------------


def _gateway_grant(core: Core, request: Request, scope: str) -> Grant:
    key = request.headers.get(spec.SUBSCRIPTION_KEY_HEADER)
    if not key:
        raise Refusal(MISSING_KEY, 401)
    if key != core.settings.credentials.subscription_key:
        raise Refusal(WRONG_KEY, 401)
    grant = _bearer(core, request)
    if grant.scope != scope:
        raise Refusal(f"This token does not grant the '{scope}' scope this API needs.", 403)
    return grant


def _bearer(core: Core, request: Request) -> Grant:
    try:
        return core.identity.verify(request.headers.get("authorization"))
    except TokenRejected as exc:
        raise Refusal(str(exc), 401) from exc


def gateway_routes(core: Core) -> list[Route]:
    creds = core.settings.credentials

    async def diagnostics(request: Request) -> Response:
        _gateway_grant(core, request, spec.INTL_SCOPE)
        return JSONResponse(
            {
                "name": creds.caller_name,
                "customerCode": creds.customer_code,
                "roles": creds.caller_role,
            }
        )

    def feed(events: list[dict[str, Any]]) -> JSONResponse:
        """Events as this partner shapes them, in an array or in an object holding one."""
        s = core.settings
        shaped = [shaped_event(e, s.event_shape, s.event_time) for e in events]
        if s.event_list == "object":
            return JSONResponse({"events": shaped, "count": len(shaped)})
        return JSONResponse(shaped)

    async def pending_placement_events(request: Request) -> Response:
        _gateway_grant(core, request, spec.INTL_SCOPE)
        with core.state.lock:
            events = list(core.state.placement_events)
        return feed(events)

    async def peek_events(request: Request) -> Response:
        _gateway_grant(core, request, spec.DOMESTIC_SCOPE)
        raw = request.query_params.get("Count")
        count, most = 10, core.settings.max_peek_count
        if raw is not None:
            if not raw.isdigit() or not 1 <= int(raw) <= most:
                shown = raw[:40]
                raise Refusal(
                    f"The value '{shown}' is not valid for Count: use an integer 1..{most}."
                )
            count = int(raw)
        return feed(core.state.peek(count))

    return [
        Route(spec.DIAGNOSTICS_PATH, diagnostics, methods=["GET"]),
        Route(spec.PENDING_PLACEMENT_EVENTS_PATH, pending_placement_events, methods=["GET"]),
        Route(spec.PEEK_EVENTS_PATH, peek_events, methods=["GET"]),
    ]


# -- transcript exchange (§4.4, §7) ------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One side of the exchange: the role it needs and the items it lists."""

    role: str
    kind: str  # "request" or "transcript"
    empty: str  # the listing's answer when nothing is pending
    unknown: str  # the answer for an id the partner does not know

    def table(self, state: PartnerState) -> dict[str, Item]:
        return state.requests if self.kind == "request" else state.transcripts


SUPPLIER = Side("supplier", "request", spec.NO_REQUESTS_FOUND, spec.UNKNOWN_REQUEST_ID)
CONSUMER = Side("consumer", "transcript", spec.NO_TRANSCRIPTS_FOUND, spec.UNKNOWN_TRANSCRIPT_ID)


@dataclass(frozen=True)
class Operation:
    """A POST on one item: the document it accepts and how it closes the item."""

    name: str
    side: Side
    expects: str  # the root local name accepted in the POST body
    closes_by: str


SEND_RESPONSE = Operation("send_response", SUPPLIER, "TranscriptResponse", "response")
SEND_TRANSCRIPT = Operation("send_transcript", SUPPLIER, "CollegeTranscript", "transcript")
SEND_ACKNOWLEDGMENT = Operation("send_acknowledgment", CONSUMER, "Acknowledgment", "acknowledgment")


def _require_role(core: Core, request: Request, role: str) -> None:
    if core.settings.exchange_key_required:
        key = request.headers.get(spec.SUBSCRIPTION_KEY_HEADER)
        if not key:
            raise Refusal(MISSING_KEY, 401)
        if key != core.settings.credentials.subscription_key:
            raise Refusal(WRONG_KEY, 401)
    # An eTMS account serves both roles.
    if _bearer(core, request).role not in (role, "exchange"):
        raise Refusal(f"This client is not authorised for the {role} role.", 403)


def _find(core: Core, side: Side, raw_id: str) -> Item:
    if not VALID_ID.fullmatch(raw_id):
        shown = raw_id[:64].encode("unicode_escape").decode("ascii")
        raise Refusal(f"The value '{shown}' is not valid for RequestID.")
    with core.state.lock:
        item = side.table(core.state).get(raw_id)
    if item is None:
        raise Refusal(side.unknown)
    return item


async def _listing(core: Core, side: Side, request: Request) -> Response:
    _require_role(core, request, side.role)
    rows = core.state.pending(side.table(core.state))
    if not rows and core.settings.empty_list == "message":  # spec §7; "array": 200 []
        raise Refusal(side.empty)
    return JSONResponse(rows)


async def _detail(core: Core, side: Side, request: Request) -> Response:
    _require_role(core, request, side.role)
    item = _find(core, side, request.path_params["id"])
    settings = core.settings
    row: dict[str, Any] = {settings.id_key: item.id}
    if side is SUPPLIER:  # §4.4: the transcript detail carries no RequestDate
        row["RequestDate"] = iso_ms(item.date)
    row[settings.pescxml_key] = core.state.document(side.kind, item)
    return JSONResponse(row if settings.detail_shape == "object" else [row])


async def _send(core: Core, op: Operation, request: Request) -> Response:
    _require_role(core, request, op.side.role)
    item = _find(core, op.side, request.path_params["id"])
    if _media_type(request) != "application/json":
        raise Refusal("The request body must be sent as application/json.", 415)
    payload = _pescxml(await _read_body(request, core.settings.max_body_bytes))
    try:
        document = parse(payload)
    except PescError as exc:
        raise Refusal(f"The PESCXML value is invalid: {exc}") from exc
    if document.message_type != op.expects:
        raise Refusal(
            f"The PESCXML value is invalid: expected a {op.expects} document, "
            f"got {document.message_type[:64]}."
        )
    fields = flatten(document)
    tracked = fields["request_tracking_id"]
    if tracked is not None and tracked != item.tracking:
        raise Refusal(
            "The PESCXML value is invalid: its RequestTrackingID does not match the"
            " tracking ID of the request in the path."
        )
    # DESIGN §3: an environment takes documents of its own process code only (OCAS' UAT
    # requires TEST); a document that states none is taken.
    code, expected = fields["process_code"], core.settings.process_code
    if code is not None and code != expected:
        raise Refusal(
            f"The PESCXML value is invalid: its DocumentProcessCode is {code[:64]!r}, and this "
            f"environment accepts {expected} documents only."
        )
    reply = core.state.acknowledgment_for(item, document) if op is SEND_TRANSCRIPT else payload
    core.state.record_post(op.name, item, payload, reply, op.closes_by)
    return JSONResponse({"RequestID": item.id, "PESCXML": reply})


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


def exchange_routes(core: Core) -> list[Route]:
    # DESIGN §3: the send routes in the one spelling this partner serves; the other is a 404.
    sends = spec.SEND_ROUTES[core.settings.send_routes]
    routes = [
        (spec.SUPPLIER_PENDING_PATH, "GET", partial(_listing, core, SUPPLIER)),
        (spec.SUPPLIER_REQUEST_PATH, "GET", partial(_detail, core, SUPPLIER)),
        (sends[SEND_RESPONSE.name], "POST", partial(_send, core, SEND_RESPONSE)),
        (sends[SEND_TRANSCRIPT.name], "POST", partial(_send, core, SEND_TRANSCRIPT)),
        (spec.CONSUMER_PENDING_PATH, "GET", partial(_listing, core, CONSUMER)),
        (spec.CONSUMER_TRANSCRIPT_PATH, "GET", partial(_detail, core, CONSUMER)),
        (spec.CONSUMER_ACKNOWLEDGMENT_PATH, "POST", partial(_send, core, SEND_ACKNOWLEDGMENT)),
    ]
    # §4.4: "a trailing slash may be present"; answered in place, never redirected (or, by
    # trailing_slash, not found).
    slashes = ("", "/") if core.settings.trailing_slash == "accepted" else ("",)
    served = [
        Route(path + slash, handler, methods=[method])
        for path, method, handler in routes
        for slash in slashes
    ]
    if core.settings.exchange_login == "etms":
        login = _login(core, core.identity.etms_login)
        served.append(Route(spec.ETMS_LOGIN_PATH, login, methods=["POST"]))
    return served


# -- sandbox controls ----------------------------------------------------------------------


def control_routes(core: Core) -> list[Route]:
    async def advance(request: Request) -> Response:
        try:
            hours = float(request.query_params.get("hours", "1"))
        except ValueError:
            raise Refusal("hours must be a number.") from None
        if hours < 0:
            raise Refusal("hours must not be negative.")
        return JSONResponse({"added": core.state.advance(hours), "now": core.state.now.isoformat()})

    async def status(request: Request) -> Response:
        state = core.state
        with state.lock:
            return JSONResponse(
                {
                    "now": state.now.isoformat(),
                    "open_requests": sum(i.open for i in state.requests.values()),
                    "open_transcripts": sum(i.open for i in state.transcripts.values()),
                    "placement_events": len(state.placement_events),
                    "domestic_events": len(state.domestic_events),
                    "received": len(state.received),
                }
            )

    return [
        Route("/advance", advance, methods=["POST"]),
        Route("/status", status, methods=["GET"]),
    ]


# -- assembly ------------------------------------------------------------------------------


def _not_found(core: Core) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def not_found(request: Request, exc: Exception) -> Response:
        style = core.settings.error_body
        if isinstance(exc, HTTPException) and exc.status_code == 405:
            said = f"The requested resource does not support http method '{request.method}'."
            return error_answer(style, 405, said)
        if isinstance(exc, HTTPException) and exc.status_code != 404:
            return error_answer(style, exc.status_code, str(exc.detail))
        return error_answer(style, 404, NOT_FOUND_MESSAGE)

    return not_found


def _refused(core: Core) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refusal)
        if exc.status == 401 and core.settings.unauthorized_body == "empty":
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        return error_answer(core.settings.error_body, exc.status, str(exc))

    return refused


def _server_error(core: Core) -> Callable[[Request, Exception], Awaitable[Response]]:
    async def server_error(request: Request, exc: Exception) -> Response:
        return error_answer(core.settings.error_body, 500, "An error has occurred.")

    return server_error


def _interface(core: Core, routes: list[Route]) -> Starlette:
    handlers = {Refusal: _refused(core), HTTPException: _not_found(core)}
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.router.redirect_slashes = False
    return app


class _Hits:
    """Counts (method, path below the interface's base) for every request that arrives."""

    def __init__(self, app: ASGIApp, hits: Counter[tuple[str, str]]) -> None:
        self.app, self.hits = app, hits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            for prefix in ("/identity", "/gateway", "/exchange"):
                if path.startswith(prefix + "/"):
                    path = path[len(prefix) :]
                    break
            self.hits[(scope["method"], path)] += 1
        await self.app(scope, receive, send)


def build_app(core: Core) -> ASGIApp:
    """The ASGI app serving all three interfaces of one sandbox."""
    faults = core.settings.faults
    identity = FaultMiddleware(_interface(core, identity_routes(core)), faults, latency_only=True)
    gateway = FaultMiddleware(_interface(core, gateway_routes(core)), faults)
    exchange = FaultMiddleware(_interface(core, exchange_routes(core)), faults)
    root = Starlette(
        routes=[
            Mount("/identity", app=identity),
            Mount("/gateway", app=gateway),
            Mount("/exchange", app=exchange),
            Mount("/_sandbox", app=_interface(core, control_routes(core))),
        ],
        exception_handlers={HTTPException: _not_found(core), Exception: _server_error(core)},
    )
    root.router.redirect_slashes = False
    return with_transport(_Hits(root, core.hits))
