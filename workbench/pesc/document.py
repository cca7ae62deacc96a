"""Safe parsing of PESC XML: the prolog checked before the parser sees it, a parser that loads no
DTD, resolves no entity and has no network.

``PescError.reason``: empty, too-large, encoding, entity, dtd, pi, xinclude, too-deep, malformed
(also text escaped twice), not-pesc.
"""

from __future__ import annotations

import codecs
import os
import re
import threading
from dataclasses import dataclass

from lxml import etree

from workbench.errors import ConfigError, PescError

REQUEST = "TranscriptRequest"
RESPONSE = "TranscriptResponse"
TRANSCRIPT = "CollegeTranscript"
ACKNOWLEDGMENT = "Acknowledgment"
MESSAGE_TYPES = (REQUEST, RESPONSE, TRANSCRIPT, ACKNOWLEDGMENT)
# Other PESC roots of public samples: a namespace-less root counts as PESC if it has a PESC name.
OTHER_PESC_ROOTS = frozenset(
    {"HighSchoolTranscript", "AcademicRecordBatch", "TranscriptAcknowledgment", "Receipt"}
)
PESC_NAMESPACE_PREFIX = "urn:org:pesc:"
_VERSION = re.compile(r":v(\d+(?:\.\d+)*)$")
# The root element ``Acknowledgment`` lives in the ``TranscriptAcknowledgment`` namespace.
_SCHEMA_NAME = {ACKNOWLEDGMENT: "TranscriptAcknowledgment"}
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
MAX_BYTES_VARIABLE = "WORKBENCH_PESC_MAX_BYTES"
XINCLUDE_NAMESPACES = ("http://www.w3.org/2001/XInclude", "http://www.w3.org/2003/XInclude")

_WHITESPACE = " \t\r\n\ufeff"
# The whole declaration, however long: it ends at the first '>'.
_DECLARATION = re.compile(r"""^<\?xml\s[^>]*?\bencoding\s*=\s*["']([^"'>]*)["']""")
# Encodings PESC documents use, as ``codecs`` names them (any alias of one is taken).
_CODECS = {"utf-8", "ascii", "utf-16", "utf-16-le", "utf-16-be", "iso8859-1", "cp1252"}
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
# What may come between the declaration and the root, besides what is refused: space, comments.
_MISC = re.compile(r"(?:[ \t\r\n]+|<!--.*?-->)*", re.DOTALL)
_ESCAPE = re.compile(r"&(lt|gt|amp|quot|apos|#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6});")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_DTD = (
    "The XML has a document type declaration (DTD). PESC messages never need one, and an "
    "external DTD could be fetched from anywhere; refused."
)
_PI = (
    "The XML contains a processing instruction (<?...?>). PESC messages never carry one, and "
    "some (xml-stylesheet) point at external resources; refused."
)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class PescDocument:
    """A parsed PESC message: root local name, namespace version (or None), namespace, root."""

    message_type: str
    version: str | None
    namespace: str | None
    root: etree._Element
    text: str

    def __repr__(self) -> str:
        version = f" v{self.version}" if self.version else ""
        return f"<PescDocument {self.message_type}{version}>"


_local = threading.local()


def _parser() -> etree.XMLParser:
    # lxml parsers must not be shared between threads: one per thread, configured once.
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.XMLParser(
            encoding="utf-8",  # what parse() hands over, whatever the declaration said
            resolve_entities=False,
            load_dtd=False,
            dtd_validation=False,
            no_network=True,
            huge_tree=False,
            collect_ids=False,
        )
        _local.parser = parser
    return parser


def parse(data: str | bytes, *, max_bytes: int | None = None) -> PescDocument:
    """Parse a PESC message safely; raise ``PescError`` (with a ``reason``) when refused.

    >>> parse(xml_text).message_type  # raw XML, or XML escaped once ('&lt;ColTrn:...')
    'CollegeTranscript'
    """
    limit = max_bytes if max_bytes is not None else size_limit()
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, (bytes, str)):
        raise TypeError(f"parse() takes str or bytes, not {type(data).__name__}")
    _check_size(len(data), limit, "bytes" if isinstance(data, bytes) else "characters")
    text = unescape_once(_decode(data) if isinstance(data, bytes) else data)
    body = _check_prolog(text)
    payload = _encode(text, body)
    _check_size(len(payload), limit, "bytes")
    try:
        root = etree.fromstring(payload, _parser())
    except etree.XMLSyntaxError as exc:
        raise _syntax_error(exc) from None
    # Only a '?' after the prolog can start a processing instruction: without one, no walk.
    if "?" in text[body:] and (
        next(root.iter(etree.ProcessingInstruction), None) is not None
        or next(root.itersiblings(etree.ProcessingInstruction), None) is not None
    ):
        raise PescError(_PI, reason="pi")
    if "XInclude" in text and any(
        next(root.iter(f"{{{namespace}}}*"), None) is not None for namespace in XINCLUDE_NAMESPACES
    ):
        raise PescError(
            "The XML contains an XInclude element, which would pull in other files or URLs. "
            "PESC messages never use XInclude; refused.",
            reason="xinclude",
        )
    if not is_pesc_root(root.tag):
        raise PescError(
            f"The XML is not a PESC message: its root element is {root.tag!r}. Expected a "
            "TranscriptRequest, TranscriptResponse, CollegeTranscript or Acknowledgment.",
            reason="not-pesc",
        )
    return PescDocument(*message_info(root.tag), root, text)


def message_info(tag: str) -> tuple[str, str | None, str | None]:
    """(message type, version, namespace) of a root tag: the namespace's version, or None (the
    spec gives a TranscriptResponse the request's v1.0.0 namespace)."""
    name = etree.QName(tag)
    match = _VERSION.search(name.namespace or "")
    return name.localname, match[1] if match else None, name.namespace


def is_pesc_root(tag: str) -> bool:
    """A root in a PESC namespace, or a namespace-less root with a PESC message name."""
    name = etree.QName(tag)
    if name.namespace:
        return name.namespace.startswith(PESC_NAMESPACE_PREFIX)
    return name.localname in MESSAGE_TYPES or name.localname in OTHER_PESC_ROOTS


def version_tuple(version: str) -> tuple[int, ...]:
    """``"1.10.0"`` -> ``(1, 10, 0)``, so versions compare as numbers."""
    return tuple(int(part) for part in version.split("."))


def schema_name(message_type: str) -> str:
    """The message name used in namespaces and schema files (``TranscriptAcknowledgment``)."""
    return _SCHEMA_NAME.get(message_type, message_type)


def as_document(doc_or_xml: PescDocument | str | bytes) -> PescDocument:
    """A ``PescDocument`` as is; XML text or bytes parsed with ``parse``."""
    return doc_or_xml if isinstance(doc_or_xml, PescDocument) else parse(doc_or_xml)


def size_limit() -> int:
    """The cap on a document's size in bytes: ``WORKBENCH_PESC_MAX_BYTES``, else 10 MiB."""
    setting = os.environ.get(MAX_BYTES_VARIABLE)
    if not setting:
        return DEFAULT_MAX_BYTES
    value = int(setting) if setting.strip().isdigit() else 0
    if value <= 0:
        raise ConfigError(
            f"{MAX_BYTES_VARIABLE}={setting!r} is not a positive whole number of bytes; "
            f"set it to e.g. {DEFAULT_MAX_BYTES} or unset it."
        )
    return value


def _check_size(size: int, limit: int, unit: str) -> None:
    if size > limit:
        raise PescError(
            f"The XML is {size:,} {unit}, over the {limit:,}-byte limit. Raise max_bytes "
            f"(or {MAX_BYTES_VARIABLE}) if such documents are expected.",
            reason="too-large",
        )


def _decode(data: bytes) -> str:
    """Bytes to str: a byte order mark wins, then the encoding declaration, then UTF-8."""
    for signature, name in _REFUSED_SIGNATURES:
        if data.startswith(signature):
            raise _encoding_error(name, "is in")
    if data.startswith(codecs.BOM_UTF8):
        encoding, data = "utf-8", data[3:]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    elif data[:2] in (b"<\x00", b"\x00<"):  # UTF-16 without a byte order mark
        encoding = "utf-16-le" if data[0] else "utf-16-be"
    else:
        prolog = data[:1024].lstrip(b" \t\r\n").decode("latin-1")
        encoding = _declared_codec(prolog) or "utf-8"
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


def _declared_codec(prolog: str) -> str | None:
    """The codec the XML declaration names (None without one); PescError if PESC never uses it."""
    match = _DECLARATION.match(prolog)
    if match is None:
        return None
    try:
        codec = codecs.lookup(match[1]).name
    except (LookupError, ValueError):
        codec = ""
    if codec not in _CODECS:
        raise _encoding_error(repr(match[1]), "declares")
    return "utf-8" if codec == "ascii" else codec


def unescape_once(text: str) -> str:
    """``text`` unescaped once if it came XML-escaped (DESIGN §3); PescError if escaped twice.
    Only XML's five entities and character references: an HTML entity stays as written."""
    text = text.lstrip(_WHITESPACE)
    if text.startswith("&amp;lt;"):
        raise PescError(
            "The XML was escaped more than once (it starts with '&amp;lt;'). Fix the sender; "
            "the workbench unescapes once, never twice.",
            reason="malformed",
        )
    if not text.startswith("&lt;"):
        return text
    return _ESCAPE.sub(_unescape_one, text).lstrip(_WHITESPACE)


def _unescape_one(match: re.Match[str]) -> str:
    name = match[1]
    if name[0] != "#":
        return _NAMED[name]
    try:
        return chr(int(name[2:], 16) if name[1] == "x" else int(name[1:]))
    except (ValueError, OverflowError):
        return match[0]


def _check_prolog(text: str) -> int:
    """Refuse a DOCTYPE or processing instruction before the root; return the root's index."""
    if not text:
        raise PescError("The XML is empty. Check the PESCXML field of the message.", reason="empty")
    if not text.startswith("<"):
        # Described, never quoted: a file picked by mistake may hold student data.
        size = len(text.encode("utf-8", "surrogatepass"))
        raise PescError(
            f"This is not XML: it starts with text, not '<' ({size:,} bytes). Expected a PESC "
            "document ('<...>' or once-escaped '&lt;...').",
            reason="malformed",
        )
    position = 0
    if text.startswith("<?xml") and text[5:6] in (" ", "\t", "\r", "\n", "?"):
        end = text.find("?>")
        if end < 0:
            raise PescError("The XML declaration is never closed ('?>').", reason="malformed")
        _declared_codec(text[: end + 2])
        position = end + 2
    position = _MISC.match(text, position).end()  # type: ignore[union-attr]
    if text.startswith("<!--", position):
        raise PescError("A comment is never closed ('-->').", reason="malformed")
    if text.startswith("<?", position):
        raise PescError(_PI, reason="pi")
    if text[position : position + 9].upper() == "<!DOCTYPE":
        if "<!ENTITY" in text:
            raise PescError(
                "The XML declares entities in a DTD (an XXE or entity-expansion attack, "
                "or a badly made document). PESC messages never need a DTD; refused.",
                reason="entity",
            )
        raise PescError(_DTD, reason="dtd")
    return position


def _encode(text: str, body: int) -> bytes:
    """UTF-8 for the parser, the declaration blanked to its newlines (line numbers still match)."""
    if body and text.startswith("<?xml"):
        end = text.find("?>") + 2
        text = "\n" * text.count("\n", 0, end) + text[end:]
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PescError(
            f"The XML holds a character that cannot be encoded (position {exc.start}).",
            reason="encoding",
        ) from None


def _syntax_error(exc: etree.XMLSyntaxError) -> PescError:
    message, codes = str(exc), etree.ErrorTypes
    limit = exc.code == codes.ERR_RESOURCE_LIMIT
    if (limit and "depth" in message.lower()) or "Excessive depth" in message:
        said, reason = f"is nested too deeply ({message}). No PESC message comes close", "too-deep"
    elif limit:
        said, reason = f"exceeds a parser limit ({message})", "too-large"
    elif exc.code == codes.ERR_UNDECLARED_ENTITY or "Entity '" in message:
        reason = "entity"
        said = f"refers to an entity that is not defined ({message}). PESC messages use only the "
        said += "five predefined entities"
    elif exc.code == codes.ERR_INVALID_ENCODING:
        return PescError(
            f"The XML is not valid UTF-8 ({message}). Check how the document was decoded or "
            "stored, or ask the sender to declare its encoding.",
            reason="encoding",
        )
    else:
        return PescError(
            f"The XML is not well-formed: {message}. Check that the PESCXML field holds one "
            "complete document.",
            reason="malformed",
        )
    return PescError(f"The XML {said}; refused.", reason=reason)


def _encoding_error(name: str, verb: str) -> PescError:
    return PescError(
        f"The XML {verb} the encoding {name}, which PESC documents never use (they are in "
        "UTF-8, UTF-16 or ISO-8859-1); refused, since markup could hide in it. Ask the sender "
        "for UTF-8.",
        reason="encoding",
    )
