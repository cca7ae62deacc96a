"""The four partner lists the store snapshots, and what each one means to the store."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import StoreError


@dataclass(frozen=True)
class ListInfo:
    """How one partner list maps onto the store's tables."""

    name: str
    table: str  # the entity table whose rows the list's items are
    id_column: str  # that table's id column
    key: str | None  # the item field that identifies an item (None: detect, else a hash)
    operations: tuple[str, ...]  # outbox operations whose success takes an item off the list
    source: str | None = None  # events: the ``source`` value in ``events``


LISTS: dict[str, ListInfo] = {
    info.name: info
    for info in (
        ListInfo(
            "supplier_requests",
            "transcript_requests",
            "request_id",
            "RequestID",
            ("send_response", "send_transcript"),
        ),
        ListInfo(
            "consumer_transcripts",
            "transcripts_received",
            "transcript_id",
            "RequestID",
            ("send_acknowledgment",),
        ),
        ListInfo("placement_events", "events", "event_key", None, (), source="placement"),
        ListInfo("domestic_events", "events", "event_key", None, (), source="domestic"),
    )
}
LIST_NAMES = tuple(LISTS)
DETAIL_LISTS = ("supplier_requests", "consumer_transcripts")
EVENT_SOURCES = {"placement": "placement_events", "domestic": "domestic_events"}
OPERATIONS = ("send_response", "send_transcript", "send_acknowledgment")
LIST_OF_OPERATION = {op: info.name for info in LISTS.values() for op in info.operations}
LEFT_REASONS = ("outbox", "elsewhere")


def list_info(list_name: str, *, details: bool = False) -> ListInfo:
    """The ``ListInfo`` of ``list_name``; ``StoreError`` naming the valid names otherwise."""
    names = DETAIL_LISTS if details else LIST_NAMES
    if list_name not in names:
        raise StoreError(f"Unknown list {list_name!r}; expected one of: {', '.join(names)}.")
    return LISTS[list_name]
