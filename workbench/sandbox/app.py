"""The sandbox's ASGI application: identity server, gateway and transcript exchange (spec §4).

``build_app(sandbox_core)`` returns one Starlette app that mounts the three interfaces under
``/identity``, ``/gateway`` and ``/exchange`` (three base URLs), plus ``/_sandbox`` controls.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from workbench import spec
from workbench.sandbox.faults import CaptureTransport, FaultMiddleware
from workbench.sandbox.intake import (
    BadPayload,
    local_name,
    parse_document,
    pescxml_from_body,
    tracking_id,
)
from workbench.sandbox.settings import SandboxSettings
from workbench.sandbox.state import Item, PartnerState, iso_ms
from workbench.sandbox.tokens import Grant, IdentityServer, OAuthError, TokenRejected

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


def message(status: int, text: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"Message": text}, status_code=status, headers=headers)


class Refusal(Exception):
    """Stops a handler with a ``{"Message": ...}`` answer."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


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


Handler = Callable[[Request], Awaitable[Response]]


def _refusals(handler: Handler) -> Handler:
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except Refusal as exc:
            return message(exc.status, exc.text)
        except BadPayload as exc:
            return message(exc.status, str(exc))

    return wrapped


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Refusal(413, f"The request body is larger than {limit} bytes.")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Refusal(413, f"The request body is larger than {limit} bytes.")
            chunks.append(chunk)
    except ClientDisconnect:
        # The client hung up mid-body: nobody is left to answer, and it is no server error.
        raise Refusal(400, "The client disconnected before sending the whole body.") from None
    return b"".join(chunks)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


# -- identity server (§4.1) --------------------------------------------------------------


def identity_routes(core: Core) -> list[Route]:
    async def token(request: Request) -> Response:
        if _media_type(request) != "application/x-www-form-urlencoded":
            err = OAuthError(
                "invalid_request", "The body must be application/x-www-form-urlencoded."
            )
            return JSONResponse(err.body(), status_code=400)
        try:
            body = await _read_body(request, 64_000)
            form = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
        except Refusal as exc:
            return JSONResponse({"error": "invalid_request", "error_description": exc.text}, 413)
        except UnicodeDecodeError:
            err = OAuthError("invalid_request", "The body is not UTF-8.")
            return JSONResponse(err.body(), status_code=400)
        try:
            answer = core.identity.issue(form, ttl=core.token_ttl)
        except OAuthError as err:
            return JSONResponse(err.body(), status_code=err.status)
        return JSONResponse(answer, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})

    return [Route(spec.TOKEN_PATH, token, methods=["POST"])]


# -- gateway (§4.2, §4.3, §5) ------------------------------------------------------------


def _gateway_grant(core: Core, request: Request, scope: str) -> Grant:
    key = request.headers.get(spec.SUBSCRIPTION_KEY_HEADER)
    if not key:
        raise Refusal(401, MISSING_KEY)
    if key != core.settings.credentials.subscription_key:
        raise Refusal(401, WRONG_KEY)
    grant = _bearer(core, request)
    if grant.scope != scope:
        raise Refusal(403, f"This token does not grant the '{scope}' scope this API needs.")
    return grant


def _bearer(core: Core, request: Request) -> Grant:
    try:
        return core.identity.verify(request.headers.get("authorization"))
    except TokenRejected as exc:
        raise Refusal(401, str(exc)) from exc


def gateway_routes(core: Core) -> list[Route]:
    creds = core.settings.credentials

    @_refusals
    async def diagnostics(request: Request) -> Response:
        _gateway_grant(core, request, spec.INTL_SCOPE)
        return JSONResponse(
            {
                "name": creds.caller_name,
                "customerCode": creds.customer_code,
                "roles": creds.caller_role,
            }
        )

    @_refusals
    async def pending_placement_events(request: Request) -> Response:
        _gateway_grant(core, request, spec.INTL_SCOPE)
        with core.state.lock:
            events = list(core.state.placement_events)
        return JSONResponse(events)

    @_refusals
    async def peek_events(request: Request) -> Response:
        _gateway_grant(core, request, spec.DOMESTIC_SCOPE)
        raw = request.query_params.get("Count")
        count, most = 10, core.settings.max_peek_count
        if raw is not None:
            if not raw.isdigit() or not 1 <= int(raw) <= most:
                shown = raw[:40]
                raise Refusal(
                    400, f"The value '{shown}' is not valid for Count: use an integer 1..{most}."
                )
            count = int(raw)
        with core.state.lock:
            events = sorted(core.state.domestic_events, key=lambda e: e["occurredAt"])[:count]
        return JSONResponse(events)

    return [
        Route(spec.DIAGNOSTICS_PATH, diagnostics, methods=["GET"]),
        Route(spec.PENDING_PLACEMENT_EVENTS_PATH, pending_placement_events, methods=["GET"]),
        Route(spec.PEEK_EVENTS_PATH, peek_events, methods=["GET"]),
    ]


# -- transcript exchange (§4.4, §7) ------------------------------------------------------


@dataclass(frozen=True)
class Operation:
    name: str
    role: str
    items: str  # "requests" or "transcripts"
    expects: tuple[str, ...]  # root local names accepted in the POST body
    closes_by: str


SEND_RESPONSE = Operation(
    "send_response", "supplier", "requests", ("TranscriptResponse",), "response"
)
SEND_TRANSCRIPT = Operation(
    "send_transcript", "supplier", "requests", ("CollegeTranscript",), "transcript"
)
SEND_ACKNOWLEDGMENT = Operation(
    "send_acknowledgment", "consumer", "transcripts", ("Acknowledgment",), "acknowledgment"
)


def exchange_routes(core: Core) -> list[Route]:
    state, settings = core.state, core.settings

    def require_role(request: Request, role: str) -> None:
        grant = _bearer(core, request)
        if grant.role != role:
            raise Refusal(403, f"This client is not authorised for the {role} role.")

    def find(items: str, raw_id: str) -> Item:
        if not VALID_ID.fullmatch(raw_id):
            shown = raw_id[:64].encode("unicode_escape").decode("ascii")
            raise Refusal(400, f"The value '{shown}' is not valid for RequestID.")
        table = state.requests if items == "requests" else state.transcripts
        with state.lock:
            item = table.get(raw_id)
        if item is None:
            text = spec.UNKNOWN_REQUEST_ID if items == "requests" else spec.UNKNOWN_TRANSCRIPT_ID
            raise Refusal(400, text)
        return item

    def listing(role: str, items: str, empty: str) -> Handler:
        @_refusals
        async def handler(request: Request) -> Response:
            require_role(request, role)
            table = state.requests if items == "requests" else state.transcripts
            rows = state.pending(table)
            if not rows:
                raise Refusal(400, empty)
            return JSONResponse(rows)

        return handler

    def detail(role: str, items: str) -> Handler:
        @_refusals
        async def handler(request: Request) -> Response:
            require_role(request, role)
            item = find(items, request.path_params["id"])
            kind = "request" if items == "requests" else "transcript"
            key = settings.faults.pescxml_key
            row: dict[str, Any] = {settings.id_key: item.id}
            if items == "requests":  # §4.4: the transcript detail carries no RequestDate
                row["RequestDate"] = iso_ms(item.date)
            row[key] = state.document(kind, item)
            return JSONResponse(row if settings.detail_shape == "object" else [row])

        return handler

    def send(op: Operation) -> Handler:
        @_refusals
        async def handler(request: Request) -> Response:
            require_role(request, op.role)
            item = find(op.items, request.path_params["id"])
            if _media_type(request) != "application/json":
                raise Refusal(415, "The request body must be sent as application/json.")
            body = await _read_body(request, settings.max_body_bytes)
            payload = pescxml_from_body(body)
            root = parse_document(payload)
            root_name = local_name(root)
            if root_name not in op.expects:
                raise Refusal(
                    400,
                    f"The PESCXML value is invalid: expected a {' or '.join(op.expects)}"
                    f" document, got {root_name[:64]}.",
                )
            tracked = tracking_id(root)
            if tracked is not None and tracked != item.tracking:
                raise Refusal(
                    400,
                    "The PESCXML value is invalid: its RequestTrackingID does not match the"
                    " tracking ID of the request in the path.",
                )
            reply = payload
            if op is SEND_TRANSCRIPT:
                try:
                    reply = state.acknowledgment_for(item, root)
                except ValueError as exc:
                    raise Refusal(400, f"The PESCXML value is invalid: {exc}") from exc
            state.record_post(op.name, item, payload, reply, op.closes_by)
            return JSONResponse({"RequestID": item.id, "PESCXML": reply})

        return handler

    routes = [
        (
            spec.SUPPLIER_PENDING_PATH,
            listing("supplier", "requests", spec.NO_REQUESTS_FOUND),
            "GET",
        ),
        (spec.SUPPLIER_REQUEST_PATH, detail("supplier", "requests"), "GET"),
        (spec.SUPPLIER_RESPONSES_PATH, send(SEND_RESPONSE), "POST"),
        (spec.SUPPLIER_TRANSCRIPTS_PATH, send(SEND_TRANSCRIPT), "POST"),
        (
            spec.CONSUMER_PENDING_PATH,
            listing("consumer", "transcripts", spec.NO_TRANSCRIPTS_FOUND),
            "GET",
        ),
        (spec.CONSUMER_TRANSCRIPT_PATH, detail("consumer", "transcripts"), "GET"),
        (spec.CONSUMER_ACKNOWLEDGMENT_PATH, send(SEND_ACKNOWLEDGMENT), "POST"),
    ]
    # §4.4: "a trailing slash may be present"; answered in place, never redirected.
    return [
        Route(path + slash, handler, methods=[method])
        for path, handler, method in routes
        for slash in ("", "/")
    ]


# -- sandbox controls ----------------------------------------------------------------------


def control_routes(core: Core) -> list[Route]:
    async def advance(request: Request) -> Response:
        try:
            hours = float(request.query_params.get("hours", "1"))
        except ValueError:
            return message(400, "hours must be a number.")
        if hours < 0:
            return message(400, "hours must not be negative.")
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


async def _not_found(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException) and exc.status_code == 405:
        return message(
            405, f"The requested resource does not support http method '{request.method}'."
        )
    if isinstance(exc, HTTPException) and exc.status_code != 404:
        return message(exc.status_code, str(exc.detail))
    return message(404, NOT_FOUND_MESSAGE)


async def _server_error(request: Request, exc: Exception) -> Response:
    return message(500, "An error has occurred.")


def _interface(routes: list[Route]) -> Starlette:
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _not_found, 404: _not_found, 405: _not_found},
    )
    app.router.redirect_slashes = False
    return app


class _Hits:
    """Counts (method, path below the interface's base) for every request that arrives."""

    def __init__(self, app: Any, hits: Counter[tuple[str, str]]) -> None:
        self.app, self.hits = app, hits

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            for prefix in ("/identity", "/gateway", "/exchange"):
                if path.startswith(prefix + "/"):
                    path = path[len(prefix) :]
                    break
            self.hits[(scope["method"], path)] += 1
        await self.app(scope, receive, send)


def build_app(core: Core) -> Any:
    """The ASGI app serving all three interfaces of one sandbox."""
    faults = core.settings.faults
    identity = FaultMiddleware(_interface(identity_routes(core)), faults, latency_only=True)
    gateway = FaultMiddleware(_interface(gateway_routes(core)), faults)
    exchange = FaultMiddleware(_interface(exchange_routes(core)), faults)
    root = Starlette(
        routes=[
            Mount("/identity", app=identity),
            Mount("/gateway", app=gateway),
            Mount("/exchange", app=exchange),
            Mount("/_sandbox", app=_interface(control_routes(core))),
        ],
        exception_handlers={
            HTTPException: _not_found,
            404: _not_found,
            405: _not_found,
            Exception: _server_error,
        },
    )
    root.router.redirect_slashes = False
    return CaptureTransport(_Hits(root, core.hits))
