"""The bundle's personal-data rule, on top of the secrets rule of ``workbench.http.masking``."""

from __future__ import annotations

import contextlib
import html
import json
import re
from collections.abc import Iterable

# Leaf elements masked by ``redact_personal``, wherever they appear (organisation contacts
# included: masking too much is the safe side of a document that leaves the institution).
PERSONAL_ELEMENTS: dict[str, tuple[str, ...]] = {
    "names": ("NamePrefix", "FirstName", "MiddleName", "LastName", "NameSuffix", "CompositeName"),
    "birth": ("BirthDate", "Birthday", "BirthCity", "BirthStateProvinceCode", "BirthCountry"),
    "identifiers": ("SchoolAssignedPersonID", "AgencyAssignedID", "RecipientAssignedID",
                    "SIN", "NSN", "SSN", "PartialSSN"),
    "addresses": ("AddressLine", "City", "StateProvince", "StateProvinceCode", "PostalCode"),
    "emails": ("EmailAddress",),
    "phones": ("CountryPrefixCode", "AreaCityCode", "PhoneNumber", "PhoneNumberExtension"),
}  # fmt: skip


def _element_pattern(names: Iterable[str], *, escaped: bool) -> re.Pattern[str]:
    """A leaf element named one of ``names`` (any prefix), raw or XML-escaped once."""
    alternatives = "|".join(sorted(names, key=len, reverse=True))
    prefix = r"(?:[A-Za-z_][\w.-]*:)?"
    lt, gt = ("&lt;", "&gt;") if escaped else ("<", ">")
    attributes = r"(?:\s(?:(?!&gt;)[^<>])*)?" if escaped else r"(?:\s[^<>]*)?"
    content = r"(?:(?!&lt;)[^<])*" if escaped else r"[^<]*"
    return re.compile(
        f"({lt}{prefix}(?P<name>{alternatives}){attributes}{gt})(?P<value>{content})"
        f"({lt}/{prefix}(?P=name)\\s*{gt})"
    )


_ALL_PERSONAL = tuple(name for names in PERSONAL_ELEMENTS.values() for name in names)
# (pattern, how many times its content is escaped)
_ELEMENTS = ((_element_pattern(_ALL_PERSONAL, escaped=False), 1),
             (_element_pattern(_ALL_PERSONAL, escaped=True), 2))  # fmt: skip
_PLACEHOLDER = re.compile(r"\s*\[(?:[A-Za-z]+-\d+|REDACTED|personal)\]\s*")
_MARKUP = r"</?[A-Za-z_][^<>]*>|&lt;/?[A-Za-z_](?:(?!&gt;)[^<>])*&gt;"


class Personal:
    """Masks student personal data: by element (:data:`PERSONAL_ELEMENTS`), then every value so
    learned wherever else it shows up (a note, a tracking id, a validation message, a JSON
    field), outside markup. The same value always gets the same placeholder."""

    def __init__(self, *, active: bool = True) -> None:
        self.active = active  # inactive: every text as it is
        self._placeholders: dict[str, str] = {}  # value (lower case) -> placeholder
        self._variants: dict[str, str] = {}  # each spelling of a value -> placeholder
        self._net: re.Pattern[str] | None = None

    def learn(self, text: str) -> None:
        """Remember the personal values in ``text`` (and give each its placeholder)."""
        if not self.active:
            return
        for pattern, unescape in _ELEMENTS:
            for match in pattern.finditer(text):
                self._placeholder(match["name"], match["value"], unescape)

    def text(self, text: str) -> str:
        """``text`` with every personal element's content and every learned value masked."""
        if not self.active:
            return text
        for pattern, unescape in _ELEMENTS:

            def masked(m: re.Match[str], unescape: int = unescape) -> str:
                return m[1] + self._placeholder(m["name"], m["value"], unescape) + m[4]

            text = pattern.sub(masked, text)
        net = self._pattern()
        if net is None:
            return text
        return net.sub(lambda m: m[0] if m["markup"] else self._variant(m[0]), text)

    def _placeholder(self, name: str, value: str, unescape: int) -> str:
        if not value.strip() or _PLACEHOLDER.fullmatch(value):
            return value
        plain = value
        for _ in range(unescape):
            plain = html.unescape(plain)
        if "\\" in plain:  # the document was read out of a JSON string
            with contextlib.suppress(ValueError):
                plain = json.loads(f'"{plain}"')
        plain = plain.strip()
        key = plain.lower()
        if key not in self._placeholders:
            count = sum(p.startswith(f"[{name}-") for p in self._placeholders.values())
            self._placeholders[key] = f"[{name}-{count + 1}]"
            self._add_variants(plain, self._placeholders[key])
        return self._placeholders[key]

    def _add_variants(self, value: str, placeholder: str) -> None:
        if len(value) < 2 or (len(value) < 6 and not any(c.isalpha() for c in value)):
            return  # "1" or "416" everywhere would garble the bundle; the element still goes
        escaped = html.escape(value, quote=False)
        spellings = {
            value,
            escaped,
            escaped.replace("'", "&apos;").replace('"', "&quot;"),
            html.escape(value),
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
        }
        for spelling in spellings:
            self._variants.setdefault(spelling, placeholder)
        self._net = None

    def _pattern(self) -> re.Pattern[str] | None:
        # Case-insensitive from 4 characters; shorter ones ("Li", "ON") only as spelled.
        if self._net is None and self._variants:
            ordered = sorted(self._variants, key=len, reverse=True)
            long = "|".join(re.escape(v) for v in ordered if len(v) >= 4)
            short = "|".join(re.escape(v) for v in ordered if len(v) < 4)
            values = "|".join(filter(None, [f"(?i:{long})" if long else "", short]))
            self._net = re.compile(f"(?P<markup>{_MARKUP})|(?<!\\w)(?:{values})(?!\\w)")
        return self._net

    def _variant(self, found: str) -> str:
        lower = found.lower()  # a value found case-blind: the placeholder of its spelling
        same = (p for v, p in self._variants.items() if v.lower() == lower)
        return self._variants.get(found) or next(same, "[personal]")
