"""Is it the same student? The rule a transcript's student is compared by with the request's.

One rule, used before a transcript is sent (``Supplier.send_transcript``, ``workbench send``)
and by reconciliation afterwards (the ``student_identity`` check), on flattened PESC fields
(:func:`workbench.pesc.flatten`):

>>> differing_fields({"student_last_name": "Tremblay", "student_oen": "123-456-789"},
...                  {"student_last_name": " TREMBLAY", "student_oen": "123456789"})
()
>>> differing_fields({"student_birth_date": "1999-04-14"},
...                  {"student_birth_date": "1999-04-15T00:00:00", "student_oen": "1"})
('student_birth_date',)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

# The fields that name a student, in the order messages list them.
IDENTITY = (
    "student_first_name",
    "student_last_name",
    "student_birth_date",
    "student_oen",
    "student_ocas_account",
    "student_ocas_application",
    "student_school_assigned_id",
)
IDS = frozenset(
    {
        "student_oen",
        "student_ocas_account",
        "student_ocas_application",
        "student_school_assigned_id",
    }
)
_ID_NOISE = re.compile(r"[\s-]")
_SPACES = re.compile(r"\s+")


def comparable(value: Any, field: str) -> str | None:
    """``value`` of identity ``field`` as compared: ids without spaces and dashes, birth dates
    on their first 10 characters, names case-folded, trimmed, inner whitespace collapsed.
    None when there is no value (missing, or blank): it is then not compared."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    value = value if isinstance(value, str) else str(value)
    if field in IDS:
        text = _ID_NOISE.sub("", value)
    elif field == "student_birth_date":
        text = value.strip()[:10]
    else:
        text = _SPACES.sub(" ", value.casefold().strip())
    return text or None


def differing_fields(
    request_fields: Mapping[str, Any], transcript_fields: Mapping[str, Any]
) -> tuple[str, ...]:
    """The :data:`IDENTITY` fields whose values, present on both sides, differ once
    :func:`comparable`; () when every field both give agrees (or none is given)."""
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
