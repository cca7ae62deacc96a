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

import typing

from workbench._lazy import lazy_names as _lazy_names
from workbench.errors import DuplicateSend

if typing.TYPE_CHECKING:
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

# Loaded on first use (PEP 562): a submodule (the schema version, migrations) imports without
# Store, sqlite-utils and the pandas they load (a report job's check of a store).
__getattr__, __dir__ = _lazy_names(
    __name__,
    globals(),
    {
        "LIST_NAMES": "workbench.store.lists",
        "OPERATIONS": "workbench.store.lists",
        "Outbox": "workbench.store.outbox",
        "SCHEMA_VERSION": "workbench.store.schema",
        "SnapshotDiff": "workbench.store.record",
        "Store": "workbench.store.core",
    },
)
