r"""How a secret can be spelled in the texts we record, as a regular expression that finds it in
every spelling JSON, XML and URL encoders give it, so that masking finds what a partner echoes.

Each character of a secret other than ``[A-Za-z0-9_.~-]`` (which no encoder escapes) may be:

- written as it is;
- a JSON escape: ``\uXXXX`` in either case (Python's ``ensure_ascii``, .NET's ``\u002B``,
  Gson's ``\u003d``, surrogate pairs beyond U+FFFF), ``\"``, ``\\``, ``\/`` (PHP), ``\n``...;
- an XML reference: ``&amp;`` ``&lt;`` ``&gt;`` ``&quot;`` ``&apos;``, or a numeric one
  (``&#39;``, ``&#x27;``, ``&#233;``, ``&#10;``), its ``&`` itself JSON-escaped or not (XML
  inside a JSON string), or behind a backslash (JSON inside XML: ``\&quot;``);
- percent-encoded, as a form body or a query string carries it (an identity server echoing
  the form it got): ``%XX`` per UTF-8 byte, hex in either case, and ``+`` for a space.

Each character is matched on its own, so spellings that mix styles are found too.

>>> import re
>>> pattern = re.compile(spelling_pattern("ab+c/d"))
>>> spellings = ("ab+c/d", "ab\\u002Bc\\/d", "ab&#43;c/d", "ab%2bc%2Fd", "ab-c/d")
>>> [bool(pattern.fullmatch(s)) for s in spellings]
[True, True, True, True, False]
>>> plain_core("ab+cd/ef-1234")
'ef-1234'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

# Characters no XML or JSON encoder escapes: a run of them is in every spelling of a secret.
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]+")
_NAMED = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
_JSON_SHORT = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "\b": "b",
    "\f": "f",
    "\n": "n",
    "\r": "r",
    "\t": "t",
}
_AMPERSAND = r"(?:&|\\u0026)"  # an XML reference's "&", as written or as JSON escapes it


def spelling_pattern(secret: str) -> str:
    """A regular expression (text) matching ``secret`` in every spelling in the module docs."""
    if _PLAIN.fullmatch(secret):
        return re.escape(secret)
    return "".join(_char_pattern(ch) for ch in secret)


def plain_core(secret: str) -> str:
    """The longest run of characters that no encoder escapes: every spelling of ``secret``
    contains it, so a text without it holds no spelling of ``secret`` at all."""
    return max(_PLAIN.findall(secret), key=len, default="")


@lru_cache(maxsize=1024)
def _char_pattern(ch: str) -> str:
    if _PLAIN.fullmatch(ch):
        return re.escape(ch)
    spellings = [_percent(ch), *_escapes(ch)]
    if ch == " ":  # a form's or a query's "+", itself escaped or not (JSON echoing a form)
        spellings.insert(1, f"(?:{'|'.join(_escapes('+'))})")
    return f"(?:{'|'.join(spellings)})"


def _escapes(ch: str) -> list[str]:
    """The JSON and XML spellings of ``ch``, longest first: a regular expression takes the
    first alternative that matches, and "&" alone must not win over "&amp;"."""
    references = [f"#0*{ord(ch)};", f"#[xX]0*{_hex_digits(ord(ch))};"]
    if ch in _NAMED:
        references.append(_NAMED[ch] + ";")
    reference = f"{_AMPERSAND}(?:{'|'.join(references)})"
    spellings = [reference, _json_hex(ch), re.escape(ch)]
    if ch == '"':  # JSON inside XML: the backslash of \" before the XML reference
        spellings.insert(0, r"\\" + reference)
    if ch in _JSON_SHORT:
        spellings.insert(-1, re.escape("\\" + _JSON_SHORT[ch]))
    return spellings


def _json_hex(ch: str) -> str:
    """``\\uXXXX`` for ``ch`` in either case (a surrogate pair beyond U+FFFF)."""
    units = ch.encode("utf-16-be", "surrogatepass")
    return "".join(
        r"\\u" + _hex_digits(units[i] << 8 | units[i + 1], width=4) for i in range(0, len(units), 2)
    )


def _percent(ch: str) -> str:
    """``%XX`` per UTF-8 byte of ``ch``, hex in either case (``quote``, ``urlencode``)."""
    return "".join("%" + _hex_digits(byte, width=2) for byte in ch.encode("utf-8", "surrogatepass"))


def _hex_digits(value: int, *, width: int = 1) -> str:
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


MIN_CORE_LENGTH = 4  # a shorter core would match ordinary text too often to be a filter
# A secret shorter than this is found only as a word of its own: a static token "t" must not
# turn "Connection refused" into "Connec[REDACTED]ion refused". A longer one is found anywhere.
WHOLE_WORD_BELOW = 8


@dataclass(frozen=True)
class SecretMatcher:
    """Finds and masks a set of secrets in every spelling; immutable, so threads share one.

    Each secret is looked for with its own regular expression, and only in texts holding its
    plain core (a substring test), so adding a secret costs the same however many there are.

    >>> m = SecretMatcher.of(["s3cret+key"])
    >>> m.holds("x s3cret\\u002Bkey"), m.mask("x s3cret\\u002Bkey", "***")
    (True, 'x ***')
    """

    # (core, pattern) per secret, longest secret first; an empty core: searched everywhere
    entries: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def of(cls, secrets: Iterable[str]) -> SecretMatcher:
        ordered = sorted(set(secrets), key=lambda s: (-len(s), s))
        return cls(tuple((_filter(secret), _compiled(secret)) for secret in ordered))

    @property
    def cores(self) -> tuple[str, ...]:
        """The substrings that filter texts: a text with none holds no filtered secret."""
        return tuple(sorted({core for core, _ in self.entries if core}))

    def unfiltered_in(self, text: str) -> bool:
        """Whether a secret whose core is too short to filter by is in ``text``."""
        return any(not core and pattern.search(text) for core, pattern in self.entries)

    def holds(self, text: str) -> bool:
        """Whether ``text`` holds one of the secrets, in any spelling."""
        return any(
            (not core or core in text) and pattern.search(text) for core, pattern in self.entries
        )

    def mask(self, text: str, mask: str) -> str:
        """``text`` with every spelling of every secret replaced by ``mask``."""
        for core, pattern in self.entries:
            if not core or core in text:
                text = pattern.sub(mask, text)
        return text


def _filter(secret: str) -> str:
    core = plain_core(secret)
    return core if len(core) >= MIN_CORE_LENGTH else ""


@lru_cache(maxsize=4096)  # a session learns tokens one by one: each is compiled once
def _compiled(secret: str) -> re.Pattern[str]:
    pattern = spelling_pattern(secret)
    if len(secret) < WHOLE_WORD_BELOW:
        pattern = f"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])"
    return re.compile(pattern)
