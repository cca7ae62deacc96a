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

import importlib
import typing

from workbench.errors import DuplicateSend

if typing.TYPE_CHECKING:
    from workbench.store.core import SnapshotDiff, Store
    from workbench.store.lists import LIST_NAMES, OPERATIONS
    from workbench.store.outbox import Outbox
    from workbench.store.schema import SCHEMA_VERSION

__all__ = ["LIST_NAMES", "OPERATIONS", "SCHEMA_VERSION", "DuplicateSend", "Outbox",
           "SnapshotDiff", "Store"]  # fmt: skip
# Loaded on first use (PEP 562): a submodule (the schema version, whom a store holds) imports
# without Store, sqlite-utils and the pandas they load.
_HOMES = {"LIST_NAMES": "lists", "OPERATIONS": "lists", "Outbox": "outbox",
          "SCHEMA_VERSION": "schema", "SnapshotDiff": "core", "Store": "core"}  # fmt: skip


def __getattr__(name: str) -> typing.Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
