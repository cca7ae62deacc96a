"""The ``PESCXML`` field of exchange payloads: found whatever its casing, parsed once.

Partners send the key as ``PESCXML`` or ``PESCXml`` (DESIGN §3), and the XML raw or XML-escaped
once (``&lt;TranscriptRequest ...``). Unescaping is :func:`workbench.pesc.parse`'s alone, so it
happens exactly once and a document escaped twice is refused rather than silently repaired. A
document that fails to parse still yields its row: the value as sent stays, and
``parse_error`` says what is wrong.

>>> xml, document, error = parse_pescxml("&lt;CollegeTranscript/&gt;")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from workbench import pesc
from workbench.errors import PescError
from workbench.pesc import PescDocument

PESCXML = "pescxml"
PARSE_ERROR = "parse_error"


def split_pescxml(record: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The record's ``PESCXML`` value as sent (key matched case-insensitively), and the rest."""
    xml: str | None = None
    rest: dict[str, Any] = {}
    for key, value in record.items():
        if str(key).lower() == PESCXML and xml is None:
            xml = value if isinstance(value, str) else None
        else:
            rest[key] = value
    return xml, rest


class Parsed(NamedTuple):
    """A ``PESCXML`` value parsed once (:func:`parse_pescxml`)."""

    xml: str | None  # unescaped once; the value as sent when it could not be parsed
    document: PescDocument | None  # None when it could not be parsed: ``error`` says why
    error: str | None


def parse_pescxml(value: str | None) -> Parsed:
    """The document of a ``PESCXML`` value, parsed once; never raises for a bad document."""
    if not value:
        return Parsed(value, None, "no PESCXML in the answer")
    try:
        document = pesc.parse(value)
    except PescError as exc:
        return Parsed(value, None, f"{exc.reason}: {exc}")
    return Parsed(document.text, document, None)


def text_of(document: Any) -> str:
    """The XML text of what a caller wants to send: a string, bytes, or a parsed document."""
    if isinstance(document, bytes):
        return document.decode("utf-8")
    if isinstance(document, str):
        return document
    text = getattr(document, "text", None)
    if isinstance(text, str):
        return text
    raise TypeError(f"pescxml must be XML text or a parsed PESC document, not {type(document)}")
