"""Reading PESC elements by local name only (real documents namespace what should not be), None
for anything missing."""

from __future__ import annotations

from typing import TypeAlias

from lxml import etree

Element: TypeAlias = etree._Element

ELEMENTS = etree.Element  # as an iteration filter: elements only, no comments


def names(words: str) -> tuple[str, ...]:
    """Names written as words: ``names("a b")`` is ``("a", "b")``."""
    return tuple(words.split())


def mapping(keys: str, values: str) -> dict[str, str]:
    """Two lists of names as one dict: ``mapping("a b", "A B")`` is ``{"a": "A", "b": "B"}``."""
    return dict(zip(names(keys), names(values), strict=True))


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
    for node in element.iterchildren(ELEMENTS) if element is not None else ():
        found.setdefault(local(node.tag), node)
    return found


def children_named(element: Element | None, name: str) -> list[Element]:
    """Every child with this local name, in document order."""
    return [] if element is None else list(element.iterchildren(f"{{*}}{name}"))


def find(element: Element | None, *names: str) -> Element | None:
    """Follow a path of local names from ``element``; None as soon as a step is missing."""
    for name in names:  # step by step: "B of the first A", never "the first B of any A"
        element = None if element is None else element.find(f"{{*}}{name}")
    return element


def text(element: Element | None) -> str | None:
    """The element's own text, stripped; None when missing or blank."""
    value = element.text if element is not None else None
    return value.strip() or None if value is not None else None


def find_text(element: Element | None, *names: str) -> str | None:
    return text(find(element, *names))


def leaves(element: Element | None, columns: dict[str, str]) -> dict[str, str | None]:
    """``{column: text}`` of the children named by ``columns`` (``{tag: column}``)."""
    found = children(element)
    return {column: text(found.get(tag)) for tag, column in columns.items()}


def texts(element: Element | None, name: str) -> list[str]:
    """The non-blank texts of every child with this local name."""
    return [value for node in children_named(element, name) if (value := text(node))]


def joined(values: list[str], separator: str = " ") -> str | None:
    """``values`` joined, None when there are none."""
    return separator.join(values) or None


def organization(element: Element | None, prefix: str) -> dict[str, str | None]:
    """``{prefix}_id_type``, ``{prefix}_id`` and ``{prefix}_name`` of an organization: the first
    OrganizationIDGroup id with a value, else the first other leaf with one (real documents carry
    local codes such as ``GeoCode``)."""
    found = [
        (local(node.tag), text(node), len(node) == 0)
        for node in (element.iterchildren(ELEMENTS) if element is not None else ())
    ]
    named = [value for tag, value, _ in found if value and tag == "OrganizationName"]
    ids = [(tag, value) for tag, value, _ in found if value and tag in ORGANIZATION_ID_TYPES]
    ids += [(tag, value) for tag, value, leaf in found if value and leaf and tag not in _NOT_IDS]
    id_type, id_value = ids[0] if ids else (None, None)
    name = named[0] if named else None
    return {f"{prefix}_id_type": id_type, f"{prefix}_id": id_value, f"{prefix}_name": name}


def boolean(value: str | None) -> bool | None:
    """xs:boolean text to bool; None when missing or not a boolean."""
    return {"true": True, "1": True, "false": False, "0": False}.get(value or "")


def integer(value: str | None) -> int | None:
    """Integer text to int; None when missing or not an integer."""
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def context_path(element: Element, root: Element) -> str:
    """Local names from below ``root`` down to ``element``'s parent, joined by '/'."""
    return "/".join(local(node.tag) for node in reversed(list(element.iterancestors())[:-1]))
