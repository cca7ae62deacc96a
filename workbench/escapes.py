r"""How a secret can be spelled in the texts we record: as written, and as XML and JSON
encoders escape it, so that masking finds it in every spelling a partner may echo.

- XML: ``&amp;`` and ``&lt;`` always; ``&gt;``, ``&quot;``, ``&apos;`` in some places;
  characters outside ASCII as numeric references (``&#233;``, ``&#xE9;``) when a document is
  written in ASCII;
- JSON, each applied to every XML spelling (a PESC document travels inside a JSON string):
  characters outside ASCII as they are or as ``\u00e9``/``\u00E9``; none, HTML's (``<>&``, as
  Go writes them) or .NET's (``<>&'"+```, System.Text.Json) ASCII characters as ``\uXXXX``;
  ``/`` as it is or as ``\/`` (PHP).

An encoder escapes every occurrence of a character the same way, so a spelling is one choice
per kind of character, not one per occurrence.

>>> sorted(escaped_forms("ab+c/d"))
['ab+c/d', 'ab+c\\/d', 'ab\\u002Bc/d', 'ab\\u002Bc\\/d', 'ab\\u002bc/d', 'ab\\u002bc\\/d']
>>> plain_core("ab+cd/ef-1234")
'ef-1234'
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import product

# Characters no XML or JSON encoder escapes: a run of them is in every spelling of a secret.
_PLAIN = re.compile(r"[A-Za-z0-9_.~-]+")
_XML_OPTIONAL = ((">", "&gt;"), ('"', "&quot;"), ("'", "&apos;"))
# ASCII characters some encoders write as \uXXXX: HTML-safe ones (Go), and .NET's default set.
_ESCAPED_ASCII = (frozenset(), frozenset("<>&"), frozenset("<>&'\"+`\x7f"))
_JSON_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


@lru_cache(maxsize=4096)  # the session rebuilds its matcher with every token it learns
def escaped_forms(secret: str) -> frozenset[str]:
    """``secret`` as written and in every XML and JSON spelling listed in the module docs."""
    forms = _xml_forms(secret)  # as they are in an XML or plain text
    for xml in list(forms):
        for ascii_only, upper, escaped in product((False, True), (False, True), _ESCAPED_ASCII):
            form = _json_string(xml, ascii_only=ascii_only, upper=upper, escaped=escaped)
            forms.add(form)
            forms.add(form.replace("/", "\\/"))
    return frozenset(forms)


def plain_core(secret: str) -> str:
    """The longest run of characters that no encoder escapes: every spelling of ``secret``
    contains it, so a text without it holds no spelling of ``secret`` at all."""
    return max(_PLAIN.findall(secret), key=len, default="")


def _xml_forms(secret: str) -> set[str]:
    base = secret.replace("&", "&amp;").replace("<", "&lt;")
    forms = {secret}
    for optional in product(*[((c, c), (c, e)) for c, e in _XML_OPTIONAL if c in secret]):
        form = base
        for char, entity in optional:
            form = form.replace(char, entity)
        forms.add(form)
    if not secret.isascii():  # written by an ASCII-encoded serializer: numeric references
        for pattern in ("&#{};", "&#x{:X};", "&#x{:x};"):
            forms |= {_numeric(form, pattern) for form in list(forms)}
    return forms


def _numeric(text: str, pattern: str) -> str:
    return "".join(ch if ch.isascii() else pattern.format(ord(ch)) for ch in text)


def _json_string(text: str, *, ascii_only: bool, upper: bool, escaped: frozenset[str]) -> str:
    """``text`` inside a JSON string, as one encoder writes it."""
    out = []
    for ch in text:
        if ch in escaped or (ch < " " and ch not in _JSON_SHORT):
            out.append(_hex(ch, upper))
        elif ch in _JSON_SHORT:
            out.append(_JSON_SHORT[ch])
        elif ascii_only and not ch.isascii():
            out.append(_hex(ch, upper))
        else:
            out.append(ch)
    return "".join(out)


def _hex(ch: str, upper: bool) -> str:
    units = ch.encode("utf-16-be", "surrogatepass")  # two units for characters beyond U+FFFF
    digits = "{:04X}" if upper else "{:04x}"
    return "".join(
        "\\u" + digits.format(units[i] << 8 | units[i + 1]) for i in range(0, len(units), 2)
    )
