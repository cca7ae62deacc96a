"""Every PESC document about an id: found, de-duplicated, pretty-printed and validated."""

from __future__ import annotations

import copy
import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from workbench import pesc
from workbench.bundle.plain import iso, records
from workbench.errors import PescError
from workbench.store import Store

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'


@dataclass
class _Document:
    """One distinct document, where it was seen, and its pretty text and validation."""

    text: str
    kind: str
    message_type: str
    parsed: pesc.PescDocument | None
    sources: list[dict[str, Any]] = field(default_factory=list)

    def file_name(self, number: int) -> str:
        kind = re.sub(r"[^A-Za-z0-9_.]+", "_", self.message_type)
        return f"{number:02d}-{self.kind}-{kind}.xml"


def find_documents(
    store: Store, rid: str, calls: list[dict[str, Any]], stored: str | None
) -> list[_Document]:
    seen: list[tuple[str, str, str, dict[str, Any]]] = []  # (xml, at, kind, source)
    for call in calls:
        at, cid, op = iso(call["started_at"]), call["id"], call["operation"]
        for xml in _pescxml_values(call["request_body"]):
            seen.append((xml, at, "sent", {"at": at, "call_id": cid, "in": f"{op} request"}))
        for xml in _pescxml_values(call["response_body"]):
            seen.append((xml, at, "received", {"at": at, "call_id": cid, "in": f"{op} response"}))
    for row in _rows(store, "outbox", rid):
        at = iso(row["created_at"])
        where = {"at": at, "outbox_id": row["id"], "in": f"outbox {row['operation']} payload"}
        seen += [(xml, at, "sent", where) for xml in _pescxml_values(row["payload"])]
        where = {**where, "in": f"outbox {row['operation']} answer"}
        seen += [(xml, at, "received", where) for xml in _pescxml_values(row["response_body"])]
    for row in _rows(store, "responses", rid):
        at = iso(row["sent_at"])
        seen += [(x, at, "sent", {"at": at, "in": "responses"}) for x in _pescxml_values(row)]
    for row in _rows(store, "acknowledgments", rid):
        at, kind = iso(row["recorded_at"]), str(row["direction"])
        seen += [(x, at, kind, {"at": at, "in": "acknowledgments"}) for x in _pescxml_values(row)]
    if stored:
        seen.append((stored, "~", "received", {"at": None, "in": "stored detail"}))

    unique: dict[str, _Document] = {}
    # Oldest first; sorted() is stable, so a call's request body comes before its answer.
    for xml, _at, kind, source in sorted(seen, key=lambda s: s[1]):
        text, parsed = pretty(xml)
        document = unique.setdefault(
            text, _Document(text, kind, parsed.message_type if parsed else "unparsed", parsed)
        )
        document.sources.append(source)
    return list(unique.values())


def _rows(store: Store, table: str, rid: str) -> list[dict[str, Any]]:
    return records(store.table(table, where="request_id = ?", params=[rid]))


def _pescxml_values(value: Any) -> list[str]:
    """The PESC XML in a body, an outbox payload or a row: ``PESCXML`` fields (any key case),
    or the text itself when it is XML."""
    if isinstance(value, Mapping):
        return [
            v for k, v in value.items() if str(k).lower() == "pescxml" and v and isinstance(v, str)
        ]
    text = str(value or "").strip()
    if text.startswith(("<", "&lt;")):
        return [text]
    if not text.startswith(("{", "[")):
        return []
    try:
        payload = json.loads(text)
    except ValueError:
        return []
    found: list[str] = []
    stack = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if str(key).lower() == "pescxml" and isinstance(inner, str) and inner:
                    found.append(inner)
                elif isinstance(inner, dict | list):
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def pretty(xml: str) -> tuple[str, pesc.PescDocument | None]:
    """The document unescaped and indented, with an XML declaration; as stored (unescaped once)
    when it does not parse."""
    try:
        document = pesc.parse(xml)
    except PescError:
        text = xml.strip()
        return (html.unescape(text) if text.startswith("&lt;") else text) + "\n", None
    root = copy.deepcopy(document.root)  # indent() changes the tree it is given
    etree.indent(root, space="  ")
    return XML_DECLARATION + etree.tostring(root, encoding="unicode") + "\n", document


def validations(
    found: list[_Document], files: list[tuple[str, str]], schemas_dir: Any
) -> dict[str, Any]:
    """Each document's validation, run on its bundled text so that lines point into the file
    (personal masking, done afterwards, changes no line)."""
    documents = []
    for document, (name, _text) in zip(found, files, strict=True):
        result = pesc.validate(document.text, schemas_dir=schemas_dir)
        parsed = document.parsed
        documents.append(
            {
                "file": name,
                "kind": document.kind,
                "message_type": document.message_type,
                "version": parsed.version if parsed else None,
                "namespace": parsed.namespace if parsed else None,
                "status": result.status,
                "schema": result.schema,
                "note": result.note,
                "errors": [{"line": e.line, "message": e.message} for e in result.errors],
                "seen_in": document.sources,
            }
        )
    return {"documents": documents}
