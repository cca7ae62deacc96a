"""The snapshot store: SQLite (through sqlite-utils) holding runs, calls, list snapshots,
documents, events and the outbox. See :class:`Store`.

Layout::

    core.py        Store: opening, runs, calls, snapshots, list membership, details, events
    history.py     History, the Store's read side: table, as_of, diff, timeline, documents
    connection.py  the shared connection, transactions, errors, the pull lock
    schema.py      tables, views, how values are written    migrations.py  versions, upgrades
    lists.py       the four partner lists                    frames.py      DataFrame dtypes
    details.py     a detail's documents, rows and children   events.py      events, deduplicated
    outbox.py      sends, duplicates, stale                  settle.py      uncertain sends
    identity.py    which partner the store holds             metadata.py    what it all means
"""

from __future__ import annotations

import typing

from workbench._lazy import lazy_names as _lazy_names
from workbench.errors import DuplicateSend

if typing.TYPE_CHECKING:
    from workbench.store.core import SnapshotDiff, Store
    from workbench.store.lists import LIST_NAMES, OPERATIONS
    from workbench.store.outbox import Outbox
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

# Loaded on first use (PEP 562): a submodule (the schema version, whom a store holds) imports
# without Store, sqlite-utils and the pandas they load.
__getattr__, __dir__ = _lazy_names(
    __name__,
    globals(),
    {
        "LIST_NAMES": "workbench.store.lists",
        "OPERATIONS": "workbench.store.lists",
        "Outbox": "workbench.store.outbox",
        "SCHEMA_VERSION": "workbench.store.schema",
        "SnapshotDiff": "workbench.store.core",
        "Store": "workbench.store.core",
    },
)
