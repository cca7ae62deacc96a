"""Which PESC message a document is (its root's local name) and which version (its namespace's:
the spec gives a TranscriptResponse the request's v1.0.0 namespace), and each version's namespace.
"""

from __future__ import annotations

import re
from itertools import zip_longest

from lxml import etree

from workbench.spec import NS_V1_0_0

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
_MESSAGE_NAMESPACE = re.compile(r"^urn:org:pesc:message:([A-Za-z]+):v(\d+(?:\.\d+)*)$")

# The root element ``Acknowledgment`` lives in the ``TranscriptAcknowledgment`` namespace.
_SCHEMA_NAME = {ACKNOWLEDGMENT: "TranscriptAcknowledgment"}
_ROOT_NAME = {"TranscriptAcknowledgment": ACKNOWLEDGMENT}

# The Acknowledgment version of each CollegeTranscript version: the same AcademicRecord imports
# (1.4.0-1.5.0 inferred).
_ACK_FOR_TRANSCRIPT = {
    (1, 0, 0): "1.0.0", (1, 1, 0): "1.0.0", (1, 2, 0): "1.0.0", (1, 3, 0): "1.1.0",
    (1, 4, 0): "1.2.0", (1, 5, 0): "1.2.0", (1, 6, 0): "1.3.0",
}  # fmt: skip


def message_info(tag: str) -> tuple[str, str | None, str | None]:
    """(message type, version, namespace) of a root tag; version is None without one."""
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


def parse_message_namespace(namespace: str) -> tuple[str, str] | None:
    """``urn:org:pesc:message:X:v1.2.0`` -> (root local name, "1.2.0"); None for others."""
    match = _MESSAGE_NAMESPACE.match(namespace)
    if not match:
        return None
    return _ROOT_NAME.get(match.group(1), match.group(1)), match.group(2)


def namespace_for(message_type: str, version: str) -> str:
    """The namespace of a message of this type and version (the spec's for v1.0.0)."""
    if version == "1.0.0" and message_type in NS_V1_0_0:
        return NS_V1_0_0[message_type]
    return f"urn:org:pesc:message:{schema_name(message_type)}:v{version}"


def acknowledgment_version(transcript_version: str | None) -> str:
    """The Acknowledgment version of the family a CollegeTranscript version belongs to."""
    if transcript_version is None:
        return "1.0.0"
    try:
        key = version_tuple(transcript_version)
    except ValueError:
        return "1.0.0"
    if key in _ACK_FOR_TRANSCRIPT:
        return _ACK_FOR_TRANSCRIPT[key]
    known = sorted(_ACK_FOR_TRANSCRIPT)
    return _ACK_FOR_TRANSCRIPT[known[-1]] if key > known[-1] else _ACK_FOR_TRANSCRIPT[known[0]]


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
