"""Redaction: the one place where secrets and tokens are removed from what we record or say.

Two nets, because either alone misses something:

- by *name*: headers (``Authorization``, ``Subscription-Key``, cookies) and form/JSON/query fields
  (``client_secret``, ``password``, ``access_token``, ...) are masked whatever their value;
- by *value*: every secret of the profile and every token issued in this session is masked
  wherever it shows up (a partner echoing a token in an error body, a URL, a message), as
  written or escaped by a JSON, XML or URL encoder (:mod:`workbench.escapes`), and so is anything
  shaped like a JWT or a ``Bearer`` credential.

Masking by value is safe only for a value that ordinary text does not spell: a subscription key
``2026`` would turn every date of every partner document into ``[REDACTED]-02-20``. So a profile
refuses a secret that :func:`unsafe_to_mask` finds too short or too common, naming its setting;
a configured secret found in a partner document is then a real echo, masked like any other. An
issued token that is unsafe to mask is not learned (:meth:`Redactor.add`): it is masked by name.

Example::

    r = Redactor(["s3cret"])
    r.text("client_secret=s3cret")            # 'client_secret=[REDACTED]'
    r.headers({"Authorization": "Bearer x"})  # {'Authorization': '[REDACTED]'}
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workbench.escapes import SecretMatcher

MASK = "[REDACTED]"

SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "subscription-key",
        "ocp-apim-subscription-key",
        "x-api-key",
        "cookie",
        "set-cookie",
    }
)
SENSITIVE_FIELDS = frozenset(
    {
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "client_secret",
        "password",
        "subscription_key",
        "subscription-key",
        "assertion",
        "client_assertion",
    }
)

# A JWT (three base64url parts, the first starting with '{"' encoded) or a bearer credential.
_PATTERNS = re.compile(
    r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{8,}"
)
# Values shorter than this are not masked by value: masking "1" everywhere would garble bodies.
_MIN_SECRET_LENGTH = 4
# What a configured secret must be to be masked by value without rewriting ordinary text.
MIN_MASKABLE_LENGTH = 8
_MIN_WORD_LENGTH = 16
_MAX_REMEMBERED = 2048
# Every name in SENSITIVE_FIELDS, lowercased, contains one of these.
_FIELD_HINTS = ("token", "secret", "password", "assertion", "subscription")
_FIELD_HINTS_BYTES = tuple(hint.encode() for hint in _FIELD_HINTS)


def unsafe_to_mask(secret: str) -> str | None:
    """Why masking ``secret`` wherever it shows up would also rewrite ordinary text (a date, an
    amount, an id, a word of a partner document), or None when it is safe to mask.

    >>> unsafe_to_mask("2026"), unsafe_to_mask("sandbox-key-0c9b")
    ('it has fewer than 8 characters', None)
    """
    if len(secret) < MIN_MASKABLE_LENGTH:
        return f"it has fewer than {MIN_MASKABLE_LENGTH} characters"
    if not any(c.isalpha() for c in secret):
        return "it has no letter, so a number, a date or an id can spell it"
    if secret.isalpha() and len(secret) < _MIN_WORD_LENGTH:
        return f"it is letters only and shorter than {_MIN_WORD_LENGTH} characters: a word"
    return None


class Redactor:
    """Masks secrets in headers, bodies, URLs and free text; learns tokens as they are issued."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._fixed = {s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH}
        self._learned: deque[str] = deque(maxlen=_MAX_REMEMBERED)
        self._matcher: SecretMatcher | None = None  # built on first use after a change

    def add(self, value: str | None) -> None:
        """Remember one more value to mask (an access token just issued, say).

        Not one :func:`unsafe_to_mask` refuses: the identity server may issue ``2026``. Such a
        token is masked only where it stands by name (the ``Authorization`` header, the token
        answer's ``access_token``), never by value, so partner documents keep their dates.
        """
        if not value or unsafe_to_mask(value):
            return
        with self._lock:
            if value in self._fixed or value in self._learned:
                return
            self._learned.append(value)
            self._matcher = None

    def _secrets(self) -> SecretMatcher:
        """Every secret in every spelling a JSON or XML encoder gives it (a partner may echo
        one escaped); rebuilt once after tokens were learned, not once per token."""
        matcher = self._matcher
        if matcher is None:
            with self._lock:
                if self._matcher is None:
                    self._matcher = SecretMatcher.of(self._fixed | set(self._learned))
                matcher = self._matcher
        return matcher

    def text(self, text: str | None) -> str:
        """Mask every known secret, JWT and bearer credential in ``text``."""
        if not text:
            return text or ""
        return _shapes(self._secrets().mask(text, MASK))

    def headers(self, headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
        """A plain dict of headers with sensitive ones masked."""
        items = headers.items() if isinstance(headers, Mapping) else headers
        return {
            name: MASK if name.lower() in SENSITIVE_HEADERS else self.text(value)
            for name, value in items
        }

    def url(self, url: str) -> str:
        """Mask sensitive query parameters and known secrets in a URL."""
        parts = urlsplit(url)
        if parts.query:
            query = urlencode(
                [
                    (k, MASK if k.lower() in SENSITIVE_FIELDS else v)
                    for k, v in parse_qsl(parts.query, keep_blank_values=True)
                ],
                safe="[]",
            )
            url = urlunsplit(parts._replace(query=query))
        return self.text(url)

    def body(self, content: bytes | str | None, content_type: str | None = None) -> str:
        """A body as text, with sensitive form or JSON fields and known secrets masked."""
        if not content:
            return ""
        text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
        kind = (content_type or "").split(";")[0].strip().lower()
        if kind == "application/x-www-form-urlencoded":
            pairs = parse_qsl(text, keep_blank_values=True)
            text = urlencode(
                [(k, MASK if k.lower() in SENSITIVE_FIELDS else v) for k, v in pairs], safe="[]"
            )
        elif kind.endswith("json") or text.lstrip().startswith(("{", "[")):
            secret = self._secrets().holds(text)
            if secret or _may_name_field(text):
                # Re-serialise only when a field or a secret must go, so recorded bodies stay
                # byte-faithful; value by value, so a secret "true" cannot break the syntax.
                try:
                    decoded = json.loads(text)
                except ValueError:
                    decoded = None
                if decoded is not None and (secret or _has_sensitive_field(decoded)):
                    masked = self.data(decoded)  # every string through text() already
                    if masked != decoded:
                        return json.dumps(masked, ensure_ascii=False)
            if not secret:
                return _shapes(text)  # already proved free of secrets
        return self.text(text)

    def data(self, value: Any) -> Any:
        """A copy of decoded JSON with sensitive fields and secret values masked (recursively).

        >>> Redactor(["1234"]).data({"pin": 1234, "ok": True, "password": "x", "n": "a1234"})
        {'pin': '[REDACTED]', 'ok': True, 'password': '[REDACTED]', 'n': 'a[REDACTED]'}
        """
        if isinstance(value, dict):
            return {
                self.text(k) if isinstance(k, str) else k: MASK
                if str(k).lower() in SENSITIVE_FIELDS
                else self.data(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, bool):
            return value
        shown = json.dumps(value)  # a number: masked whole when its digits spell a secret
        return value if self.text(shown) == shown else MASK


def _shapes(text: str) -> str:
    """``text`` with JWTs and bearer credentials masked, by shape."""
    if "eyJ" in text or "earer " in text:  # every _PATTERNS match holds one of these
        return _PATTERNS.sub(MASK, text)
    return text


def _may_name_field(text: str) -> bool:
    """False only when no JSON key of ``text`` can be a sensitive field (no decoding needed).

    Lowercasing is per character, so a key whose lowercase holds a hint leaves it in the
    lowercased text; a ``\\u`` escape could spell a key in disguise, so it always decodes.
    The bytes are lowercased (ASCII only, ten times faster than ``str.lower`` on accented
    text): only two characters outside ASCII lowercase to ASCII letters (KELVIN SIGN -> k,
    LATIN CAPITAL LETTER I WITH DOT ABOVE -> i), and with either the text takes the slow path.
    """
    if "\u212a" in text or "\u0130" in text:
        low = text.lower()
        return "\\u" in low or any(hint in low for hint in _FIELD_HINTS)
    data = searchable(text).lower()
    return b"\\u" in data or any(hint in data for hint in _FIELD_HINTS_BYTES)


def searchable(text: str) -> bytes:
    """``text`` as bytes for substring tests of ASCII needles: Latin-1 when every character
    fits (a copy, ~20 times faster than UTF-8 for accented text), else UTF-8.

    A needle is found in the bytes exactly when it is found in ``text``, as long as it is
    encoded the same way (:func:`is_latin1` says which way it was).
    """
    if text.isascii():  # known without a scan
        return text.encode("ascii")
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def is_latin1(data: bytes, text: str) -> bool:
    """Whether :func:`searchable` gave ``data`` for ``text`` in Latin-1 (same length)."""
    return len(data) == len(text)


def _has_sensitive_field(value: Any) -> bool:
    if isinstance(value, dict):
        return any(
            str(k).lower() in SENSITIVE_FIELDS or _has_sensitive_field(v) for k, v in value.items()
        )
    if isinstance(value, list):
        return any(_has_sensitive_field(v) for v in value)
    return False
