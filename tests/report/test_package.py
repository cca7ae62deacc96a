"""The public face of ``workbench.report``, and the notebooks as stored: the ``.ipynb`` files
are the source (edited in JupyterLab), kept thin and with their outputs cleared."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from workbench import report

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))


def test_all_is_sorted_and_complete() -> None:
    assert report.__all__ == sorted(report.__all__, key=lambda n: (not n[0].isupper(), n))
    for name in report.__all__:
        assert hasattr(report, name), name
    contract = {"open_store", "funnel_chart", "ageing_chart", "daily_volumes_chart",
                "headline_section", "exceptions_section", "organisations_section",
                "changes_section", "figure_html", "freshness", "trends"}  # fmt: skip
    assert contract <= set(report.__all__)


@pytest.mark.slow
def test_importing_the_package_imports_no_runner_and_no_pyplot() -> None:
    code = (
        "import sys, workbench.report\n"
        "print(sorted(m for m in ('workbench.report.runner', 'matplotlib.pyplot', 'pandas') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_notebooks_are_the_five_of_the_readme() -> None:
    assert NOTEBOOKS == ["consortium", "events", "explore", "reconcile", "troubleshoot"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_are_thin_and_clean(name: str) -> None:
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert tagged == [code[0]]  # one parameters cell, the first code cell
    assert all(c.outputs == [] and c.execution_count is None for c in code), "clear outputs"
    assert all(not c.metadata.get("execution") for c in code), "clear outputs (and timings)"
    names = [line.split("=")[0].strip() for line in code[0].source.splitlines()]
    assert "db" in names or "stores" in names  # the consortium reads several
    for word in ("secret", "password", "token", "key", "credential"):
        assert not any(word in n.lower() for n in names), "credentials are never parameters"
    # what the notebook alone shows it defines in cells tagged functions, the rest is short
    defining = [c for c in code if "functions" in c.metadata.get("tags", [])]
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign)
    assert all(isinstance(s, kinds) for c in defining for s in ast.parse(c.source).body)
    shown = [c for c in code if c not in defining]
    assert all(len(c.source.splitlines()) <= 12 for c in shown), "definitions go in functions"
