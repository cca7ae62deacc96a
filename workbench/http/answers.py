"""What a partner's answer means: its safe JSON, its shape (DESIGN §3), or its typed error."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from workbench.config import Profile
from workbench.errors import (
    AuthError,
    InvalidParameter,
    InvalidValue,
    NotFound,
    PartnerError,
    UnreadableAnswer,
)
from workbench.http.events import field_value, keys_named
from workbench.http.limits import RETRY_STATUSES, SAFE_METHODS
from workbench.http.masking import Redactor
from workbench.spec import UNKNOWN_REQUEST_ID, UNKNOWN_TRANSCRIPT_ID

MAX_DEPTH = 64  # partner answers are three or four levels deep
MAX_ID_LENGTH = 128
BODY_IN_ERRORS = 2000
MASKED_BEFORE_CUT = 16 * 1024  # masked before the cut: no secret straddles it
REQUEST_ID = "RequestID"
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_UNKNOWN_ID = {UNKNOWN_REQUEST_ID, UNKNOWN_TRANSCRIPT_ID}
HEX_GUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)


def answer_value(
    response: httpx.Response,
    profile: Profile,
    redactor: Redactor,
    role: str,
    operation: str,
    *,
    empty: Collection[str] = (),
    subject: str | None = None,
) -> Any:
    """The safe JSON of a 2xx answer; ``None`` for a 400 whose message is in ``empty`` (spec §7);
    else the typed error of the answer, in the partner's words."""
    status = response.status_code
    if response.is_success:
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
            body=_body(response, redactor),
        )
    said, body = message(response, redactor), _body(response, redactor)
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
    hint = {
        403: f"the {role} credentials may not do this; check the {role} client and scope",
        404: f"nothing at that address; check the base URL of the {role} interface",
        429: "the partner is rate limiting; wait and try again",
    }.get(status, "the partner failed; try again later" if status >= 500 else "")
    retried = status in RETRY_STATUSES and response.request.method in SAFE_METHODS
    if status in RETRY_STATUSES and not retried:
        hint += "; the send was not retried, so check the pending list before sending again"
    tried = f" after {profile.max_attempts} attempts" if retried else ""
    raise PartnerError(
        f"{operation}: the {role} interface answered {status}{tried}{about}: {said}"
        + (f" ({hint})" if hint else ""),
        status=status,
        body=body,
    )


def unauthorized(profile: Profile, role: str, said: str) -> str:
    """What a 401 that survived a token renewal means, naming where the settings are set."""
    settings = profile.role(role)
    if settings.grant == "static":
        return (
            f"The {role} interface refused the static token (401: {said}). It may have "
            f"expired: set a fresh one in {settings.where('token')}, or configure a login "
            "instead (docs/configuration.md)."
        )
    account = settings.where("username" if settings.grant == "password" else "client_id")
    return (
        f"The {role} interface refused the request twice (401: {said}), even with a fresh "
        f"token. Check {settings.where('subscription_key')}, and that the account of {account} "
        "is entitled to this interface."
    )


def message(response: httpx.Response, redactor: Redactor) -> str:
    """The partner's own words (:func:`said`), else the answer's text, masked."""
    words = said(response.content)
    if words:
        return redactor.text(words)
    text = redactor.text(response.text.strip()[:MASKED_BEFORE_CUT])[:300]
    return text or f"HTTP {response.status_code} with no message"


def said(body: bytes | str | None) -> str | None:
    """An error answer's own words: ``Message`` (spec §7), an OAuth description, RFC 7807's."""
    try:
        data = loads(body or b"")
    except ValueError:
        return None
    words = field_value(data, "message", "error_description", "error", "detail", "title")
    return words.strip() if isinstance(words, str) else None


def _body(response: httpx.Response, redactor: Redactor) -> str:
    """An error answer's body as errors keep it: masked, then cut."""
    content = response.content[:MASKED_BEFORE_CUT]
    return redactor.body(content, response.headers.get("content-type"))[:BODY_IN_ERRORS]


def normal(text: str) -> str:
    """A message as compared: trimmed, no final period, case-folded."""
    return text.strip().rstrip(".").strip().casefold()


def loads(content: bytes | str) -> Any:
    """Partner JSON decoded strictly (no NaN, huge floats, lone surrogates or deep nesting);
    ``ValueError`` saying what is wrong with it."""
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    try:
        text = data.decode("utf-8-sig")  # strict: raw surrogates or junk bytes are refused
    except UnicodeDecodeError:
        raise ValueError("a body that is not UTF-8 text") from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except _Refused:
        raise
    except ValueError:  # JSONDecodeError, or an integer of more than 4300 digits
        raise ValueError("a body that is not JSON") from None
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        children = node.values() if isinstance(node, dict) else node
        stack += [(c, depth + 1) for c in children if isinstance(c, dict | list)]
    if _ESCAPED_SURROGATE.search(data):  # a key or a value may hold a lone one
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a lone surrogate (\\ud800-\\udfff), which is not text") from None
    return value


class _Refused(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _Refused(f"{name}, which is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"a number too large for a float ({text[:40]})")
    return value


def list_items(payload: Any, *, operation: str) -> list[Any]:
    """The items of a list answer: an array, or the one array an object holds."""
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict):
        arrays = [v for v in payload.values() if isinstance(v, list)]
        if len(arrays) == 1:
            return arrays[0]
    raise unexpected(
        operation, payload, "where a list was expected (an array, or an object holding one)"
    )


def answer_items(payload: Any, *, operation: str) -> list[dict[str, Any]]:
    """The items of a detail or send answer: an object, or an array of objects."""
    items = [payload] if isinstance(payload, dict) else payload
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise unexpected(operation, payload, "where an object or an array of objects was expected")
    return items


@dataclass
class Listed:
    """A list's usable requests, and why the others were not."""

    items: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (item shown, why)


def listed_requests(payload: Any, *, operation: str) -> Listed:
    """A pending list's items, each with a usable ``RequestID``; the others in ``refused``."""
    listed = Listed()
    for position, item in enumerate(list_items(payload, operation=operation), start=1):
        try:
            listed.ids.append(request_id_of(item))
        except InvalidValue as exc:
            listed.refused.append((f"item {position}", f"{operation}: {exc}"))
        else:
            listed.items.append(item)
    return listed


def request_id_of(item: Any) -> str:
    """The ``RequestID`` (any case) of an answer item; ``InvalidValue`` when it is not usable."""
    if not isinstance(item, dict):
        raise InvalidValue(f"the item is {_kind(item)}, not an object with a RequestID.")
    keys = keys_named(item, REQUEST_ID)
    if len(keys) != 1:
        raise InvalidValue(_ambiguous(keys) if keys else "the item has no RequestID.")
    try:
        return check_request_id(item[keys[0]])
    except InvalidValue as exc:
        raise InvalidValue(f"the item's RequestID is not usable: {exc}") from None


def detail_items(
    payload: Any, request_id: str, *, operation: str, subject: str
) -> list[dict[str, Any]]:
    """The items of a detail answer; ``NotFound`` when none, refused when one is of another."""
    items = answer_items(payload, operation=operation)
    if not items:
        raise NotFound(f"{operation}: the partner answered no {subject}.", status=200)
    for item in items:
        keys = keys_named(item, REQUEST_ID)
        named = item[keys[0]] if len(keys) == 1 else None
        if len(keys) > 1 or (named is not None and str(named) != str(request_id)):
            said = _ambiguous(keys) if len(keys) > 1 else f"it is about {str(named)[:80]!r}."
            raise UnreadableAnswer(
                f"{operation}: asked for {request_id!r}, the partner answered an item that is "
                f"not of it: {said} Nothing was stored for it; the next pull asks again (report "
                "it to the partner if it persists).",
                status=200,
                body=_shown(item),
            )
    return items


def unexpected(operation: str, payload: Any, where: str) -> UnreadableAnswer:
    return UnreadableAnswer(
        f"{operation}: the partner answered {_kind(payload)} {where}. Nothing was stored for "
        "it and nothing was marked as gone; try again later, and report it to the partner if "
        "it persists.",
        status=200,
        body=_shown(payload),
    )


def _ambiguous(keys: list[Any]) -> str:
    shown = ", ".join(repr(str(k)[:20]) for k in keys[:4])
    return f"the item holds {len(keys)} RequestID keys, differing only in case, _ or - ({shown})."


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object" if value else "an empty object"
    if isinstance(value, list):
        return "an array"
    return {type(None): "null", bool: "a boolean", str: "a string"}.get(type(value), "a number")


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:BODY_IN_ERRORS]


def check_request_id(value: Any) -> str:
    """``value`` if it can be sent as a RequestID (one safe path segment), else ``InvalidValue``."""
    if not isinstance(value, str):
        raise InvalidValue(f"A RequestID must be a string, not {type(value).__name__}.")
    shown = _show(value)
    problem = (
        "must not be empty" if not value
        else f"is {len(value)} characters long; at most {MAX_ID_LENGTH} allowed"
        if len(value) > MAX_ID_LENGTH
        else "contains a slash; it must be one path segment" if "/" in value or "\\" in value
        else "contains '..'; it would address another path" if value == "." or ".." in value
        else "has leading or trailing white space" if value != value.strip()
        else "contains control characters"
        if any(unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in value)
        else None
    )  # fmt: skip
    if problem:
        raise InvalidValue(
            f"A RequestID {problem}." if not value else f"RequestID {shown} {problem}."
        )
    return value


def request_path(template: str, request_id: Any) -> str:
    """``template`` with ``{id}`` replaced by the checked, percent-encoded RequestID."""
    return template.format(id=quote(check_request_id(request_id), safe=""))


def guid_key(text: str) -> str | None:
    """``text`` without dashes, in lower case, when it is a hex GUID; else None."""
    return text.replace("-", "").lower() if HEX_GUID.fullmatch(text) else None


def resolve_id(typed: str, known: Iterable[str]) -> str:
    """The one spelling among ``known`` of ``typed`` (a hex GUID, dashes and case aside), else
    ``typed``; ``InvalidParameter`` when several match and none is ``typed``."""
    key = guid_key(typed)
    matches = {k for k in known if isinstance(k, str) and guid_key(k) == key} if key else set()
    if len(matches) == 1:
        return matches.pop()
    if len(matches) > 1 and typed not in matches:
        raise InvalidParameter(
            f"{_show(typed)} matches {len(matches)} stored ids ({', '.join(sorted(matches))}); "
            "paste one of them exactly, dashes and case included.",
            parameter="request_id",
        )
    return typed


def _show(value: str) -> str:
    text = value[:40].encode("unicode_escape").decode("ascii")
    return repr(text + ("..." if len(value) > 40 else ""))
