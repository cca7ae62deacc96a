"""Defence in depth: the store masks secrets in everything it writes, even if nobody else did.

The session redacts every exchange before recorders see it (:mod:`workbench.redact`); the store
does it again, because a database is forever and one forgotten code path is enough. It masks:

- every configured secret (and every value added later with :meth:`Scrubber.add`), anywhere,
  in every spelling JSON, XML and URL encoders give it (``pa\\"ss``, ``\\u002B``,
  ``R&amp;D``, ``&#233;``, ``%2B``: :mod:`workbench.escapes`);
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

from workbench.escapes import SecretMatcher
from workbench.redact import MASK, SENSITIVE_FIELDS, SENSITIVE_HEADERS, is_latin1, searchable
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


def _state_of(secrets: Iterable[str]) -> tuple[SecretMatcher, tuple[bytes, ...]]:
    """The secrets' matcher, and what clean() searches the text's bytes for: the JWT and
    bearer shapes and each secret's plain core (ASCII: the same bytes in Latin-1 and UTF-8)."""
    matcher = SecretMatcher.of(secrets)
    return matcher, _SHAPES + tuple(core.encode("ascii") for core in matcher.cores)


class Scrubber:
    """Masks secrets in text, JSON data, headers and URLs. Thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets = frozenset(s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH)
        self._state = _state_of(self._secrets)

    def add(self, secret: str | None) -> None:
        """Mask ``secret`` from now on (values shorter than 4 characters are ignored)."""
        if not secret or len(secret) < _MIN_SECRET_LENGTH:
            return
        with self._lock:
            if secret not in self._secrets:
                self._secrets |= {secret}
                self._state = _state_of(self._secrets)  # swapped whole: readers see one state

    def text(self, text: str | None) -> str | None:
        """``text`` with secrets, JWTs, bearer credentials and sensitive fields masked."""
        if not text or self.clean(text):
            return text
        secrets = self._state[0]
        if secrets.holds(text):
            masked = self._json_text(text)
            if masked is not None:
                return masked
            text = secrets.mask(text, MASK)
        if "eyJ" in text:
            text = _JWT.sub(MASK, text)
        if "earer" in text:
            text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
        return _fields(text)

    def _json_text(self, text: str) -> str | None:
        """A JSON document holding a secret, masked value by value so that it stays JSON (a
        secret ``true`` or ``1234`` must not break its syntax: JSON's own ``true`` is no
        secret); None when ``text`` is no JSON document."""
        if not text.lstrip().startswith(("{", "[")):
            return None
        try:
            decoded = json.loads(text)
        except ValueError:
            return None
        return json.dumps(self._masked_value(decoded), ensure_ascii=False)

    def clean(self, text: str) -> bool:
        """True when cheap byte searches prove ``text`` holds nothing :meth:`text` would mask.

        False means "maybe": :meth:`text` then runs its full masking.
        """
        secrets, needles = self._state
        data = searchable(text)
        if not is_latin1(data, text) and ("\u212a" in text or "\u0130" in text):
            return False  # they lowercase to ASCII letters (k, i): the hints below would miss
        if any(map(data.__contains__, needles)):
            return False
        if secrets.unfiltered_in(text):
            return False
        # ASCII-only lowercasing: the hints are ASCII, and no other character than the two
        # above lowercases to an ASCII letter.
        return not any(map(data.lower().__contains__, _FIELD_HINTS))

    def texts(self, texts: Sequence[str | None]) -> list[str | None]:
        """Each of ``texts`` as :meth:`text` masks it, with one scan of them all when that
        proves them all clean (the usual case)."""
        present = [t for t in texts if t]
        if self.clean("\x00".join(present)):  # a needle in any one is a needle in the join
            return list(texts)
        return [self.text(t) for t in texts]

    def data(self, value: Any) -> Any:
        """JSON-able ``value`` with sensitive fields and secret values masked (a copy if any).

        Masks value by value, never the JSON text: a secret such as ``true`` or ``1234`` must
        not break the syntax around it.

        >>> Scrubber(["1234"]).data({"pin": 1234, "ok": True, "password": "x"})
        {'pin': '[REDACTED]', 'ok': True, 'password': '[REDACTED]'}
        """
        if value is None or self.clean(json.dumps(value, ensure_ascii=False, default=str)):
            return value
        return self._masked_value(value)

    def dumps(self, values: Sequence[Any]) -> list[str]:
        """Each of ``values`` as canonical JSON, masked as :meth:`data` masks it, with one scan
        of them all when that proves them all clean (the usual case)."""
        texts = [dumps(value) for value in values]
        if self.clean("\x00".join(texts)):
            return texts
        return [dumps(self.data(value)) for value in values]

    def _masked_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                (self.text(k) if isinstance(k, str) else k): MASK
                if v is not None and str(k).lower() in SENSITIVE_FIELDS
                else self._masked_value(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._masked_value(v) for v in value]
        if value is None or isinstance(value, bool):
            return value
        shown = str(value)  # a number, or a date or decimal the JSON holds as its str
        return value if self.text(shown) == shown else MASK

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
    still to be scrubbed (:meth:`Scrubber.texts` does it with the other texts of a call)."""
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
