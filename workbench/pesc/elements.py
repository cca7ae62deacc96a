"""Namespace-agnostic reading of PESC elements.

Below the root (and, in requests and responses, its direct children) nothing is namespaced, but
real documents get this wrong (a default ``xmlns`` on the root namespaces everything). Every
lookup here matches elements by local name only, walks each element's children once, and
returns None for anything missing, so extraction never raises on an incomplete document.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeAlias

from lxml import etree

Element: TypeAlias = etree._Element

ELEMENTS = etree.Element  # as an iteration filter: elements only, no comments


def names(words: str) -> tuple[str, ...]:
    """Names written as words: ``names("a b")`` is ``("a", "b")``."""
    return tuple(words.split())


# CoreMain OrganizationIDGroup, in schema order (APAS arrived in CoreMain 1.14).
ORGANIZATION_ID_TYPES = names(
    "OPEID NCHELPID IPEDS ATP FICE ACT CCD PSS CEEBACT CSIS USIS ESIS PSIS DUNS MutuallyDefined "
    "APAS"
)
# Children of an organization that are never its identifier.
_NOT_IDS = names("OrganizationName Contacts NoteMessage LocalOrganizationID Accreditation")


def local(tag: str) -> str:
    """The local part of an element tag."""
    return tag if tag[0] != "{" else tag[tag.index("}") + 1 :]


def children(element: Element | None) -> dict[str, Element]:
    """The first child of each local name, in one pass over the children."""
    found: dict[str, Element] = {}
    if element is None:
        return found
    for node in element.iterchildren(ELEMENTS):
        tag = node.tag
        if tag[0] == "{":
            tag = tag[tag.index("}") + 1 :]
        if tag not in found:
            found[tag] = node
    return found


def children_named(element: Element | None, name: str) -> list[Element]:
    """Every child with this local name, in document order."""
    if element is None:
        return []
    return [node for node in element.iterchildren(ELEMENTS) if local(node.tag) == name]


def child(element: Element | None, name: str) -> Element | None:
    """The first child with this local name, or None."""
    if element is None:
        return None
    for node in element.iterchildren(ELEMENTS):
        if local(node.tag) == name:
            return node
    return None


def find(element: Element | None, *names: str) -> Element | None:
    """Follow a path of local names from ``element``; None as soon as a step is missing."""
    for name in names:
        element = child(element, name)
        if element is None:
            return None
    return element


def text(element: Element | None) -> str | None:
    """The element's own text, stripped; None when missing or blank."""
    if element is None:
        return None
    value = element.text
    if value is None:
        return None
    value = value.strip()
    return value or None


def find_text(element: Element | None, *names: str) -> str | None:
    """``text(find(element, *names))``."""
    return text(find(element, *names))


def texts(element: Element | None, name: str) -> list[str]:
    """The non-blank texts of every child with this local name."""
    return [value for node in children_named(element, name) if (value := text(node))]


def descendants(element: Element | None, name: str) -> Iterator[Element]:
    """Every descendant (any depth, any namespace) with this local name."""
    if element is None:
        return iter(())
    return element.iter(f"{{*}}{name}")


def organization(element: Element | None) -> tuple[str | None, str | None, str | None]:
    """(id type, id, name) of an organization or school element.

    The id is the first OrganizationIDGroup element with a value (``CSIS``, ``USIS``,
    ``MutuallyDefined`` ...); failing that, the first other leaf with a value (real documents
    carry local codes such as ``GeoCode``).
    """
    id_type = id_value = fallback = None
    name = None
    for node in element.iterchildren(ELEMENTS) if element is not None else ():
        tag = local(node.tag)
        if tag == "OrganizationName":
            name = name or text(node)
        elif id_type is None and tag in ORGANIZATION_ID_TYPES:
            value = text(node)
            if value:
                id_type, id_value = tag, value
        elif fallback is None and tag not in _NOT_IDS and len(node) == 0:
            value = text(node)
            if value:
                fallback = (tag, value)
    if id_type is None and fallback is not None:
        id_type, id_value = fallback
    return id_type, id_value, name


def boolean(value: str | None) -> bool | None:
    """xs:boolean text to bool; None when missing or not a boolean."""
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    return None


def integer(value: str | None) -> int | None:
    """Integer text to int; None when missing or not an integer."""
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def context_path(element: Element, root: Element) -> str:
    """Local names from below ``root`` down to ``element``'s parent, joined by '/'."""
    names = []
    node = element.getparent()
    while node is not None and node is not root:
        names.append(local(node.tag))
        node = node.getparent()
    return "/".join(reversed(names))
