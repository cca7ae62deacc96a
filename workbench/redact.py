"""Redaction: the one place where secrets and tokens are removed from what we record or say.

The session redacts every exchange with a :class:`Redactor` before recorders see it; the store
and the bundle run everything they write through one again, because a database is forever and
one forgotten code path is enough. Two nets, because either alone misses something:

- by *name*: headers (``Authorization``, ``Subscription-Key``, cookies) and form/JSON/query fields
  (``client_secret``, ``password``, ``access_token``, ...) are masked whatever their value, null
  included;
- by *value*: every secret of the profile and every token issued in this session is masked
  wherever it shows up (a partner echoing a token in an error body, a URL, a message), as
  written or escaped by a JSON, XML or URL encoder (:mod:`workbench.secret_spellings`), and so
  is anything shaped like a JWT or a ``Bearer`` credential. In decoded JSON a number is masked
  whole when its digits spell a secret, and a JSON text is masked value by value, so it stays
  JSON.

Masking by value is safe only for a value that ordinary text does not spell: a subscription key
``2026`` would turn every date of every partner document into ``[REDACTED]-02-20``. So a profile
refuses a secret that :func:`unsafe_to_mask` finds too short or too common, naming its setting;
a configured secret found in a partner document is then a real echo, masked like any other. An
issued token that is unsafe to mask is not learned (:meth:`Redactor.add`): it is masked by name.

Most texts hold nothing to mask (a 40 kB PESC document): :meth:`Redactor.clean` proves that with
substring tests, and :meth:`Redactor.texts` proves it for many texts with one scan of them all.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, overload
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workbench.secret_spellings import SecretMatcher

MASK = "[REDACTED]"
_Text = TypeVar("_Text", str, str | None)

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
# What a configured secret must be to be masked by value without rewriting ordinary text.
MIN_MASKABLE_LENGTH = 8
_MIN_WORD_LENGTH = 16
# Values shorter than this are not masked by value: masking "1" everywhere would garble bodies.
_MIN_SECRET_LENGTH = 4
_MAX_REMEMBERED = 2048

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"([Bb]earer\s+)[A-Za-z0-9._~+/=-]{8,}")
_SHAPES = ("eyJ", "earer")  # every _JWT or _BEARER match holds one of these, as written
# Every name in SENSITIVE_FIELDS, lowercased, holds one of these words; a JSON key may spell
# one with escaped letters (\u0041-\u007a, or KELVIN SIGN for "k"), looked for in lower case.
_FIELD_HINTS = (b"token", b"secret", b"password", b"assertion", b"subscription")
_ESCAPED_LETTER = re.compile(rb"\\u(?:00[4-7]|212a)")
_FIELD_NAMES = "|".join(map(re.escape, sorted(SENSITIVE_FIELDS)))
_FORM_FIELD = re.compile(rf"(?i)((?:^|[&?\s])(?:{_FIELD_NAMES})=)[^&\s]*")
_JSON_PAIR = re.compile(rf'(?i)("(?:{_FIELD_NAMES})"\s*:\s*)"(?!\[REDACTED\])(?:[^"\\]|\\.)*"')


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


def _state_of(secrets: Iterable[str]) -> tuple[SecretMatcher, tuple[str, ...]]:
    """The secrets' matcher, and the substrings :meth:`Redactor.clean` looks for as written:
    the JWT and bearer shapes and each secret's plain core. Swapped whole: readers see one."""
    matcher = SecretMatcher.of(secrets)
    return matcher, _SHAPES + matcher.cores


class Redactor:
    """Masks secrets in text, decoded JSON, headers, URLs and bodies; learns tokens as they are
    issued. Thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._fixed = frozenset(s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH)
        self._learned: deque[str] = deque(maxlen=_MAX_REMEMBERED)
        self._state = _state_of(self._fixed)

    def add(self, value: str | None) -> None:
        """Mask ``value`` by value from now on (an access token just issued, say).

        Not one :func:`unsafe_to_mask` refuses: the identity server may issue ``2026``. Such a
        token is masked only where it stands by name (the ``Authorization`` header, the token
        answer's ``access_token``), never by value, so partner documents keep their dates.
        """
        if not value or unsafe_to_mask(value):
            return
        with self._lock:
            if value not in self._fixed and value not in self._learned:
                self._learned.append(value)
                self._state = _state_of(self._fixed.union(self._learned))

    def clean(self, text: str) -> bool:
        """True when substring tests prove ``text`` holds nothing :meth:`text` would mask;
        False means "maybe", and :meth:`text` then runs its full masking.

        Speed (bench/pull.py): the field hints are looked for in the text's Latin-1 bytes
        lowercased as ASCII, not in ``str.lower()``, which is slow on accented text (no
        Latin-1 character lowercases into ASCII, so nothing is missed). Without it the pull
        took 1.83x and 1.66x the bare pool instead of 1.69x and 1.49x (8-11 %), with ~0.5 s
        more CPU in each of ``prepare_detail`` and ``record_call``. A text Latin-1 cannot
        encode goes through ``str.lower`` (KELVIN SIGN lowercases to "k").
        """
        secrets, needles = self._state
        if any(needle in text for needle in needles) or secrets.unfiltered_in(text):
            return False
        try:
            low = text.encode("latin-1").lower()
        except UnicodeEncodeError:
            low = text.lower().encode("utf-8", "surrogatepass")
        return not any(hint in low for hint in _FIELD_HINTS) and not _ESCAPED_LETTER.search(low)

    @overload
    def text(self, text: str) -> str: ...
    @overload
    def text(self, text: None) -> None: ...
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

    def texts(self, texts: Sequence[_Text]) -> list[_Text]:
        """Each of ``texts`` as :meth:`text` masks it, with one scan of them all when that
        proves them all clean (the usual case)."""
        if self.clean("\x00".join(t for t in texts if t)):  # a needle in one is in the join
            return list(texts)
        return [self.text(t) for t in texts]

    def data(self, value: Any) -> Any:
        """JSON-able ``value`` with sensitive fields and secret values masked (a copy if any).

        Value by value, never the JSON text: a secret such as ``true`` or ``1234`` must not
        break the syntax around it. A number (or a date or decimal held as its ``str``) is
        masked whole when its text spells a secret; a sensitive field is masked even when null.

        >>> Redactor(["1234"]).data({"pin": 1234, "ok": True, "password": None, "n": "a1234"})
        {'pin': '[REDACTED]', 'ok': True, 'password': '[REDACTED]', 'n': 'a[REDACTED]'}
        """
        if value is None or self.clean(json.dumps(value, ensure_ascii=False, default=str)):
            return value
        return self._masked(value)

    def dumps(self, values: Sequence[Any], dumps: Callable[[Any], str]) -> list[str]:
        """Each of ``values`` serialised by ``dumps``, masked as :meth:`data` masks it, with one
        scan of them all when that proves them all clean (the usual case)."""
        texts = [dumps(value) for value in values]
        if self.clean("\x00".join(texts)):
            return texts
        return [dumps(self.data(value)) for value in values]

    def headers(
        self, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None
    ) -> dict[str, str]:
        """Headers as a plain dict, sensitive ones masked whatever their value; the others'
        values are proved clean with one scan of them all (:meth:`texts`)."""
        named = headers_by_name(headers)
        return dict(zip(named, self.texts(list(named.values())), strict=True))

    def url(self, url: str) -> str:
        """Mask sensitive query parameters and known secrets in a URL."""
        parts = urlsplit(url)
        if parts.query:
            url = urlunsplit(parts._replace(query=_form(parts.query)))
        return self.text(url)

    def body(self, content: bytes | str | None, content_type: str | None = None) -> str:
        """A body as text, with sensitive form or JSON fields and known secrets masked; a body
        with nothing to mask is kept byte for byte."""
        if not content:
            return ""
        text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
        kind = (content_type or "").split(";")[0].strip().lower()
        if kind == "application/x-www-form-urlencoded" and not self.clean(text):
            text = _form(text)
        return self.text(text)

    def _json_text(self, text: str) -> str | None:
        """A JSON document holding a secret, masked value by value; None when ``text`` is no
        JSON document."""
        if not text.lstrip().startswith(("{", "[")):
            return None
        try:
            decoded = json.loads(text)
        except ValueError:
            return None
        return json.dumps(self._masked(decoded), ensure_ascii=False)

    def _masked(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                (self.text(k) if isinstance(k, str) else k): MASK
                if str(k).lower() in SENSITIVE_FIELDS
                else self._masked(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._masked(v) for v in value]
        if value is None or isinstance(value, bool):
            return value
        shown = str(value)  # a number, or a date or decimal the JSON holds as its str
        return value if self.text(shown) == shown else MASK


def headers_by_name(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
) -> dict[str, str]:
    """Headers as a plain dict of texts, the sensitive ones masked by name only: the others'
    values are still to be scrubbed (:meth:`Redactor.headers` does both)."""
    items = headers.items() if isinstance(headers, Mapping) else headers or ()
    return {
        str(name): MASK if str(name).lower() in SENSITIVE_HEADERS else str(value)
        for name, value in items
    }


def _form(query: str) -> str:
    """A form body or query string with its sensitive fields masked."""
    pairs = parse_qsl(query, keep_blank_values=True)
    masked = [(k, MASK if k.lower() in SENSITIVE_FIELDS else v) for k, v in pairs]
    return urlencode(masked, safe="[]")


def _fields(text: str) -> str:
    """Mask sensitive fields of a JSON document or a form/query string inside ``text``."""
    if text.lstrip().startswith(("{", "[")):
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if decoded is not None:
            masked = _masked_fields(decoded)
            return text if masked == decoded else json.dumps(masked, ensure_ascii=False)
    text = _FORM_FIELD.sub(lambda m: m.group(1) + MASK, text)
    # JSON that did not parse (truncated, embedded): mask "field": "value" pairs by shape.
    return _JSON_PAIR.sub(lambda m: m.group(1) + '"' + MASK + '"', text)


def _masked_fields(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: MASK if str(k).lower() in SENSITIVE_FIELDS else _masked_fields(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_masked_fields(v) for v in value]
    return value
