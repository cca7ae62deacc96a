"""The ipywidgets explorer: browse a workbench database's tables, views and list snapshots,
open a request's PESC documents with their validation, and compare two pull runs.

>>> from workbench.explorer import Explorer
>>> Explorer.open("data/workbench.db")  # doctest: +SKIP

Modules: ``query`` (what it reads from the store), ``render`` (escaped HTML), ``widget`` (the
widgets and their wiring).
"""

from __future__ import annotations

from workbench.explorer.widget import Explorer

__all__ = ["Explorer"]
