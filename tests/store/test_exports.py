"""The store package's public face: an ``__all__`` that names what it exports."""

from __future__ import annotations

import workbench.store as store


def test_all_names_every_public_export_once() -> None:
    public = {n for n in dir(store) if not n.startswith("_")} - {"annotations"}
    modules = {n for n in public if type(getattr(store, n)).__name__ == "module"}
    assert len(store.__all__) == len(set(store.__all__))  # ruff (RUF022) keeps it sorted
    assert set(store.__all__) == public - modules
