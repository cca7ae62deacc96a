"""Partner answers as data: one safe JSON decoder, and the shapes an answer may take.

Every answer body is decoded by :func:`loads`, which refuses what Python's ``json`` lets
through and something later breaks on: ``NaN``/``Infinity`` (and numbers too big for a float),
which SQLite's ``json_extract`` cannot read; lone surrogates (``"\\ud800"``), which cannot be
written as UTF-8; and nesting deeper than :data:`MAX_DEPTH`, which raises ``RecursionError``
wherever it is walked. Refused, not repaired: a repaired id would name another request.

The shapes (DESIGN §3):

- a **list** (pending requests, pending transcripts, event feeds) is an array, or an object
  holding exactly one array: :func:`list_items`. Anything else (``null``, ``{}``, a scalar, an
  object with no or several arrays) is a failed list, never an empty one.
- a **listed request** is an object whose ``RequestID`` (any case) can be sent back in a path
  (:func:`workbench.ids.check_request_id`): :func:`listed_requests`.
- a **detail** or a send's **echo** is an object, or an array of objects: :func:`answer_items`;
  a detail names the request it was asked for, or none: :func:`detail_items`.

Each refusal is an :class:`~workbench.errors.UnreadableAnswer` (a ``PartnerError``).

>>> list_items({"requests": [{"RequestID": "A1"}]}, operation="x")
[{'RequestID': 'A1'}]
>>> try:
...     loads(b"[1, NaN]")
... except ValueError as exc:
...     print(exc)
NaN, which is not JSON
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import InvalidValue, NotFound, UnreadableAnswer
from workbench.ids import check_request_id

MAX_DEPTH = 64  # partner answers are three or four levels deep
REQUEST_ID = "RequestID"
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SHOWN = 2000  # characters of an odd answer kept in the error's ``body``


def loads(content: bytes | str) -> Any:
    """Decode partner JSON strictly; ``ValueError`` saying what is wrong with it."""
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
    _check(value, surrogates=_ESCAPED_SURROGATE.search(data) is not None)
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
    """A list of requests read item by item: the usable ones, and why the others were not."""

    items: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (item shown, why)


def listed_requests(payload: Any, *, operation: str) -> Listed:
    """A pending list's items, each with a usable ``RequestID``; the others in ``refused``."""
    listed = Listed()
    for position, item in enumerate(list_items(payload, operation=operation)):
        try:
            listed.ids.append(request_id_of(item))
        except InvalidValue as exc:
            listed.refused.append((f"item {position + 1}", f"{operation}: {exc}"))
        else:
            listed.items.append(item)
    return listed


def keys_named(item: Mapping[Any, Any], name: str) -> list[Any]:
    """The keys of ``item`` that are ``name`` in any case.

    The one way to find a field: JSON lets an object hold ``requestid`` and ``RequestID``
    both, and which one counts must not depend on who reads it, so readers take a field only
    when exactly one key names it (the store's ``field`` too).
    """
    folded = name.lower()
    return [k for k in item if str(k).lower() == folded]


def request_id_of(item: Any) -> str:
    """The ``RequestID`` (any case) of an answer item; ``InvalidValue`` when it is not usable."""
    if not isinstance(item, dict):
        raise InvalidValue(f"the item is a {_kind(item)}, not an object with a RequestID.")
    keys = keys_named(item, REQUEST_ID)
    if not keys:
        raise InvalidValue("the item has no RequestID.")
    if len(keys) > 1:
        raise InvalidValue(_ambiguous(keys))
    try:
        return check_request_id(item[keys[0]])
    except InvalidValue as exc:
        raise InvalidValue(f"the item's RequestID is not usable: {exc}") from None


def detail_items(
    payload: Any, request_id: str, *, operation: str, subject: str
) -> list[dict[str, Any]]:
    """The items of a detail answer (``NotFound`` when none); refused when one names another
    request than ``request_id``."""
    items = answer_items(payload, operation=operation)
    if not items:
        raise NotFound(f"{operation}: the partner answered no {subject}.", status=200)
    for item in items:
        _check_echo(item, str(request_id), operation=operation)
    return items


def _check_echo(item: Mapping[str, Any], request_id: str, *, operation: str) -> None:
    """Refuse an answer item whose ``RequestID`` is present and not ``request_id``."""
    keys = keys_named(item, REQUEST_ID)
    if len(keys) > 1 or (
        keys and item[keys[0]] is not None and str(item[keys[0]]) != str(request_id)
    ):
        said = _ambiguous(keys) if len(keys) > 1 else f"it is about {str(item[keys[0]])[:80]!r}."
        raise UnreadableAnswer(
            f"{operation}: asked for {request_id!r}, the partner answered an item that is not "
            f"of it: {said} Nothing was stored for it; the next pull asks again (report it to "
            "the partner if it persists).",
            status=200,
            body=_shown(item),
        )


def _ambiguous(keys: list[Any]) -> str:
    shown = ", ".join(repr(str(k)[:20]) for k in keys[:4])
    return f"the item holds {len(keys)} RequestID keys differing only in case ({shown})."


def unexpected(operation: str, payload: Any, where: str) -> UnreadableAnswer:
    """The error for an answer of the wrong shape."""
    return UnreadableAnswer(
        f"{operation}: the partner answered {_kind(payload)} {where}. Nothing was stored for "
        "it and nothing was marked as gone; try again later, and report it to the partner if "
        "it persists.",
        status=200,
        body=_shown(payload),
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an empty object" if not value else "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    return "a string" if isinstance(value, str) else "a number"


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:_SHOWN]


class _Refused(ValueError):
    """Valid to Python's ``json``, but not JSON we accept."""


def _constant(name: str) -> Any:
    raise _Refused(f"{name}, which is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"a number too large for a float ({text[:40]})")
    return value


def _check(value: Any, *, surrogates: bool) -> None:
    """Refuse nesting deeper than MAX_DEPTH and, when the text escapes any, lone surrogates."""
    stack: list[tuple[Any, int]] = [([value], 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            if surrogates:
                _text(*node)
            node = node.values()
        for child in node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
            elif surrogates and isinstance(child, str):
                _text(child)


def _text(*texts: str) -> None:
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a lone surrogate (\\ud800-\\udfff), which is not text") from None
