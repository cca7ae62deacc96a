"""Defence in depth: the store masks secrets in everything it writes, even if nobody else did.

The session redacts every exchange before recorders see it (:mod:`workbench.redact`); the store
does it again, because a database is forever and one forgotten code path is enough. It masks:

- every configured secret (and every value added later with :meth:`Scrubber.add`), anywhere;
- JWTs and ``Bearer`` credentials, by shape;
- sensitive JSON and form fields (``access_token``, ``client_secret``, ``password``, ...);
- sensitive headers (``Authorization``, ``Subscription-Key``, cookies).

It is built for speed on large clean bodies (a 40 kB PESC document): cheap substring tests
decide whether the slower regular expressions or a JSON round trip are needed at all, and
:meth:`Scrubber.texts` proves many texts clean with one scan of them all.

>>> Scrubber(["s3cret"]).text("password=s3cret")
'password=[REDACTED]'
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.redact import MASK, SENSITIVE_FIELDS, SENSITIVE_HEADERS
from workbench.store.values import dumps

_MIN_SECRET_LENGTH = 4
# What clean() looks for besides the secrets: JWT and bearer shapes (case as written), and in
# the lowercased text the hints of SENSITIVE_FIELDS (every name there contains one of them).
_SHAPES = (b"eyJ", b"earer")
_FIELD_HINTS = (b"token", b"secret", b"password", b"assertion", b"subscription")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"([Bb]earer\s+)(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}")
_FORM_FIELD = re.compile(
    r"(?i)((?:^|[&?\s])(?:" + "|".join(map(re.escape, sorted(SENSITIVE_FIELDS))) + r")=)[^&\s]*"
)


class Scrubber:
    """Masks secrets in text, JSON data, headers and URLs. Thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: tuple[tuple[str, bytes], ...] = ()
        self._needles: tuple[bytes, ...] = _SHAPES  # searched in the text's UTF-8 as it is
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str | None) -> None:
        """Mask ``secret`` from now on (values shorter than 4 characters are ignored)."""
        if not secret or len(secret) < _MIN_SECRET_LENGTH:
            return
        with self._lock:
            known = {s for s, _ in self._secrets}
            if secret not in known:
                ordered = sorted({*known, secret}, key=len, reverse=True)  # longest masked first
                self._secrets = tuple((s, s.encode("utf-8", "surrogatepass")) for s in ordered)
                self._needles = _SHAPES + tuple(b for _, b in self._secrets)

    def text(self, text: str | None) -> str | None:
        """``text`` with secrets, JWTs, bearer credentials and sensitive fields masked."""
        if not text or self.clean(text):
            return text
        for secret, _ in self._secrets:  # longest first
            text = text.replace(secret, MASK)
        if "eyJ" in text:
            text = _JWT.sub(MASK, text)
        if "earer" in text:
            text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
        return _fields(text)

    def clean(self, text: str) -> bool:
        """True when cheap byte searches prove ``text`` holds nothing :meth:`text` would mask.

        False means "maybe": :meth:`text` then runs its full masking.
        """
        data = text.encode("utf-8", "surrogatepass")
        # self._needles is a tuple swapped whole by add(): never seen half-built.
        if any(map(data.__contains__, self._needles)):
            return False
        return not any(map(data.lower().__contains__, _FIELD_HINTS))

    def texts(self, texts: Sequence[str | None]) -> list[str | None]:
        """Each of ``texts`` as :meth:`text` masks it, with one scan of them all when that
        proves them all clean (the usual case)."""
        present = [t for t in texts if t]
        if self.clean("\x00".join(present)):  # a needle in any one is a needle in the join
            return list(texts)
        return [self.text(t) for t in texts]

    def data(self, value: Any) -> Any:
        """A copy of JSON-able ``value`` with sensitive fields and secret values masked."""
        if value is None:
            return None
        text = json.dumps(value, ensure_ascii=False, default=str)
        clean = self.text(text)
        return value if clean == text else json.loads(clean or "null")

    def headers_json(self, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> str:
        """Headers as canonical JSON, sensitive ones masked (one scrub for all the values)."""
        return self.text(headers_text(headers)) or "{}"

    def headers(self, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> dict:
        """Headers as a dict, sensitive ones masked whatever their value."""
        if not headers:
            return {}
        items = headers.items() if isinstance(headers, Mapping) else headers
        return {
            str(name): MASK if str(name).lower() in SENSITIVE_HEADERS else self.text(str(value))
            for name, value in items
        }


def headers_text(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> str:
    """Headers as canonical JSON with the sensitive ones masked by name; their values are
    still to be scrubbed (:meth:`Scrubber.headers_json` does both)."""
    if not headers:
        return "{}"
    items = headers.items() if isinstance(headers, Mapping) else headers
    return dumps(
        {
            str(name): MASK if str(name).lower() in SENSITIVE_HEADERS else str(value)
            for name, value in items
        }
    )


def _fields(text: str) -> str:
    """Mask sensitive fields of a JSON document or a form/query string inside ``text``."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if decoded is not None:
            if not _has_sensitive(decoded):
                return text
            return json.dumps(_masked(decoded), ensure_ascii=False)
    text = _FORM_FIELD.sub(lambda m: m.group(1) + MASK, text)
    # JSON that did not parse (truncated, embedded): mask "field": "value" pairs by shape.
    return _JSON_PAIR.sub(lambda m: m.group(1) + '"' + MASK + '"', text)


_JSON_PAIR = re.compile(
    r'(?i)("(?:' + "|".join(map(re.escape, sorted(SENSITIVE_FIELDS))) + r')"\s*:\s*)'
    r'"(?!\[REDACTED\])(?:[^"\\]|\\.)*"'
)


def _has_sensitive(value: Any) -> bool:
    if isinstance(value, dict):
        return any(
            (str(k).lower() in SENSITIVE_FIELDS and v not in (None, MASK)) or _has_sensitive(v)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_has_sensitive(v) for v in value)
    return False


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: MASK if str(k).lower() in SENSITIVE_FIELDS and v is not None else _masked(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value
