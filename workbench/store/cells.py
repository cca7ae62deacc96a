"""What goes into a cell: UTC times as fixed-width ISO text, canonical JSON, content hashes.

Every time the store writes is ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: fixed width, so text order is
time order, and SQLite's date functions read it (``julianday(request_date)``).

>>> utc_text("2026-03-02T09:00:00.000Z")
'2026-03-02T09:00:00.000000Z'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from workbench.errors import PescError, StoreError
from workbench.partner_json import keys_named


def now() -> datetime:
    return datetime.now(UTC)


def now_text() -> str:
    return utc_text(now())  # type: ignore[return-value]


def utc_text(when: datetime | date | str | None) -> str | None:
    """A time as the store writes it; naive times are taken as UTC. ``None`` stays ``None``."""
    if when is None:
        return None
    if isinstance(when, str):
        try:
            when = datetime.fromisoformat(when.strip())
        except ValueError:
            raise StoreError(
                f"{when!r} is not an ISO 8601 time (e.g. 2026-03-02T09:00:00Z)."
            ) from None
    elif not isinstance(when, datetime):  # a date: its midnight UTC
        when = datetime(when.year, when.month, when.day)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def partner_time(value: Any) -> str | None:
    """A partner's timestamp normalised when it parses; kept as written when it does not."""
    if value is None or value == "":
        return None
    try:
        return utc_text(value)
    except (StoreError, TypeError, ValueError, OverflowError):
        return str(value)


# One encoder for every call (``json.dumps`` with options builds a new one each time); its
# ``encode`` keeps no state between calls, so threads share it.
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, UTF-8 kept, anything unknown as its ``str``."""
    return _CANONICAL.encode(value)


def sha256(text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def scalar(value: Any) -> Any:
    """A value SQLite can hold: bools as 0/1, containers as JSON, the rest as is or as text."""
    if value is None or isinstance(value, str | int | float):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping | list | tuple):
        return dumps(value)
    return str(value)


def field(record: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` present in ``record``, matched case-insensitively (None if none).

    A name that two keys match (``requestid`` and ``RequestID``) counts as absent: the pull
    refuses such an item (:func:`workbench.partner_json.keys_named`), so no unchecked value of
    it may key a row.
    """
    for name in names:
        keys = keys_named(record, name)
        value = record[keys[0]] if len(keys) == 1 else None
        if value is not None and value != "":
            return value
    return None


def pescxml_of(document: Any) -> tuple[str | None, Any]:
    """Split a partner JSON body (or its one item) into its ``PESCXML`` (any case) and the rest.

    A JSON string is decoded first; a string that is not JSON is taken as the XML itself.
    """
    if isinstance(document, str | bytes):
        text = document.decode("utf-8", "replace") if isinstance(document, bytes) else document
        try:
            document = json.loads(text)
        except ValueError:
            return (text or None), None
    if isinstance(document, list) and len(document) == 1:
        document = document[0]
    if not isinstance(document, Mapping):
        return None, document
    xml = None
    rest = {}
    for key, value in document.items():
        if str(key).lower() == "pescxml" and xml is None and isinstance(value, str):
            xml = value
        else:
            rest[key] = value
    return xml, rest


def unescaped_once(xml: str | None) -> str | None:
    """A document's XML unescaped once when it came XML-escaped (``&lt;...``), as the PESC
    parser reads it; as it is otherwise, or when it cannot be read (escaped twice, say)."""
    if not xml or not xml.lstrip().startswith("&lt;"):
        return xml
    from workbench.pesc.document import unescape_once  # lxml: imported when first needed

    try:
        return unescape_once(xml)
    except PescError:
        return xml


def row_id(value: Any) -> int | None:
    """A row id as a plain ``int`` (numpy and pandas integers come from DataFrames)."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise StoreError(f"{value!r} is not a row id (an integer).") from None
