"""Safe parsing of PESC XML: one hardened parser configuration for every document.

What arrives in a ``PESCXML`` field may be raw XML or XML that was XML-escaped once
(``&lt;CollegeTranscript ...``), with or without a byte order mark, an encoding declaration or
leading whitespace; ``parse`` accepts all of these. It refuses, with ``PescError`` and a
``reason`` tag, anything that could make it the door an attacker walks through:

==============  ================================================================================
reason          refused input
==============  ================================================================================
``empty``       nothing, or only whitespace / a byte order mark
``too-large``   more bytes than the cap (``max_bytes``, else ``WORKBENCH_PESC_MAX_BYTES``,
                else 10 MiB): checked before anything is decoded or parsed
``encoding``    bytes that are not in the declared (or detected) encoding, or an encoding PESC
                documents never use (UTF-7, UTF-32, EBCDIC...: all but UTF-8, UTF-16,
                ISO-8859-1 and windows-1252)
``entity``      a DTD that declares entities (XXE, parameter entities, billion laughs,
                quadratic blow-up), or a reference to an undeclared entity
``dtd``         any other document type declaration (an external DTD, an internal subset)
``pi``          a processing instruction (``<?xml-stylesheet ...?>`` and the like)
``xinclude``    an XInclude element
``too-deep``    nesting deeper than libxml2's limit (256 levels; huge-tree mode stays off)
``malformed``   anything else that is not well-formed XML (also text that was escaped twice)
``not-pesc``    well-formed XML whose root is not a PESC message
==============  ================================================================================

DTDs are refused by reading the prolog *before* the parser sees the document (``intake``), so
no entity is ever declared, expanded or fetched. The parser reads the very UTF-8 bytes that
were checked (it ignores the encoding declaration) and is configured without DTD loading,
entity resolution, network access or huge-tree mode; a tree that still has a document type
declaration is refused all the same: second lines of defence.
"""

from __future__ import annotations

import os
import threading

from lxml import etree

from workbench.errors import ConfigError, PescError
from workbench.pesc.intake import admit, check_tree
from workbench.pesc.messages import is_pesc_root, message_info

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
MAX_BYTES_VARIABLE = "WORKBENCH_PESC_MAX_BYTES"

_RESOURCE_LIMIT = getattr(etree.ErrorTypes, "ERR_RESOURCE_LIMIT", None)
_UNDECLARED_ENTITY = getattr(etree.ErrorTypes, "ERR_UNDECLARED_ENTITY", None)
_INVALID_ENCODING = getattr(etree.ErrorTypes, "ERR_INVALID_ENCODING", None)


class PescDocument:
    """A parsed PESC message.

    ``message_type`` is the root's local name (``"TranscriptRequest"``, ``"TranscriptResponse"``,
    ``"CollegeTranscript"``, ``"Acknowledgment"`` or another PESC root), ``version`` comes from
    the root namespace (``"1.1.0"``, or None), ``namespace`` is that namespace, ``root`` the
    lxml element and ``text`` the unescaped XML (without leading whitespace or byte order mark).
    """

    __slots__ = ("_source", "_text", "message_type", "namespace", "root", "version")

    def __init__(
        self,
        message_type: str,
        version: str | None,
        namespace: str | None,
        root: etree._Element,
        text: str | None = None,
        *,
        source: bytes | None = None,
    ) -> None:
        if text is None and source is None:
            raise ValueError("a PescDocument needs its text or its UTF-8 source")
        self.message_type = message_type
        self.version = version
        self.namespace = namespace
        self.root = root
        self._text = text
        self._source = source

    @property
    def text(self) -> str:
        """The document as text; decoded from its UTF-8 bytes on first use."""
        if self._text is None:
            self._text = self._source.decode("utf-8", "replace")  # type: ignore[union-attr]
            self._source = None
        return self._text

    def __repr__(self) -> str:
        version = f" v{self.version}" if self.version else ""
        return f"<PescDocument {self.message_type}{version}>"


class _RefuseExternal(etree.Resolver):
    """Second line of defence: any external resource the parser asks for resolves to nothing."""

    def resolve(self, url, pubid, context):  # type: ignore[no-untyped-def]
        return self.resolve_string("", context)


_local = threading.local()


def _parser() -> etree.XMLParser:
    # lxml parsers must not be shared between threads: one per thread, configured once.
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.XMLParser(
            encoding="utf-8",  # what ``admit`` hands over, whatever the declaration says
            resolve_entities=False,
            load_dtd=False,
            dtd_validation=False,
            no_network=True,
            huge_tree=False,
            collect_ids=False,
        )
        parser.resolvers.add(_RefuseExternal())
        _local.parser = parser
    return parser


def parse(data: str | bytes, *, max_bytes: int | None = None) -> PescDocument:
    """Parse a PESC message safely; raise ``PescError`` (with a ``reason``) when refused.

    >>> doc = parse(xml_text)  # raw XML, or XML escaped once ('&lt;ns0:CollegeTranscript ...')
    >>> doc.message_type, doc.version
    ('CollegeTranscript', '1.3.0')
    """
    limit = _max_bytes(max_bytes)
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, (bytes, str)):
        raise TypeError(f"parse() takes str or bytes, not {type(data).__name__}")
    _check_size(len(data), limit, "bytes" if isinstance(data, bytes) else "characters")
    admitted = admit(data)
    _check_size(len(admitted.payload), limit, "bytes")
    try:
        root = etree.fromstring(admitted.payload, _parser())
    except etree.XMLSyntaxError as exc:
        raise _syntax_error(exc) from None
    check_tree(root, admitted)
    if not is_pesc_root(root.tag):
        raise PescError(
            f"The XML is not a PESC message: its root element is {root.tag!r}. Expected a "
            "TranscriptRequest, TranscriptResponse, CollegeTranscript or Acknowledgment.",
            reason="not-pesc",
        )
    message_type, version, namespace = message_info(root.tag)
    if admitted.text is None:
        return PescDocument(message_type, version, namespace, root, source=admitted.payload)
    return PescDocument(message_type, version, namespace, root, admitted.text)


def as_document(doc_or_xml: PescDocument | str | bytes) -> PescDocument:
    """A ``PescDocument`` as is; XML text or bytes parsed with ``parse``."""
    if isinstance(doc_or_xml, PescDocument):
        return doc_or_xml
    return parse(doc_or_xml)


def max_bytes() -> int:
    """The cap on a document's size in bytes: ``WORKBENCH_PESC_MAX_BYTES``, else 10 MiB."""
    return _max_bytes(None)


def _max_bytes(max_bytes: int | None) -> int:
    if max_bytes is not None:
        return max_bytes
    setting = os.environ.get(MAX_BYTES_VARIABLE)
    if not setting:
        return DEFAULT_MAX_BYTES
    try:
        value = int(setting)
    except ValueError:
        value = 0
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


def _syntax_error(exc: etree.XMLSyntaxError) -> PescError:
    message = str(exc)
    if (exc.code == _RESOURCE_LIMIT and "depth" in message.lower()) or "Excessive depth" in message:
        return PescError(
            f"The XML is nested too deeply ({message}). No PESC message comes close; refused.",
            reason="too-deep",
        )
    if exc.code == _RESOURCE_LIMIT:
        return PescError(
            f"The XML exceeds a parser limit ({message}); refused.", reason="too-large"
        )
    if exc.code == _UNDECLARED_ENTITY or "Entity '" in message:
        return PescError(
            f"The XML refers to an entity that is not defined ({message}). PESC messages use "
            "only the five predefined entities; refused.",
            reason="entity",
        )
    if exc.code == _INVALID_ENCODING:
        return PescError(
            f"The XML is not valid UTF-8 ({message}). Check how the document was decoded or "
            "stored, or ask the sender to declare its encoding.",
            reason="encoding",
        )
    return PescError(
        f"The XML is not well-formed: {message}. Check that the PESCXML field holds one "
        "complete document.",
        reason="malformed",
    )
