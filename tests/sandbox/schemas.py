"""The XSD judges of generated documents, shared by the generator and HTTP contract tests.

There is no public v1.0.0 schema, and no public v1.1.0 TranscriptRequest schema: documents are
moved into the namespace of the nearest schema family before validating (``VALIDATE_AS``), and a
v1.1.0 TranscriptRequest schema is reconstructed from v1.2.0's root bound to CoreMain 1.10.0 and
AcademicRecord 1.6.0, which is what v1.1.0 is.
"""

from __future__ import annotations

import copy
from pathlib import Path

from lxml import etree

XSD_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "pesc" / "xsd"

# The namespace each message is validated in, and the schema that defines it.
VALIDATE_AS = {
    "TranscriptRequest": "urn:org:pesc:message:TranscriptRequest:v1.2.0",
    "CollegeTranscript": "urn:org:pesc:message:CollegeTranscript:v1.3.0",
    "Acknowledgment": "urn:org:pesc:message:TranscriptAcknowledgment:v1.1.0",
}
SCHEMA_FILES = {
    "TranscriptRequest": "v1.2.0/TranscriptRequest_v1.2.0.xsd",
    "CollegeTranscript": "v1.1.0-ocas/CollegeTranscript_v1.3.0.xsd",
    "Acknowledgment": "v1.1.0-ocas/TranscriptAcknowledgement_v1.1.0.xsd",
}


def local(element: etree._Element) -> str:
    return etree.QName(element).localname


def retarget(root: etree._Element, namespace: str) -> etree._Element:
    """A copy with the message namespace (the root's) replaced by ``namespace``."""
    moved = copy.deepcopy(root)
    old = etree.QName(moved).namespace
    for element in moved.iter():
        if isinstance(element.tag, str) and etree.QName(element).namespace == old:
            element.tag = f"{{{namespace}}}{local(element)}"
    return moved


def compile_schemas(xsd_dir: Path = XSD_DIR) -> dict[str, etree.XMLSchema]:
    """The schemas each generated message is judged by (compiling is slow: once a session)."""
    compiled = {m: etree.XMLSchema(etree.parse(str(xsd_dir / f))) for m, f in SCHEMA_FILES.items()}
    # TranscriptRequest v1.1.0 = v1.2.0's root bound to CoreMain 1.10.0 / AcademicRecord 1.6.0.
    text = (xsd_dir / SCHEMA_FILES["TranscriptRequest"]).read_bytes()
    for old, new in [
        (b"TranscriptRequest:v1.2.0", b"TranscriptRequest:v1.1.0"),
        (b"CoreMain:v1.12.0", b"CoreMain:v1.10.0"),
        (b"CoreMain_v1.12.0.xsd", b"CoreMain_v1.10.0.xsd"),
        (b"AcademicRecord:v1.7.0", b"AcademicRecord:v1.6.0"),
        (b"AcademicRecord_v1.7.0.xsd", b"AcademicRecord_v1.6.0.xsd"),
    ]:
        assert old in text
        text = text.replace(old, new)
    base = xsd_dir / "v1.1.0-ocas" / "TranscriptRequest_v1.1.0-reconstructed.xsd"
    compiled["TranscriptRequest v1.1.0"] = etree.XMLSchema(
        etree.fromstring(text, base_url=str(base))
    )
    return compiled


def schema_errors(schemas: dict[str, etree.XMLSchema], root: etree._Element) -> list[str]:
    """Validation errors of a document against its message's schema (empty when valid)."""
    message = local(root)
    schema = schemas[message]
    if schema.validate(retarget(root, VALIDATE_AS[message])):
        return []
    return [f"L{e.line}: {e.message}" for e in schema.error_log]
