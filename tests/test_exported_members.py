"""The public face: ``workbench.__all__`` is sorted and names exactly what is exported."""

from __future__ import annotations

import workbench


def test_all_is_sorted() -> None:
    assert workbench.__all__ == sorted(workbench.__all__)


def test_all_matches_the_public_names() -> None:
    public = {  # dir(): connect and Workbench load on first use (PEP 562), not at import
        name
        for name in dir(workbench)
        if not name.startswith("_")
        and getattr(getattr(workbench, name), "__module__", "").startswith("workbench")
    }
    assert set(workbench.__all__) - {"__version__"} == public
    for name in workbench.__all__:
        assert hasattr(workbench, name), name


def test_the_design_contract_names_are_exported() -> None:
    for name in ("connect", "Workbench", "WorkbenchError", "AuthError", "ConfigError"):
        assert name in workbench.__all__
