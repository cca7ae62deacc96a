"""What a notebook defines for itself (its code cells tagged ``functions``), for tests to call
as the notebook's kernel does."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@functools.cache
def notebook_code(name: str) -> SimpleNamespace:
    """The names ``notebooks/<name>.ipynb`` defines in its ``functions`` cells."""
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    namespace: dict[str, object] = {"__name__": f"notebook_{name}"}
    for cell in nb.cells:
        if "functions" in cell.metadata.get("tags", []):
            exec(compile(cell.source, str(NOTEBOOKS / f"{name}.ipynb"), "exec"), namespace)  # noqa: S102
    return SimpleNamespace(**namespace)
