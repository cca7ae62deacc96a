"""Validation of PESC messages against the official XSDs: a report, never a refusal (NOTES §9).

Schemas come from a folder (``WORKBENCH_PESC_SCHEMAS``) and compile from local files only; a
document without a schema of its version is validated against the nearest, as the note says.
"""

from __future__ import annotations

import copy
import os
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import zip_longest
from pathlib import Path
from urllib.parse import unquote, urlparse

from lxml import etree

from workbench.config import SCHEMAS_VARIABLE
from workbench.errors import PescError
from workbench.pesc.document import (
    ACKNOWLEDGMENT,
    PescDocument,
    as_document,
    schema_name,
    version_tuple,
)

VALID, INVALID, NOT_VALIDATED = "valid", "invalid", "not validated"
_VALIDATED_AGAINST = "validated against "  # how a note of a validation that ran begins
MAX_ERRORS = 100
_MESSAGE_NAMESPACE = re.compile(r"^urn:org:pesc:message:([A-Za-z]+):v(\d+(?:\.\d+)*)$")

_lock = threading.Lock()  # lxml schema objects keep their error log on the instance


@dataclass(frozen=True, slots=True)
class ValidationIssue:
    """One schema error: the line in the document (None if unknown) and libxml2's message."""

    line: int | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


@dataclass(frozen=True, slots=True)
class Validation:
    """The outcome of ``validate``: status "valid", "invalid" or "not validated"."""

    status: str
    errors: list[ValidationIssue] = field(default_factory=list)
    schema: str | None = None
    note: str | None = None
    error_count: int | None = None  # every error found (``errors``: the first ``MAX_ERRORS``)

    @property
    def valid(self) -> bool:
        return self.status == VALID

    def __str__(self) -> str:
        """One line: ``invalid against CollegeTranscript v1.3.0 (..xsd), 3 error(s)``."""
        note = self.note or ""
        if note.startswith(_VALIDATED_AGAINST):
            shown, note = f"{self.status} {note.removeprefix('validated ')}", ""
        else:
            shown = self.status + (f" against {self.schema}" if self.schema else "")
        listed = len(self.errors)
        if listed and (self.error_count or listed) <= listed:  # else the note gives both counts
            shown += f", {listed} error(s)"
        return shown + (f": {note}" if note else "")

    def as_record(self, *, max_errors: int = 20) -> dict[str, object]:
        """As the store keeps it (JSON), the first errors as text."""
        return {
            "status": self.status,
            "schema": self.schema,
            "note": self.note,
            "errors": [str(e) for e in self.errors[:max_errors]],
        }


@dataclass(frozen=True, slots=True)
class _Schema:
    path: Path
    message_type: str
    version: str
    namespace: str
    qualified: bool  # elementFormDefault="qualified": the root's children are namespaced too


def validate(
    document: PescDocument | str | bytes, *, schemas_dir: str | os.PathLike[str] | None = None
) -> Validation:
    """Validate a PESC message against the XSDs; never raises for a bad document.

    >>> str(validate(xml_text, schemas_dir="../shared/pesc/xsd"))
    'invalid against CollegeTranscript v1.3.0 (CollegeTranscript_v1.3.0.xsd), 1 error(s)'
    """
    try:
        doc = as_document(document)
    except PescError as exc:
        return Validation(
            INVALID, [ValidationIssue(None, str(exc))], None, f"not parsed ({exc.reason})"
        )

    directory = schemas_dir if schemas_dir is not None else os.environ.get(SCHEMAS_VARIABLE)
    if not directory:
        return Validation(
            NOT_VALIDATED,
            note=f"set {SCHEMAS_VARIABLE} to a folder of PESC XSDs (no schema folder is set)",
        )
    folder = Path(directory).expanduser().resolve()
    if not folder.is_dir():
        return Validation(
            NOT_VALIDATED,
            note=f"the schema folder {folder} does not exist (check {SCHEMAS_VARIABLE})",
        )

    candidates = _index(str(folder)).get(doc.message_type, {})
    chosen = nearest_version(doc.version, list(candidates))
    if chosen is None:
        return Validation(
            NOT_VALIDATED, note=f"no schema for {schema_name(doc.message_type)} in {folder}"
        )
    schema = candidates[chosen]
    try:
        compiled = _compile(str(schema.path), str(folder))
    except (etree.XMLSchemaParseError, etree.XMLSyntaxError, PescError) as exc:
        return Validation(
            NOT_VALIDATED,
            schema=schema.path.name,
            note=f"{schema.path.name} does not compile: {exc}",
        )

    tree = _as_schema_namespace(doc, schema)
    with _lock:
        compiled.validate(tree)
        log = compiled.error_log
        errors = [ValidationIssue(entry.line or None, entry.message) for entry in log][:MAX_ERRORS]
        total = len(log)
    note = _note(doc, schema)
    if total > MAX_ERRORS:
        note += f"; only the first {MAX_ERRORS} of {total} errors are listed"
    return Validation(INVALID if total else VALID, errors, schema.path.name, note, total)


def _note(doc: PescDocument, schema: _Schema) -> str:
    name = schema_name(schema.message_type)
    note = f"{_VALIDATED_AGAINST}{name} v{schema.version} ({schema.path.name})"
    if doc.version is None:
        return f"{note}, the newest schema: the document's namespace has no version"
    if doc.version != schema.version:
        return f"{note}, the nearest version to v{doc.version}, which has no schema here"
    if doc.namespace != schema.namespace:
        return f"{note}, with the root namespace {doc.namespace} read as {schema.namespace}"
    return note


def _as_schema_namespace(doc: PescDocument, schema: _Schema) -> etree._ElementTree:
    """The document's tree, on a copy moved into the schema's namespace when they differ."""
    if doc.namespace == schema.namespace:
        return doc.root.getroottree()
    root = copy.deepcopy(doc.root)  # keeps source line numbers
    new = f"{{{schema.namespace}}}"
    if doc.namespace:
        for node in root.iter(f"{{{doc.namespace}}}*"):
            node.tag = new + node.tag.split("}", 1)[1]
    else:
        root.tag = new + root.tag
        if schema.qualified:
            for node in root.iterchildren(etree.Element):
                if node.tag[0] != "{":
                    node.tag = new + node.tag
    return etree.ElementTree(root)


def parse_message_namespace(namespace: str) -> tuple[str, str] | None:
    """``urn:org:pesc:message:X:v1.2.0`` -> (root local name, "1.2.0"); None for others."""
    match = _MESSAGE_NAMESPACE.match(namespace)
    if not match:
        return None
    name = ACKNOWLEDGMENT if match[1] == schema_name(ACKNOWLEDGMENT) else match[1]
    return name, match[2]


def nearest_version(wanted: str | None, available: list[str]) -> str | None:
    """The available version closest to ``wanted`` (the newest when None): first differing in a
    less significant component, then by less there; a tie goes to the newer."""
    if not available:
        return None
    try:
        target = version_tuple(wanted) if wanted else ()
    except ValueError:
        target = ()

    def closeness(version: str) -> tuple[int, int, tuple[int, ...]]:
        parts = version_tuple(version)
        pairs = list(zip_longest(parts, target, fillvalue=0)) if target else []
        same = next((i for i, (a, b) in enumerate(pairs) if a != b), len(pairs))
        gap = abs(pairs[same][0] - pairs[same][1]) if same < len(pairs) else 0
        return same, -gap, parts

    return max(available, key=closeness)


@lru_cache(maxsize=8)
def _index(folder: str) -> dict[str, dict[str, _Schema]]:
    """Message schemas under ``folder``: {root local name: {version: schema}}."""
    found: dict[str, dict[str, _Schema]] = {}
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    for path in sorted(Path(folder).rglob("*.xsd")):
        try:
            root = etree.parse(str(path), parser).getroot()
        except (etree.XMLSyntaxError, OSError):
            continue
        namespace = root.get("targetNamespace")
        message = parse_message_namespace(namespace) if namespace else None
        if namespace and message:
            qualified = root.get("elementFormDefault") == "qualified"
            schema = _Schema(path, *message, namespace, qualified)
            found.setdefault(message[0], {}).setdefault(message[1], schema)
    return found


class _LocalOnly(etree.Resolver):
    """Lets the schema compiler read files inside the schema folder and nothing else."""

    def __init__(self, folder: str) -> None:
        super().__init__()
        self.folder = Path(folder)

    def resolve(self, url, pubid, context):  # type: ignore[no-untyped-def]
        if url.startswith("file:"):
            path: str | None = unquote(urlparse(url).path)
        else:
            path = None if "://" in url else url
        if path is not None:
            resolved = Path(path).resolve()
            if resolved.is_relative_to(self.folder) and resolved.is_file():
                return self.resolve_filename(str(resolved), context)
        raise PescError(
            f"The schema refers to {url!r}, outside the schema folder {self.folder}; schemas "
            "are compiled from local files only.",
            reason="schema",
        )


@lru_cache(maxsize=32)
def _compile(path: str, folder: str) -> etree.XMLSchema:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    parser.resolvers.add(_LocalOnly(folder))
    with _lock:
        return etree.XMLSchema(etree.parse(path, parser))
