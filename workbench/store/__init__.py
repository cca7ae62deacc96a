"""The snapshot store: SQLite (through sqlite-utils) holding runs, calls, list snapshots,
entities and the outbox. See :class:`Store`.

Layout::

    core.py        Store: opening, runs, calls, snapshots, details, housekeeping
    history.py     History, the Store's read side: table, as_of, diff, timeline, documents
    connection.py  the shared connection, transactions, errors   lock.py  one pull at a time
    schema.py      tables, keys, indexes      migrations.py  versions, in-place upgrades
    views.py       the analyst's views        lists.py       the four partner lists
    record.py      snapshot keys and diffs    entities.py    list membership, departures
    details.py     a detail's row, PESC fields and child rows, prepared outside the lock
    outbox.py      sends, duplicates, stale   settle.py      uncertain sends vs the lists
    events.py      events, deduplicated       frames.py      DataFrame dtypes
    cells.py       how values are written    identity.py    which partner the store holds
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
