"""The snapshot store: runs, calls, list snapshots, documents, events and the outbox in one
SQLite file. See :class:`Store`."""

from workbench.errors import DuplicateSend
from workbench.store.core import SnapshotDiff, Store
from workbench.store.lists import LIST_NAMES, OPERATIONS
from workbench.store.outbox import Outbox
from workbench.store.schema import SCHEMA_VERSION

__all__ = ["LIST_NAMES", "OPERATIONS", "SCHEMA_VERSION", "DuplicateSend", "Outbox",
           "SnapshotDiff", "Store"]  # fmt: skip
