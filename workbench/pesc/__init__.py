"""PESC XML: safe parsing, flattening to records and DataFrames, builders and XSD validation.

::

    from workbench import pesc

    doc = pesc.parse(xml)              # PescDocument; PescError (with .reason) when refused
    pesc.flatten(doc)                  # one dict of headline fields
    pesc.records(doc)                  # {"courses": [...], "recipients": [...], ...}
    pesc.to_frames(doc)                # {"document": DataFrame, "courses": DataFrame, ...}
    pesc.build_response(request_xml, status="Hold", hold_reason="Financial")
    pesc.build_acknowledgment(transcript_xml)
    pesc.validate(doc)                 # Validation(status, errors, schema, note)

Every function that takes a document also takes XML text or bytes (raw or escaped once).
This package knows nothing of HTTP; the sandbox and the client both use it.
"""

from __future__ import annotations

from workbench.pesc.builders import build_acknowledgment, build_response
from workbench.pesc.document import PescDocument, parse
from workbench.pesc.fields import flatten
from workbench.pesc.schemas import Validation, ValidationIssue, validate
from workbench.pesc.tables import records, to_frames

__all__ = [
    "PescDocument",
    "Validation",
    "ValidationIssue",
    "build_acknowledgment",
    "build_response",
    "flatten",
    "parse",
    "records",
    "to_frames",
    "validate",
]
