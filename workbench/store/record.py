"""What the records are made of: the workbench version a run records, the request id a call
is filed under, an item's key in a snapshot, and what a snapshot changed (:class:`SnapshotDiff`).
The records themselves are written by :class:`~workbench.store.Store`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as default
from importlib.metadata import PackageNotFoundError, version
from typing import Any
from urllib.parse import unquote

from workbench.store.cells import field, sha256

_ID_PATHS = ("transcriptrequests", "transcripts")
_NOT_IDS = frozenset({"no_response"})


def workbench_version() -> str:
    try:
        return version("workbench")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0"


def request_id_from_url(url: str | None) -> str | None:
    """The ``:id`` of a transcript-exchange by-id path, or None (lists, tokens, events)."""
    if not url or "/transcript" not in url.lower():
        return None
    path = url.split("?", 1)[0].split("#", 1)[0].split("://", 1)[-1]
    parts = [p for p in path.split("/")[1:] if p]  # [0] is the host
    for here, following in itertools.pairwise(parts):
        if here.lower() in _ID_PATHS and following.lower() not in _NOT_IDS:
            return unquote(following)
    return None


@dataclass(frozen=True)
class SnapshotDiff:
    """What one list snapshot changed, against the previous snapshot of the same list.

    ``left`` maps the ids that left the list to their reason (``outbox``/``elsewhere``);
    ``resolved`` lists the uncertain sends this snapshot settled.
    """

    snapshot_id: int
    list_name: str
    taken_at: str
    previous_id: int | None
    appeared: tuple[str, ...]
    vanished: tuple[str, ...]
    changed: tuple[str, ...]
    unchanged: tuple[str, ...]
    left: dict[str, str] = default(default_factory=dict)
    resolved: tuple[dict[str, Any], ...] = ()

    def __int__(self) -> int:
        return self.snapshot_id


def item_key(item: Any, key: str, text: str) -> str:
    """An item's key: its ``key`` field (any case), else a content hash (events:
    :func:`workbench.store.events.event_keys`)."""
    if isinstance(item, Mapping):
        value = field(item, key)
        if value is not None and not isinstance(value, Mapping | list):
            return str(value)
    return "sha256:" + sha256(text)
