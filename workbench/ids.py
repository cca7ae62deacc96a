"""RequestIDs: checked before use, percent-encoded into exactly one path segment.

The spec allows any non-empty string (DESIGN §3); what we refuse could only ever address another
resource (``/``, ``\\``, ``.``, ``..``) or break the request line (control characters).

>>> request_path("/api/transcriptrequests/{id}", "C2015 07")
'/api/transcriptrequests/C2015%2007'

The partner's ids may be hex GUIDs; one pasted with dashes or in upper case is matched to the
spelling we know (:func:`resolve_id`), by every command that takes an id.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from workbench.errors import InvalidParameter, InvalidValue

MAX_ID_LENGTH = 128
# Cc: control characters; Cs: lone surrogates (cannot be encoded); Zl/Zp: line separators.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def check_request_id(value: Any) -> str:
    """``value`` if it can be sent as a RequestID, else ``InvalidValue`` saying why."""
    if not isinstance(value, str):
        raise InvalidValue(f"A RequestID must be a string, not {type(value).__name__}.")
    shown = _show(value)
    if not value:
        raise InvalidValue("A RequestID must not be empty.")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidValue(
            f"RequestID {shown} is {len(value)} characters long; at most {MAX_ID_LENGTH} allowed."
        )
    if "/" in value or "\\" in value:
        raise InvalidValue(f"RequestID {shown} contains a slash; it must be one path segment.")
    if value in (".", "..") or ".." in value:
        raise InvalidValue(f"RequestID {shown} contains '..'; it would address another path.")
    if value != value.strip():
        raise InvalidValue(f"RequestID {shown} has leading or trailing white space.")
    if any(unicodedata.category(ch) in _FORBIDDEN_CATEGORIES for ch in value):
        raise InvalidValue(f"RequestID {shown} contains control characters.")
    return value


HEX_GUID = re.compile(
    r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.IGNORECASE
)


def guid_key(text: str) -> str | None:
    """``text`` without dashes, in lower case, when it is a hex GUID; else None.

    >>> guid_key("7C1D0B52-0000-4000-8000-00000000000A")
    '7c1d0b5200004000800000000000000a'
    """
    return text.replace("-", "").lower() if HEX_GUID.fullmatch(text) else None


def resolve_id(typed: str, known: Iterable[str]) -> str:
    """The one spelling among ``known`` ids of ``typed`` when ``typed`` is a hex GUID written
    with or without dashes, in any case; else ``typed`` itself. ``InvalidParameter`` when
    ``known`` spells it in several ways, unless ``typed`` is one of them exactly.

    >>> resolve_id("7C1D0B52-0000-4000-8000-00000000000A", ["7c1d0b5200004000800000000000000a"])
    '7c1d0b5200004000800000000000000a'
    """
    key = guid_key(typed)
    if key is None:
        return typed
    matches = {k for k in known if isinstance(k, str) and guid_key(k) == key}
    if len(matches) == 1:
        return matches.pop()
    if len(matches) > 1 and typed not in matches:
        spelled = ", ".join(sorted(matches))
        raise InvalidParameter(
            f"{_show(typed)} matches {len(matches)} stored ids ({spelled}); paste one of them "
            "exactly, dashes and case included.",
            parameter="request_id",
        )
    return typed


def request_path(template: str, request_id: Any) -> str:
    """``template`` with ``{id}`` replaced by the checked, percent-encoded RequestID."""
    return template.format(id=quote(check_request_id(request_id), safe=""))


def _show(value: str) -> str:
    """A short, printable rendering of a (maybe hostile) id for messages."""
    text = value[:40].encode("unicode_escape").decode("ascii")
    return repr(text + ("..." if len(value) > 40 else ""))
