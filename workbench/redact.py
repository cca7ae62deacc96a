"""Redaction: the one place that decides what of a secret or a token may be recorded or said.

Credentials are taken as the partner issues them, of any length or form, so masking must never
rewrite what the partner sent us as data: a subscription key ``2026`` must not turn the dates of
a transcript into ``[REDACTED]-02-20``. Two rules, each where it is safe:

- by *position*, always: headers (``Authorization``, ``Subscription-Key``, cookies), token form
  fields (``client_secret``, ``password``, ``Password``...), the ``access_token`` of a login
  answer, a URL's user name and password, sensitive query parameters;
- by *value* (:meth:`Redactor.text`), in what we say and in what carries our credentials: every
  login exchange (its form and its answer, whatever the status), every error answer, every
  message, log line and error text of ours. Every configured secret and issued token is found in
  every spelling a JSON, XML or URL encoder gives it (:mod:`workbench.secret_spellings`), and so
  are JWTs and ``Bearer`` credentials, whatever their length.

A 2xx answer of the partner's API, and a document we send, is a *document*
(:meth:`Redactor.document`): it is recorded as written, except a secret or an issued token long
enough that no document could spell it by chance (16 characters), and anything shaped like a
JWT (a partner echoing our credentials).
:func:`is_document` and :func:`is_sent_document` say which parts of an exchange are.

Example::

    r = Redactor(["s3cret"])
    r.text("client_secret=s3cret")            # 'client_secret=[REDACTED]'
    r.headers({"Authorization": "Bearer x"})  # {'Authorization': '[REDACTED]'}
    r.document("<Date>s3cret</Date>")         # unchanged: a document is never rewritten
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, overload
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from workbench.secret_spellings import WHOLE_WORD_BELOW, SecretMatcher

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
# A token or a secret this long is masked in documents too: 16 characters or more spell no id,
# date or word of a document by chance, so one found there is an echo of ours.
MIN_DOCUMENT_TOKEN = 16
_MAX_REMEMBERED = 2048

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"([Bb]earer\s+)[A-Za-z0-9._~+/=-]{8,}")
_SHAPES = ("eyJ", "earer")  # every _JWT or _BEARER match holds one of these, as written
# Every name in SENSITIVE_FIELDS holds one of these words; a JSON key may spell one with escaped
# letters (\u0041-\u007a, or KELVIN SIGN for "k").
_FIELD_HINTS = ("token", "secret", "password", "assertion", "subscription")
_ESCAPED_LETTER = re.compile(r"\\u(?:00[4-7]|212a)")
# A field's name as compared: lower case, no separators (accessToken, access-token, ...).
_SENSITIVE_KEYS = frozenset(name.replace("_", "").replace("-", "") for name in SENSITIVE_FIELDS)
# Each name spelled with "_", "-" or nothing between its words (the regexes are case-blind).
_SPELLINGS = {name.replace("_", sep) for name in SENSITIVE_FIELDS for sep in ("_", "-", "")}
_FIELD_NAMES = "|".join(re.escape(name) for name in sorted(_SPELLINGS))
_FORM_FIELD = re.compile(rf"(?i)((?:^|[&?\s])(?:{_FIELD_NAMES})=)[^&\s]*")
_JSON_PAIR = re.compile(rf'(?i)("(?:{_FIELD_NAMES})"\s*:\s*)"(?!\[REDACTED\])(?:[^"\\]|\\.)*"')


def is_document(interface: str | None, status: int | None) -> bool:
    """Whether an answer is a partner document (a 2xx of its API), recorded as written, rather
    than a login's or an error's, masked by value."""
    return interface != "identity" and isinstance(status, int) and 200 <= status < 300


def is_sent_document(interface: str | None, method: str | None) -> bool:
    """Whether a request's body is a document we send (a POST of an exchange role), recorded
    as written; any other body we send (a login form) is masked by value."""
    return interface in ("supplier", "consumer") and method == "POST"


class Redactor:
    """Masks secrets and issued tokens: everywhere by position, by value where that is safe.
    Thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._fixed = frozenset(s for s in secrets if s)
        self._learned: deque[str] = deque(maxlen=_MAX_REMEMBERED)
        self._state = self._state_of(self._fixed)
        self._tokens = tuple(s for s in self._fixed if len(s) >= MIN_DOCUMENT_TOKEN)

    @staticmethod
    def _state_of(secrets: Iterable[str]) -> tuple[SecretMatcher, tuple[str, ...]]:
        """The secrets' matcher, and the substrings :meth:`clean` looks for as written. Swapped
        whole, so that readers see one."""
        matcher = SecretMatcher.of(secrets)
        return matcher, _SHAPES + matcher.cores

    def add(self, value: str | None) -> None:
        """Mask ``value`` by value from now on (an access token just issued, say)."""
        if not value:
            return
        with self._lock:
            if value not in self._fixed and value not in self._learned:
                self._learned.append(value)
                self._state = self._state_of(self._fixed.union(self._learned))
                self._tokens = tuple(
                    t for t in self._fixed.union(self._learned) if len(t) >= MIN_DOCUMENT_TOKEN
                )

    def clean(self, text: str) -> bool:
        """True when substring tests prove ``text`` holds nothing :meth:`text` would mask."""
        secrets, needles = self._state
        if any(needle in text for needle in needles) or secrets.unfiltered_in(text):
            return False
        low = text.lower()
        return not any(hint in low for hint in _FIELD_HINTS) and not _ESCAPED_LETTER.search(low)

    @overload
    def text(self, text: str) -> str: ...
    @overload
    def text(self, text: None) -> None: ...
    def text(self, text: str | None) -> str | None:
        """``text`` with secrets, tokens, JWTs, bearer credentials and sensitive fields masked:
        for what we say, and for login and error answers."""
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

    @overload
    def document(self, text: str) -> str: ...
    @overload
    def document(self, text: None) -> None: ...
    def document(self, text: str | None) -> str | None:
        """A partner document (or one we send) as written, but for secrets and tokens long
        enough to be echoes of ours, and JWTs (no document spells one by chance)."""
        if not text:
            return text
        for token in self._tokens:
            if token in text:
                text = text.replace(token, MASK)
        return _JWT.sub(MASK, text) if "eyJ" in text else text

    def stored(self, text: str) -> str:
        """A text of ours made of what the store holds (a timeline, a bundle's README): as
        :meth:`document` keeps it, and fields named as secrets masked (``?access_token=...``
        in a URL), for a store that leaked one."""
        return _fields(self.document(text)) if text else text

    def answer(self, text: _Text, *, document: bool) -> _Text:
        """:meth:`document` or :meth:`text`, as :func:`is_document` decided."""
        return self.document(text) if document else self.text(text)  # type: ignore[return-value]

    def data(self, value: Any) -> Any:
        """JSON-able ``value`` with sensitive fields and secret values masked (a copy if any).

        Value by value, never the JSON text: a secret such as ``true`` or ``1234`` must not
        break the syntax around it. A number is masked whole when its text spells a secret; a
        sensitive field is masked even when null.

        >>> Redactor(["1234"]).data({"pin": 1234, "ok": True, "password": None, "n": "a1234"})
        {'pin': '[REDACTED]', 'ok': True, 'password': '[REDACTED]', 'n': 'a[REDACTED]'}
        """
        if value is None or self.clean(json.dumps(value, ensure_ascii=False, default=str)):
            return value
        return self._masked(value)

    def headers(
        self,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
        *,
        document: bool = False,
    ) -> dict[str, str]:
        """Headers as a plain dict, sensitive ones masked whatever their value, the others as
        :meth:`answer` masks them."""
        return {k: self.answer(v, document=document) for k, v in headers_by_name(headers).items()}

    def url(self, url: str) -> str:
        """A URL with its user name, password and sensitive query parameters masked, and
        tokens of ours; its path (ids) is never rewritten."""
        parts = urlsplit(url)
        if parts.password is not None or parts.username is not None:
            parts = parts._replace(netloc=f"{MASK}@{parts.netloc.rpartition('@')[2]}")
        if parts.query:
            parts = parts._replace(query=_form(parts.query))
        return self.document(urlunsplit(parts))

    def body(
        self,
        content: bytes | str | None,
        content_type: str | None = None,
        *,
        document: bool = False,
    ) -> str:
        """A body as text: a document as :meth:`document` keeps it, else with sensitive form
        or JSON fields and known secrets masked."""
        if not content:
            return ""
        text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
        if document:
            return self.document(text)
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
                if is_sensitive(k)
                else self._masked(v)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._masked(v) for v in value]
        if value is None or isinstance(value, bool):
            return value
        # A number (or a date or decimal held as its str) is masked whole when it spells a
        # secret of 8 characters or more: a shorter one is far likelier a count than an echo.
        shown = str(value)
        if len(shown) < WHOLE_WORD_BELOW:
            return value
        return value if self.text(shown) == shown else MASK


def is_sensitive(name: object) -> bool:
    """Whether a field so named holds a secret, whatever its case and separators
    (``access_token``, ``accessToken``, ``Access-Token``)."""
    return str(name).lower().replace("_", "").replace("-", "") in _SENSITIVE_KEYS


def headers_by_name(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
) -> dict[str, str]:
    """Headers as a plain dict of texts, the sensitive ones masked by name only."""
    items = headers.items() if isinstance(headers, Mapping) else headers or ()
    return {
        str(name): MASK if str(name).lower() in SENSITIVE_HEADERS else str(value)
        for name, value in items
    }


def _form(query: str) -> str:
    """A form body or query string with its sensitive fields masked."""
    pairs = parse_qsl(query, keep_blank_values=True)
    masked = [(k, MASK if is_sensitive(k) else v) for k, v in pairs]
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
        return {k: MASK if is_sensitive(k) else _masked_fields(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_fields(v) for v in value]
    return value
