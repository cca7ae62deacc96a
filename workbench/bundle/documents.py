"""Every PESC document about an id: found, de-duplicated, pretty-printed and validated."""

from __future__ import annotations

import copy
import html
import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from lxml import etree

from workbench import pesc
from workbench.bundle.har import iso, records
from workbench.errors import PescError
from workbench.store import Store

_PESCXML_FIELD = re.compile(r'"pescxml"\s*:\s*("(?:[^"\\]|\\.)*")', re.IGNORECASE)


@dataclass
class Document:
    """One distinct document, pretty-printed, and where it was seen."""

    text: str
    kind: str  # sent / received
    message_type: str  # the root element, or "unparsed"
    parsed: pesc.PescDocument | None
    sources: list[dict[str, Any]] = field(default_factory=list)

    def file_name(self, number: int) -> str:
        kind = re.sub(r"[^A-Za-z0-9_.]+", "_", self.message_type)
        return f"{number:02d}-{self.kind}-{kind}.xml"


def find_documents(
    store: Store, rid: str, calls: list[dict[str, Any]], stored: str | None
) -> list[Document]:
    """The documents in ``calls``, the outbox, responses, acknowledgments and the ``stored``
    detail, oldest first (a call's request before its answer), each once."""
    seen: list[tuple[str, str, str, dict[str, Any]]] = []  # (xml, at, kind, where)

    def add(value: Any, at: str, kind: str, place: str, **ids: Any) -> None:
        seen.extend(
            (xml, at, kind, {"at": at, **ids, "in": place}) for xml in _pescxml_values(value)
        )

    for call in calls:
        at, op, cid = iso(call["started_at"]), call["operation"], call["id"]
        add(call["request_body"], at, "sent", f"{op} request", call_id=cid)
        add(call["response_body"], at, "received", f"{op} response", call_id=cid)
    for row in _rows(store, "outbox", rid):
        at, op, oid = iso(row["created_at"]), row["operation"], row["id"]
        add(row["payload"], at, "sent", f"outbox {op} payload", outbox_id=oid)
        add(row["response_body"], at, "received", f"outbox {op} answer", outbox_id=oid)
    for row in _rows(store, "responses", rid):
        add(row, iso(row["sent_at"]), "sent", "responses")
    for row in _rows(store, "acknowledgments", rid):
        add(row, iso(row["recorded_at"]), str(row["direction"]), "acknowledgments")
    if stored:
        seen.append((stored, "~", "received", {"at": None, "in": "stored detail"}))

    unique: dict[str, Document] = {}
    for xml, _at, kind, where in sorted(seen, key=lambda s: s[1]):  # stable
        text, parsed = pretty(xml)
        kind_of = parsed.message_type if parsed else "unparsed"
        unique.setdefault(text, Document(text, kind, kind_of, parsed)).sources.append(where)
    return list(unique.values())


def _rows(store: Store, table: str, rid: str) -> list[dict[str, Any]]:
    return records(store.table(table, where="request_id = ?", params=[rid]))


def _pescxml_values(value: Any) -> list[str]:
    """A row's, a body's or a payload's ``PESCXML`` fields (any case, any depth), or its XML."""
    if isinstance(value, Mapping):
        return [v for k, v in value.items() if k.lower() == "pescxml" and isinstance(v, str) and v]
    text = str(value or "").strip()
    if text.startswith(("<", "&lt;")):
        return [text]
    return [xml for xml in (json.loads(m[1]) for m in _PESCXML_FIELD.finditer(text)) if xml]


def pretty(xml: str) -> tuple[str, pesc.PescDocument | None]:
    """The document unescaped and indented; as stored (unescaped once) when it does not parse."""
    try:
        document = pesc.parse(xml)
    except PescError:
        text = xml.strip()
        return (html.unescape(text) if text.startswith("&lt;") else text) + "\n", None
    root = copy.deepcopy(document.root)  # indent() changes the tree it is given
    etree.indent(root, space="  ")
    declaration = '<?xml version="1.0" encoding="UTF-8"?>\n'
    return declaration + etree.tostring(root, encoding="unicode") + "\n", document


def validations(
    found: list[Document], schemas_dir: str | os.PathLike[str] | None
) -> dict[str, Any]:
    """Each document's validation, run on its bundled text so that lines point into the file
    (personal masking, done afterwards, changes no line)."""
    return {
        "documents": [
            {
                "file": f"documents/{document.file_name(number)}",
                "kind": document.kind,
                "message_type": document.message_type,
                "version": getattr(document.parsed, "version", None),
                "namespace": getattr(document.parsed, "namespace", None),
                **asdict(pesc.validate(document.text, schemas_dir=schemas_dir)),
                "seen_in": document.sources,
            }
            for number, document in enumerate(found, start=1)
        ]
    }
