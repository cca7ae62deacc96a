"""What a call's answer means: its safe JSON (:func:`decoded`), or one error of
:mod:`workbench.errors` for a failed call.

Messages carry the operation, the partner's own words (redacted) and what to do. The spec's §7
"nothing to list" messages are not errors: the caller names them as ``empty``.

>>> normal("No transcripts found.") == normal("no transcripts found")
True
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import httpx

from workbench.config import Profile
from workbench.errors import (
    AuthError,
    InvalidValue,
    NotFound,
    PartnerError,
    TransportError,
    UnreadableAnswer,
)
from workbench.partner_json import loads
from workbench.redact import Redactor
from workbench.retries import NOT_SENT, RETRY_STATUSES, SAFE_METHODS
from workbench.spec import UNKNOWN_REQUEST_ID, UNKNOWN_TRANSCRIPT_ID

BODY_IN_ERRORS = 2000
# How much of an error answer is masked before it is cut to what a message shows: well past
# the cut, so that no secret straddles it.
MASKED_BEFORE_CUT = 16 * 1024
_UNKNOWN_ID = frozenset({UNKNOWN_REQUEST_ID, UNKNOWN_TRANSCRIPT_ID})


def empty_or_raise(
    response: httpx.Response,
    *,
    profile: Profile,
    redactor: Redactor,
    role: str,
    operation: str,
    empty: Collection[str] = (),
    subject: str | None = None,
) -> None:
    """``None`` for a 400 whose message is in ``empty``; otherwise raise the matching error."""
    status, said = response.status_code, message(response, redactor)
    body = redacted_body(response, redactor)
    about = f" for {subject}" if subject else ""
    if status == 400:
        if normal(said) in {normal(m) for m in empty}:
            return None
        if normal(said) in {normal(m) for m in _UNKNOWN_ID}:
            raise NotFound(
                f"{operation}: the partner does not know {subject or 'this id'}: {said}",
                status=status,
                body=body,
            )
        if "invalid" in said.lower() or "not valid" in said.lower():
            raise InvalidValue(
                f"{operation}: the partner refused a value{about}: {said}", status=status, body=body
            )
    if status == 401:
        raise AuthError(unauthorized(profile, role, said))
    method = response.request.method
    hint = {
        403: f"the {role} credentials may not do this; check the {role} client and scope",
        404: f"nothing at that address; check the base URL of the {role} interface",
        429: "the partner is rate limiting; wait and try again",
    }.get(status, "the partner failed; try again later" if status >= 500 else "")
    if method not in SAFE_METHODS and status in RETRY_STATUSES:
        hint += "; the send was not retried, so check the pending list before sending again"
    retried = method in SAFE_METHODS and status in RETRY_STATUSES
    tried = f" after {profile.max_attempts} attempts" if retried else ""
    raise PartnerError(
        f"{operation}: the {role} interface answered {status}{tried}{about}: {said}"
        + (f" ({hint})" if hint else ""),
        status=status,
        body=body,
    )


def decoded(response: httpx.Response, *, redactor: Redactor, role: str, operation: str) -> Any:
    """The JSON of a successful answer, decoded safely (:mod:`workbench.partner_json`).

    ``UnreadableAnswer`` (with ``status`` and the redacted ``body``) when it is not safe JSON,
    or is ``null``: no partner operation answers nothing with a 2xx.
    """
    status = response.status_code
    try:
        data = loads(response.content)
    except ValueError as exc:
        problem = str(exc)
    else:
        if data is not None:
            return data
        problem = "null"
    raise UnreadableAnswer(
        f"{operation}: the {role} interface answered {status} with {problem}. Nothing was "
        "read from it; try again later, and report it to the partner if it persists.",
        status=status,
        body=redacted_body(response, redactor),
    )


def unauthorized(profile: Profile, role: str, said: str) -> str:
    """What a 401 that survived a token renewal means, and what to check, naming the settings
    where they came from (a variable, or the profiles file's key)."""
    settings = profile.role(role)
    if settings.grant == "static":
        return (
            f"The {role} interface refused the static token (401: {said}). It may have "
            f"expired: set a fresh one in {settings.where('token')}, or configure a login "
            "instead (docs/configuration.md)."
        )
    account = settings.where("username") if settings.grant == "password" else None
    account = account or settings.where("client_id")
    check = f"that the account of {account} is entitled to this interface"
    check = f"{settings.where('subscription_key')}, and {check}"
    return (
        f"The {role} interface refused the request twice (401: {said}), even with a fresh "
        f"token. Check {check}."
    )


def transport_failure(
    exc: httpx.TransportError,
    *,
    redactor: Redactor,
    interface: str,
    operation: str,
    attempts: int,
    retry_unsafe: bool = False,
) -> TransportError:
    """The network failed: say whether a send may have reached the partner."""
    request = _request_of(exc)
    where = redactor.url(str(request.url)) if request is not None else "the partner"
    what = f"{type(exc).__name__}: {redactor.text(str(exc)) or 'no detail'}"
    method = request.method if request is not None else "GET"
    if method not in SAFE_METHODS and not retry_unsafe and not isinstance(exc, NOT_SENT):
        return TransportError(
            f"{operation}: the connection to {where} failed after the request was sent "
            f"({what}). The partner may or may not have processed it: it was not resent. "
            "Check the pending list before sending again.",
            may_have_reached=True,
        )
    return TransportError(
        f"{operation}: could not reach the {interface} interface at {where} after "
        f"{attempts} attempt(s) ({what}). Check the network and the base URL settings.",
        may_have_reached=method not in SAFE_METHODS and not isinstance(exc, NOT_SENT),
    )


def message(response: httpx.Response, redactor: Redactor) -> str:
    """The partner's own words: ``Message`` (spec §7), an OAuth description, or the text."""
    try:
        data = loads(response.content)
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("Message", "message", "error_description", "error", "detail", "title"):
            if isinstance(data.get(key), str) and data[key].strip():
                return redactor.text(data[key].strip())
    # Masked, then cut: a secret across the cut would show in part. What is masked is bounded
    # well past the cut, so a huge error page costs no more than a small one.
    text = redactor.text(response.text.strip()[:MASKED_BEFORE_CUT])[:300]
    return text or f"HTTP {response.status_code} with no message"


def redacted_body(response: httpx.Response, redactor: Redactor) -> str:
    content_type = response.headers.get("content-type")
    return redactor.body(response.content[:MASKED_BEFORE_CUT], content_type)[:BODY_IN_ERRORS]


def normal(text: str) -> str:
    """A message as compared: trimmed, no final period, case-folded."""
    return text.strip().rstrip(".").strip().casefold()


def _request_of(exc: httpx.TransportError) -> httpx.Request | None:
    try:
        return exc.request
    except RuntimeError:  # httpx attaches no request to some errors
        return None
