"""What arrives, made ready for the parser: decoded, unescaped once, its prolog checked.

A ``PESCXML`` value may be bytes or text, raw XML or XML escaped once (``&lt;...``), with a byte
order mark, an encoding declaration or leading whitespace. ``admit`` turns any of these into
the UTF-8 bytes the parser reads, after refusing a document type declaration or a processing
instruction in the prolog, so that no DTD ever reaches the parser. UTF-8 bytes, the common
case, go to the parser as they are (no decoding, no copy beyond stripping leading whitespace);
their text is decoded only when asked for.

Only the encodings PESC documents use are read: UTF-8 (and its subset US-ASCII), UTF-16 and the
Western single-byte ISO-8859-1 and windows-1252. Any other (UTF-7, UTF-32, EBCDIC...), whether
declared or detected from the first bytes, is refused by name: in an encoding the workbench
does not decode, markup could hide from the prolog check. The parser is told the payload is
UTF-8, so it never decodes differently from what was checked.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

from lxml import etree

from workbench.errors import PescError

XINCLUDE_NAMESPACES = ("http://www.w3.org/2001/XInclude", "http://www.w3.org/2003/XInclude")

_TEXT_WHITESPACE = " \t\r\n\ufeff"
_BYTE_WHITESPACE = b" \t\r\n"
# The whole declaration, however long: it ends at the first '>'.
_DECLARATION = re.compile(r"""^<\?xml\s[^>]*?\bencoding\s*=\s*["']([^"'>]*)["']""")
_DECLARATION_BYTES = re.compile(_DECLARATION.pattern.encode())
# Encodings PESC documents use, by name without case, '-' or '_': the codec each is read with.
_ENCODINGS = {
    "utf8": "utf-8",
    "usascii": "utf-8",
    "ascii": "utf-8",
    "utf16": "utf-16",
    "utf16le": "utf-16-le",
    "utf16be": "utf-16-be",
    "iso88591": "latin-1",
    "latin1": "latin-1",
    "windows1252": "cp1252",
    "cp1252": "cp1252",
}
# First bytes of documents in encodings PESC never uses (XML 1.0 appendix F), checked before
# UTF-16's: UTF-32-LE's byte order mark starts like UTF-16-LE's.
_REFUSED_SIGNATURES = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (b"<\x00\x00\x00", "UTF-32"),
    (b"\x00\x00\x00<", "UTF-32"),
    (b"\x00<\x00\x00", "UCS-4"),
    (b"\x00\x00<\x00", "UCS-4"),
    (b"\x4c\x6f\xa7\x94", "EBCDIC"),  # '<?xm' in EBCDIC
    (b"+/v", "UTF-7"),
)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_ESCAPE = re.compile(r"&(lt|gt|amp|quot|apos|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_REPLACEMENTS = tuple((f"&{name};", _NAMED[name]) for name in ("lt", "gt", "quot", "apos", "amp"))


@dataclass(frozen=True, slots=True)
class Admitted:
    """Parser input: ``payload`` (UTF-8 bytes), where the root element starts in it, and the
    document's text (None when it is ``payload`` itself, to be decoded on demand)."""

    payload: bytes
    body_start: int
    text: str | None


def admit(data: str | bytes) -> Admitted:
    """Normalize input for the parser; ``PescError`` for empty, undecodable, escaped-twice,
    DTD-bearing or PI-bearing input."""
    if isinstance(data, bytes):
        raw = data[3:] if data.startswith(codecs.BOM_UTF8) else data
        raw = raw.lstrip(_BYTE_WHITESPACE)
        if raw[:1] == b"<" and _is_utf8(raw):
            return Admitted(raw, _check_prolog(raw, _BYTES), None)
        data = _decode(data)
    text = _unescape_if_escaped(data.lstrip(_TEXT_WHITESPACE))
    body_start = _check_prolog(text, _TEXT)
    return Admitted(_encode(text, body_start), 0, text)


def check_tree(root: etree._Element, admitted: Admitted) -> None:
    """Refuse a document type declaration, and processing instructions and XInclude elements
    anywhere in the tree.

    A byte search decides whether the tree needs walking: without a ``?`` after the prolog
    there can be no processing instruction, and without the word ``XInclude`` no XInclude
    namespace. A marker inside a comment or CDATA section only costs a walk, never a refusal.
    (Searching the bytes for ``<?`` would be slower than walking the tree: ``<`` is everywhere.)
    """
    if root.getroottree().docinfo.internalDTD is not None:
        raise _dtd_error()  # the prolog check missed it: refused all the same
    payload = admitted.payload
    if payload.find(b"?", admitted.body_start) != -1 and (
        next(root.iter(etree.ProcessingInstruction), None) is not None
        or next(root.itersiblings(etree.ProcessingInstruction), None) is not None
    ):
        raise _pi_error()
    if b"X" in payload and b"XInclude" in payload:  # a one-byte search is a memchr: cheap
        for namespace in XINCLUDE_NAMESPACES:
            if next(root.iter(f"{{{namespace}}}*"), None) is not None:
                raise PescError(
                    "The XML contains an XInclude element, which would pull in other files or "
                    "URLs. PESC messages never use XInclude; refused.",
                    reason="xinclude",
                )


def _is_utf8(raw: bytes) -> bool:
    """Whether bytes starting with '<' declare UTF-8 (or ASCII), or no encoding at all."""
    if raw.startswith(b"<?xml"):
        return _declared_codec(raw) in (None, "utf-8")
    return not raw.startswith(b"<\x00")  # UTF-16 (or UTF-32) without a byte order mark


def _declared_codec(prolog: str | bytes) -> str | None:
    """The codec named by the XML declaration at the start of ``prolog`` (None without one);
    ``PescError`` naming the encoding when it is not one PESC documents use."""
    if isinstance(prolog, bytes):
        found = _DECLARATION_BYTES.match(prolog)
        declared = found.group(1).decode("ascii", "replace") if found else None
    else:
        match = _DECLARATION.match(prolog)
        declared = match.group(1) if match else None
    if declared is None:
        return None
    codec = _ENCODINGS.get(declared.lower().replace("-", "").replace("_", ""))
    if codec is None:
        raise _encoding_error(repr(declared), "declares")
    return codec


def _decode(data: bytes) -> str:
    """Bytes to str: a byte order mark wins, then the encoding declaration, then UTF-8."""
    for signature, name in _REFUSED_SIGNATURES:
        if data.startswith(signature):
            raise _encoding_error(name, "is in")
    if data.startswith(codecs.BOM_UTF8):
        encoding, data = "utf-8", data[3:]
    elif data.startswith(_UTF16_BOMS):
        encoding = "utf-16"
    elif data[:2] == b"<\x00":  # UTF-16 without a byte order mark
        encoding = "utf-16-le"
    elif data[:2] == b"\x00<":
        encoding = "utf-16-be"
    else:
        encoding = _declared_codec(data.lstrip(_BYTE_WHITESPACE)) or "utf-8"
        if encoding.startswith("utf-16"):
            encoding = "utf-8"  # the declaration was readable as ASCII, so the bytes are not wide
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise PescError(
            f"The XML is not valid {encoding} (byte {exc.start}: {exc.reason}). "
            "Check how the document was decoded or stored.",
            reason="encoding",
        ) from None


def _unescape_if_escaped(text: str) -> str:
    """Undo one level of XML escaping, never two (DESIGN §3)."""
    if text.startswith("&lt;"):
        text = _unescape(text).lstrip(_TEXT_WHITESPACE)
        if text.startswith("&lt;"):
            raise PescError(
                "The XML was escaped more than once (it still starts with '&lt;' after one "
                "unescaping). Fix the sender; the workbench unescapes once, never twice.",
                reason="malformed",
            )
    return text


def _unescape(text: str) -> str:
    """One level of XML escaping undone, in a single left-to-right pass.

    Without character references (the usual case) that is five plain replacements, ``&amp;``
    last: no replacement can create an entity that a later one would undo again, so the
    result is the single pass's (``&amp;lt;`` becomes ``&lt;``, not ``<``).
    """
    if "&#" in text:
        return _ESCAPE.sub(_unescape_one, text)
    for entity, character in _REPLACEMENTS:
        if entity in text:
            text = text.replace(entity, character)
    return text


def _unescape_one(match: re.Match[str]) -> str:
    name = match.group(1)
    if name[0] != "#":
        return _NAMED[name]
    code = int(name[2:], 16) if name[1] == "x" else int(name[1:])
    try:
        return chr(code)
    except (ValueError, OverflowError):
        return match.group(0)


@dataclass(frozen=True, slots=True)
class _Markup:
    """The prolog's markers, as text or as bytes: the prolog is scanned in either form."""

    declaration: Any
    declaration_end: Any
    comment: Any
    comment_end: Any
    pi: Any
    doctype: Any
    entity: Any
    lt: Any
    after_declaration: tuple[Any, ...]  # "<?xml" then whitespace or "?" is the declaration
    spaces: tuple[Any, ...]


_SPACES = (" ", "\t", "\r", "\n")
_TEXT = _Markup(
    "<?xml", "?>", "<!--", "-->", "<?", "<!DOCTYPE", "<!ENTITY", "<", (*_SPACES, "?"), _SPACES
)
_BYTES = _Markup(
    b"<?xml",
    b"?>",
    b"<!--",
    b"-->",
    b"<?",
    b"<!DOCTYPE",
    b"<!ENTITY",
    b"<",
    tuple(marker.encode() for marker in (*_SPACES, "?")),
    tuple(marker.encode() for marker in _SPACES),
)


def _check_prolog(text: Any, markup: _Markup) -> int:
    """Refuse a DOCTYPE or processing instruction before the root; return the root's index."""
    if not text:
        raise PescError("The XML is empty. Check the PESCXML field of the message.", reason="empty")
    if not text.startswith(markup.lt):
        # Described, never quoted: a file picked by mistake may hold student data.
        size = len(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        raise PescError(
            f"This is not XML: it starts with text, not '<' ({size:,} bytes). Expected a PESC "
            "document ('<...>' or once-escaped '&lt;...').",
            reason="malformed",
        )
    position = 0
    if text.startswith(markup.declaration) and text[5:6] in markup.after_declaration:
        end = text.find(markup.declaration_end)
        if end < 0:
            raise PescError("The XML declaration is never closed ('?>').", reason="malformed")
        _declared_codec(text[: end + 2])
        position = end + 2
    length = len(text)
    while True:
        while position < length and text[position : position + 1] in markup.spaces:
            position += 1
        if text.startswith(markup.comment, position):
            end = text.find(markup.comment_end, position + 4)
            if end < 0:
                raise PescError("A comment is never closed ('-->').", reason="malformed")
            position = end + 3
        elif text.startswith(markup.pi, position):
            raise _pi_error()
        elif text[position : position + 9].upper() == markup.doctype:
            if markup.entity in text:
                raise PescError(
                    "The XML declares entities in a DTD (an XXE or entity-expansion attack, "
                    "or a badly made document). PESC messages never need a DTD; refused.",
                    reason="entity",
                )
            raise _dtd_error()
        else:
            return position


def _encode(text: str, body_start: int) -> bytes:
    """UTF-8 bytes for the parser: the declaration (whose encoding no longer applies) becomes
    as many newlines as it spanned, so line numbers still match ``text``."""
    if body_start and text.startswith("<?xml"):
        end = text.find("?>") + 2
        text = "\n" * text.count("\n", 0, end) + text[end:]
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PescError(
            f"The XML holds a character that cannot be encoded (position {exc.start}).",
            reason="encoding",
        ) from None


def _encoding_error(name: str, verb: str) -> PescError:
    return PescError(
        f"The XML {verb} the encoding {name}, which PESC documents never use (they are in "
        "UTF-8, UTF-16 or ISO-8859-1); refused, since markup could hide in it. Ask the sender "
        "for UTF-8.",
        reason="encoding",
    )


def _dtd_error() -> PescError:
    return PescError(
        "The XML has a document type declaration (DTD). PESC messages never need one, "
        "and an external DTD could be fetched from anywhere; refused.",
        reason="dtd",
    )


def _pi_error() -> PescError:
    return PescError(
        "The XML contains a processing instruction (<?...?>). PESC messages never carry one, "
        "and some (xml-stylesheet) point at external resources; refused.",
        reason="pi",
    )
