"""The snapshot store: runs, calls, list snapshots, documents, events and the outbox in one
SQLite file. See :class:`Store`."""

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
# Loaded on first use: a submodule imports without Store, sqlite-utils and pandas.
_HOMES = {"LIST_NAMES": "lists", "OPERATIONS": "lists", "Outbox": "outbox",
          "SCHEMA_VERSION": "schema", "SnapshotDiff": "core", "Store": "core"}  # fmt: skip


def __getattr__(name: str) -> typing.Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
