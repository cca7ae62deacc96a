"""The snapshot store: SQLite (through sqlite-utils) holding runs, calls, list snapshots,
entities and the outbox. See :class:`Store`.

Layout::

    core.py        Store: the public face
    connection.py  the shared connection, transactions, errors   lock.py  one pull at a time
    schema.py      tables, keys, indexes      migrations.py  versions, in-place upgrades
    views.py       the analyst's views        lists.py       the four partner lists
    record.py      runs, calls, snapshots     entities.py    requests, transcripts, events
    details.py     a detail's row, PESC fields and child rows, prepared outside the lock
    outbox.py      sends, duplicates, stale   settle.py      uncertain sends vs the lists
    history.py     as_of, diff, timeline      frames.py      DataFrame dtypes
    scrub.py       secrets never reach the file   values.py  times, JSON, hashes
"""

from __future__ import annotations

from workbench.errors import DuplicateSend
from workbench.store.core import Store
from workbench.store.lists import LIST_NAMES, OPERATIONS
from workbench.store.outbox import Outbox
from workbench.store.record import SnapshotDiff
from workbench.store.schema import SCHEMA_VERSION

__all__ = [
    "LIST_NAMES",
    "OPERATIONS",
    "SCHEMA_VERSION",
    "DuplicateSend",
    "Outbox",
    "SnapshotDiff",
    "Store",
]
