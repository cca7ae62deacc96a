"""Opening a store for reading, in a notebook or a report: never an empty one by accident."""

from __future__ import annotations

import os
from pathlib import Path

from workbench.config import load_profile
from workbench.errors import StoreError
from workbench.store import Store


def open_store(db: str | os.PathLike[str] | None = None, *, profile: str | None = None) -> Store:
    """The store at ``db`` (default: the database of ``profile``: ``WORKBENCH_DB``, the
    profiles file, else ``data/workbench.db``).

    ``StoreError`` when there is no database there: opening a ``Store`` would silently create
    an empty one, and a report on it would say that nothing is wrong.
    It is opened read-only: a report only reads.

    >>> store = open_store("data/workbench.db")  # doctest: +SKIP
    """
    path = Path(db if db is not None else load_profile(profile).db)
    if not path.is_file():
        raise StoreError(
            f"No workbench database at {path}; run `workbench pull` first (or pass db=...)."
        )
    return Store(path, read_only=True)  # creates nothing next to it; works in any folder
