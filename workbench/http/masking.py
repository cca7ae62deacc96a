"""What of a secret may be recorded or said: the one masking rule, and text safe to print.

Credentials are taken as the partner issues them, so masking never rewrites a partner document:
a subscription key ``2026`` must not turn a transcript's dates into ``[REDACTED]-02-20``.

- By *position*, always: sensitive headers, form and JSON fields, a URL's user and password.
- By *value* (:meth:`Redactor.text`) in logins, error answers and all we say: each secret in
  every spelling JSON, XML and URL encoders give it (one under 8 characters only as a word of
  its own), JWTs and ``Bearer`` credentials by shape.
- A *document* (a 2xx answer of the partner's API, or one we send) is kept as written but for
  echoes of our secrets and tokens of 16 characters or more, and JWTs (:meth:`Redactor.document`).
- Student personal data (:class:`Personal`), only where asked: a support bundle's
  ``--redact-personal``.

>>> Redactor(["s3cret"]).text("client_secret=s3cret")
'client_secret=[REDACTED]'
"""

from __future__ import annotations

import contextlib
import html
import json
import re
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "[REDACTED]"
SENSITIVE_HEADERS = frozenset({"authorization", "proxy-authorization", "subscription-key",
                               "ocp-apim-subscription-key", "x-api-key", "cookie",
                               "set-cookie"})  # fmt: skip
SENSITIVE_FIELDS = frozenset({"access_token", "refresh_token", "id_token", "token",
                              "client_secret", "password", "subscription_key", "subscription-key",
                              "assertion", "client_assertion"})  # fmt: skip
MIN_DOCUMENT_TOKEN = 16  # this long, a secret found in a document is an echo, not chance
WHOLE_WORD_BELOW = 8  # a shorter secret is masked only as a word of its own
_Text = TypeVar("_Text", str, str | None)
Headers = Mapping[str, str] | Iterable[tuple[str, str]] | None

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"([Bb]earer\s+)[A-Za-z0-9._~+/=-]{8,}")
_SENSITIVE_KEYS = frozenset(name.replace("_", "").replace("-", "") for name in SENSITIVE_FIELDS)
_SPELLINGS = {name.replace("_", sep) for name in SENSITIVE_FIELDS for sep in ("_", "-", "")}
_FIELD_NAMES = "|".join(re.escape(name) for name in sorted(_SPELLINGS))
_FORM_FIELD = re.compile(rf"(?i)((?:^|[&?\s])(?:{_FIELD_NAMES})=)[^&\s]*")
_JSON_PAIR = re.compile(rf'(?i)("(?:{_FIELD_NAMES})"\s*:\s*)"(?!\[REDACTED\])(?:[^"\\]|\\.)*"')

# Characters no encoder escapes; any other may be itself, a JSON escape, an XML reference
# (its "&" maybe JSON-escaped) or percent-encoded (+ for a space).
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]+")
_NAMED = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
_JSON_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r",
               "\t": "t"}  # fmt: skip


def spelling_pattern(secret: str) -> str:
    """A regex matching ``secret`` in every spelling JSON, XML and URL encoders give each of its
    characters."""
    return "".join(re.escape(c) if _PLAIN.fullmatch(c) else _char_pattern(c) for c in secret)


def _char_pattern(ch: str) -> str:
    spellings = [
        "".join("%" + _hex(b, 2) for b in ch.encode("utf-8", "surrogatepass")),
        *_escapes(ch),
    ]
    if ch == " ":
        spellings.insert(1, f"(?:{'|'.join(_escapes('+'))})")
    return f"(?:{'|'.join(spellings)})"


def _escapes(ch: str) -> list[str]:
    """JSON and XML spellings of ``ch``, longest first ("&amp;" must win over "&")."""
    references = [f"#0*{ord(ch)};", f"#[xX]0*{_hex(ord(ch))};"]
    if ch in _NAMED:
        references.append(_NAMED[ch] + ";")
    reference = rf"(?:&|\\u0026)(?:{'|'.join(references)})"
    units = ch.encode("utf-16-be", "surrogatepass")
    json_hex = "".join(
        r"\\u" + _hex(units[i] << 8 | units[i + 1], 4) for i in range(0, len(units), 2)
    )
    spellings = [reference, json_hex, re.escape(ch)]
    if ch == '"':  # JSON inside XML: \&quot;
        spellings.insert(0, r"\\" + reference)
    if ch in _JSON_SHORT:
        spellings.insert(-1, re.escape("\\" + _JSON_SHORT[ch]))
    return spellings


def _hex(value: int, width: int = 1) -> str:
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


def _secrets_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    parts = []
    for secret in sorted(set(secrets), key=lambda s: (-len(s), s)):
        pattern = spelling_pattern(secret)
        short = len(secret) < WHOLE_WORD_BELOW
        parts.append(f"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])" if short else pattern)
    return re.compile("|".join(parts)) if parts else None


def is_document(interface: str | None, status: int | None) -> bool:
    """Whether an answer is a partner document (a 2xx of its API), kept as written."""
    return interface != "identity" and isinstance(status, int) and 200 <= status < 300


def is_sent_document(interface: str | None, method: str | None) -> bool:
    """Whether a request's body is a document we send (an exchange role's POST)."""
    return interface in ("supplier", "consumer") and method == "POST"


class Redactor:
    """Masks secrets and issued tokens by the module's rule. Thread-safe."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._fixed = frozenset(s for s in secrets if s)
        self._learned: deque[str] = deque(maxlen=2048)
        self._pattern = _secrets_pattern(self._fixed)
        self._tokens = tuple(s for s in self._fixed if len(s) >= MIN_DOCUMENT_TOKEN)

    def add(self, value: str | None) -> None:
        """Mask ``value`` by value from now on (an access token just issued)."""
        with self._lock:
            if value and value not in self._fixed and value not in self._learned:
                self._learned.append(value)
                known = self._fixed.union(self._learned)
                self._pattern = _secrets_pattern(known)
                self._tokens = tuple(t for t in known if len(t) >= MIN_DOCUMENT_TOKEN)

    def text(self, text: _Text) -> _Text:
        """``text`` with secrets, tokens, JWTs, bearer credentials and sensitive fields masked."""
        if not text:
            return text
        pattern = self._pattern
        if pattern is not None and pattern.search(text):
            masked = self._json(text, by_value=True)
            if masked is not None:
                return masked
            text = pattern.sub(MASK, text)
        text = _JWT.sub(MASK, text)
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
        return self._fields(text)

    def document(self, text: _Text) -> _Text:
        """A document as written, but for echoes of long secrets and tokens, and JWTs."""
        if not text:
            return text
        for token in self._tokens:
            text = text.replace(token, MASK)
        return _JWT.sub(MASK, text) if "eyJ" in text else text

    def stored(self, text: str) -> str:
        """A text of ours made of what the store holds: :meth:`document`, secret fields masked."""
        return self._fields(self.document(text)) if text else text

    def answer(self, text: _Text, *, document: bool) -> _Text:
        """:meth:`document` or :meth:`text`."""
        return self.document(text) if document else self.text(text)  # type: ignore[return-value]

    def data(self, value: Any) -> Any:
        """JSON-able ``value`` masked value by value; a number spelling a secret of 8 characters
        or more is masked whole.

        >>> Redactor(["12345678"]).data({"pin": 12345678, "password": None, "n": "a12345678"})
        {'pin': '[REDACTED]', 'password': '[REDACTED]', 'n': 'a[REDACTED]'}
        """
        return None if value is None else self._masked(value)

    def headers(self, headers: Headers, *, document: bool = False) -> dict[str, str]:
        """Headers as a dict: sensitive ones masked whole, the rest as :meth:`answer` says."""
        items = headers.items() if isinstance(headers, Mapping) else headers or ()
        return {
            str(k): MASK
            if str(k).lower() in SENSITIVE_HEADERS
            else self.answer(str(v), document=document)
            for k, v in items
        }

    def url(self, url: str) -> str:
        """A URL with its user, password, sensitive parameters and our tokens masked."""
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
        """A body as text, masked as :meth:`answer` says (a form's fields by position too)."""
        if not content:
            return ""
        text = content.decode("utf-8", errors="replace") if isinstance(content, bytes) else content
        if document:
            return self.document(text)
        kind = (content_type or "").split(";")[0].strip().lower()
        if kind == "application/x-www-form-urlencoded":
            text = _form(text)
        return self.text(text)

    def _json(self, text: str, *, by_value: bool) -> str | None:
        """JSON ``text`` with sensitive fields (``by_value``: all) masked; None if not JSON, or
        nested too deep to walk (a hostile answer: the callers mask it as text)."""
        if not text.lstrip().startswith(("{", "[")):
            return None
        try:
            decoded = json.loads(text)
            masked = self._masked(decoded, by_value=by_value)
        except (ValueError, RecursionError):
            return None
        return text if masked == decoded else json.dumps(masked, ensure_ascii=False)

    def _fields(self, text: str) -> str:
        """Sensitive fields of a JSON document, or a form, inside ``text`` masked by position."""
        masked = self._json(text, by_value=False)
        if masked is not None:
            return masked
        text = _FORM_FIELD.sub(lambda m: m.group(1) + MASK, text)
        # JSON that does not parse (cut, embedded): "field": "value" pairs by shape.
        return _JSON_PAIR.sub(lambda m: m.group(1) + '"' + MASK + '"', text)

    def _masked(self, value: Any, *, by_value: bool = True) -> Any:
        if isinstance(value, Mapping):
            return {
                (self.text(k) if by_value and isinstance(k, str) else k): MASK
                if is_sensitive(k)
                else self._masked(v, by_value=by_value)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self._masked(v, by_value=by_value) for v in value]
        if isinstance(value, str) and by_value:
            return self.text(value)
        # A number shorter than 8 is far likelier a count than an echo of a secret.
        if not by_value or value is None or isinstance(value, bool | str):
            return value
        shown = str(value)
        if len(shown) < WHOLE_WORD_BELOW:
            return value
        return value if self.text(shown) == shown else MASK


def is_sensitive(name: object) -> bool:
    """Whether a field so named holds a secret, whatever its case and separators."""
    return str(name).lower().replace("_", "").replace("-", "") in _SENSITIVE_KEYS


def _form(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode([(k, MASK if is_sensitive(k) else v) for k, v in pairs], safe="[]")


# C0 and C1 controls, DEL, and the bidirectional formatting characters (an id shown reversed).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI}]")
_CONTROL_BUT_LINES = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_BIDI}]")


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as its escape, safe on a terminal."""
    pattern = _CONTROL_BUT_LINES if keep_newlines else _CONTROL
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


# Leaf elements masked by ``redact_personal``, wherever they appear (organisation contacts
# included: masking too much is the safe side of a document that leaves the institution).
PERSONAL_ELEMENTS: dict[str, tuple[str, ...]] = {
    "names": ("NamePrefix", "FirstName", "MiddleName", "LastName", "NameSuffix", "CompositeName"),
    "birth": ("BirthDate", "Birthday", "BirthCity", "BirthStateProvinceCode", "BirthCountry"),
    "identifiers": ("SchoolAssignedPersonID", "AgencyAssignedID", "RecipientAssignedID",
                    "SIN", "NSN", "SSN", "PartialSSN"),
    "addresses": ("AddressLine", "City", "StateProvince", "StateProvinceCode", "PostalCode"),
    "emails": ("EmailAddress",),
    "phones": ("CountryPrefixCode", "AreaCityCode", "PhoneNumber", "PhoneNumberExtension"),
}  # fmt: skip


def _element_pattern(names: Iterable[str], *, escaped: bool) -> re.Pattern[str]:
    """A leaf element named one of ``names`` (any prefix), raw or XML-escaped once."""
    alternatives = "|".join(sorted(names, key=len, reverse=True))
    prefix = r"(?:[A-Za-z_][\w.-]*:)?"
    lt, gt = ("&lt;", "&gt;") if escaped else ("<", ">")
    attributes = r"(?:\s(?:(?!&gt;)[^<>])*)?" if escaped else r"(?:\s[^<>]*)?"
    content = r"(?:(?!&lt;)[^<])*" if escaped else r"[^<]*"
    return re.compile(
        f"({lt}{prefix}(?P<name>{alternatives}){attributes}{gt})(?P<value>{content})"
        f"({lt}/{prefix}(?P=name)\\s*{gt})"
    )


_ALL_PERSONAL = tuple(name for names in PERSONAL_ELEMENTS.values() for name in names)
# (pattern, how many times its content is escaped)
_ELEMENTS = ((_element_pattern(_ALL_PERSONAL, escaped=False), 1),
             (_element_pattern(_ALL_PERSONAL, escaped=True), 2))  # fmt: skip
_PLACEHOLDER = re.compile(r"\s*\[(?:[A-Za-z]+-\d+|REDACTED|personal)\]\s*")
_MARKUP = r"</?[A-Za-z_][^<>]*>|&lt;/?[A-Za-z_](?:(?!&gt;)[^<>])*&gt;"


class Personal:
    """Masks student personal data: by element (:data:`PERSONAL_ELEMENTS`), then every value so
    learned wherever else it shows up (a note, a tracking id, a validation message, a JSON
    field), outside markup. The same value always gets the same placeholder."""

    def __init__(self, *, active: bool = True) -> None:
        self.active = active  # inactive: every text as it is
        self._placeholders: dict[str, str] = {}  # value (lower case) -> placeholder
        self._variants: dict[str, str] = {}  # each spelling of a value -> placeholder
        self._net: re.Pattern[str] | None = None

    def learn(self, text: str) -> None:
        """Remember the personal values in ``text`` (and give each its placeholder)."""
        if not self.active:
            return
        for pattern, unescape in _ELEMENTS:
            for match in pattern.finditer(text):
                self._placeholder(match["name"], match["value"], unescape)

    def text(self, text: str) -> str:
        """``text`` with every personal element's content and every learned value masked."""
        if not self.active:
            return text
        for pattern, unescape in _ELEMENTS:

            def masked(m: re.Match[str], unescape: int = unescape) -> str:
                return m[1] + self._placeholder(m["name"], m["value"], unescape) + m[4]

            text = pattern.sub(masked, text)
        net = self._pattern()
        if net is None:
            return text
        return net.sub(lambda m: m[0] if m["markup"] else self._variant(m[0]), text)

    def _placeholder(self, name: str, value: str, unescape: int) -> str:
        if not value.strip() or _PLACEHOLDER.fullmatch(value):
            return value
        plain = value
        for _ in range(unescape):
            plain = html.unescape(plain)
        if "\\" in plain:  # the document was read out of a JSON string
            with contextlib.suppress(ValueError):
                plain = json.loads(f'"{plain}"')
        plain = plain.strip()
        key = plain.lower()
        if key not in self._placeholders:
            count = sum(p.startswith(f"[{name}-") for p in self._placeholders.values())
            self._placeholders[key] = f"[{name}-{count + 1}]"
            self._add_variants(plain, self._placeholders[key])
        return self._placeholders[key]

    def _add_variants(self, value: str, placeholder: str) -> None:
        if len(value) < 2 or (len(value) < 6 and not any(c.isalpha() for c in value)):
            return  # "1" or "416" everywhere would garble the bundle; the element still goes
        escaped = html.escape(value, quote=False)
        spellings = {
            value,
            escaped,
            escaped.replace("'", "&apos;").replace('"', "&quot;"),
            html.escape(value),
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
        }
        for spelling in spellings:
            self._variants.setdefault(spelling, placeholder)
        self._net = None

    def _pattern(self) -> re.Pattern[str] | None:
        # Case-insensitive from 4 characters; shorter ones ("Li", "ON") only as spelled.
        if self._net is None and self._variants:
            ordered = sorted(self._variants, key=len, reverse=True)
            long = "|".join(re.escape(v) for v in ordered if len(v) >= 4)
            short = "|".join(re.escape(v) for v in ordered if len(v) < 4)
            values = "|".join(filter(None, [f"(?i:{long})" if long else "", short]))
            self._net = re.compile(f"(?P<markup>{_MARKUP})|(?<!\\w)(?:{values})(?!\\w)")
        return self._net

    def _variant(self, found: str) -> str:
        lower = found.lower()  # a value found case-blind: the placeholder of its spelling
        same = (p for v, p in self._variants.items() if v.lower() == lower)
        return self._variants.get(found) or next(same, "[personal]")
