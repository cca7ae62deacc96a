"""How the sandbox reads what clients POST: JSON envelope, then the PESCXML document, safely."""

from __future__ import annotations

import html
import json
from typing import Any

from lxml import etree

_PARSER = etree.XMLParser(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    dtd_validation=False,
    huge_tree=False,
    remove_pis=True,
)


class Refusal(Exception):
    """A request the sandbox refuses: ``status`` and the message become its 4xx answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def pescxml_from_body(body: bytes) -> str:
    """The ``PESCXML`` string of a JSON body (spec §2.5), or Refusal."""
    try:
        data: Any = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refusal("The request body is not valid JSON.") from exc
    if not isinstance(data, dict):
        raise Refusal("The request body must be a JSON object with a PESCXML field.")
    value = next((v for k, v in data.items() if k.lower() == "pescxml"), None)
    if value is None:
        raise Refusal("The PESCXML field is required.")
    if not isinstance(value, str) or not value.strip():
        raise Refusal("The PESCXML value is invalid: it must be a non-empty string.")
    return value


def parse_document(text: str) -> etree._Element:
    """The root of a PESCXML string (raw, or XML-escaped once); Refusal if it is not XML."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("&lt;"):
        stripped = html.unescape(stripped)
    if "<!DOCTYPE" in stripped[:2048].upper() or "<!ENTITY" in stripped.upper():
        raise Refusal("The PESCXML value is invalid: DTDs and entities are not accepted.")
    try:
        root = etree.fromstring(stripped.encode("utf-8"), _PARSER)
    except (etree.XMLSyntaxError, ValueError) as exc:
        raise Refusal(f"The PESCXML value is invalid: not well-formed XML ({exc}).") from exc
    if root is None:
        raise Refusal("The PESCXML value is invalid: no document element.")
    return root


def local_name(element: etree._Element) -> str:
    return etree.QName(element).localname


def tracking_id(root: etree._Element) -> str | None:
    """TransmissionData/RequestTrackingID, whatever the namespaces."""
    found = root.xpath(
        "string(*[local-name()='TransmissionData']/*[local-name()='RequestTrackingID'])"
    )
    return str(found).strip() or None


def process_code(root: etree._Element) -> str | None:
    """TransmissionData/DocumentProcessCode, whatever the namespaces; None when absent."""
    found = root.xpath(
        "string(*[local-name()='TransmissionData']/*[local-name()='DocumentProcessCode'])"
    )
    return str(found).strip() or None
