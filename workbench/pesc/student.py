"""Is it the same student? The one rule of sends and the reconciliation, on flattened fields:
case, accents, Unicode forms, spaces and punctuation are forgiven, a letter or digit is not.

>>> differing_fields({"student_last_name": "O'Brien-Lévesque"},
...                  {"student_last_name": "OBRIEN LEVESQUE"})
()
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

import pandas as pd

from workbench.pesc.elements import names

IDENTITY = names(
    "student_first_name student_last_name student_birth_date student_oen student_ocas_account "
    "student_ocas_application student_school_assigned_id"
)
_NOT_ALNUM = re.compile(r"[\W_]+")  # \w is str.isalnum() and "_"
_DOTLESS = str.maketrans({"ı": "i"})  # Turkish: "ISMAIL" is "ısmail" there, "ismail" here


def comparable(value: Any, field: str) -> str | None:
    """``value`` as compared: a birth date on its first 10 characters, a name or id on its letters
    and digits, case-folded, accents dropped, forms made plain; None when missing (not compared)."""
    if not isinstance(value, str):
        if pd.api.types.is_scalar(value) and pd.isna(value):
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # an id read as a number
        value = str(value)
    if field == "student_birth_date":
        if not value.isascii():  # full-width digits made plain, invisible characters gone
            plain = unicodedata.normalize("NFKC", value)
            value = "".join(c for c in plain if unicodedata.category(c) != "Cf")
        text = value.strip()[:10]
    elif value.isascii():
        text = _NOT_ALNUM.sub("", value.casefold())
    else:  # combining accents are no letters: NFKD splits them off, and they go
        text = _NOT_ALNUM.sub(
            "", unicodedata.normalize("NFKD", value.translate(_DOTLESS).casefold())
        )
    return text or None


def differing_fields(
    request_fields: Mapping[str, Any], transcript_fields: Mapping[str, Any]
) -> tuple[str, ...]:
    """The :data:`IDENTITY` fields present on both sides whose :func:`comparable` values differ."""
    differ = []
    for field in IDENTITY:
        ours = comparable(request_fields.get(field), field)
        theirs = comparable(transcript_fields.get(field), field)
        if ours is not None and theirs is not None and ours != theirs:
            differ.append(field)
    return tuple(differ)


def described(fields: tuple[str, ...]) -> str:
    """Identity field names as words, for a message: "last name and birth date"."""
    words = [f.removeprefix("student_").replace("_", " ") for f in fields]
    words = [w.replace("oen", "OEN").replace("ocas", "OCAS") for w in words]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]
