"""The package's shape: layers import only downwards, no import cycles, nothing imports the root.

The layers are drawn in docs/design.md §2; this test is what keeps the drawing true.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "workbench"

# Lowest first. A module may import its own layer and the ones above it in this list, never below.
LAYERS: list[set[str]] = [
    {"_version", "spec", "errors", "folders", "severities"},
    {"config"},
    {"pesc", "http"},
    {"store", "sandbox"},
    {"api", "reconcile", "scenario"},
    {"storing"},
    {"pull"},
    {"client", "bundle"},
    {"report", "explorer", "export"},
    {"cli"},
]
# The sandbox is an independent implementation of the spec: it shares only the spec's constants,
# PESC parsing and builders (with their error) and the version (DESIGN §2).
SANDBOX_MAY_IMPORT = {"spec", "pesc", "errors", "_version"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str) -> Iterator[str]:
    """Every workbench module ``module`` imports, inside functions too (not for type checks)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(nodes: list[ast.stmt]) -> Iterator[str]:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                yield from (alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    yield submodule if submodule in MODULES else base
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(node, field, None)
                    if isinstance(block, list):
                        yield from walk(block)

    for name in walk(ast.parse(path.read_text()).body):
        if name == "workbench" or name.startswith("workbench."):
            while name not in MODULES:
                name = name.rpartition(".")[0]
            if name != module:
                yield name


def _unit(module: str) -> str:
    return module.split(".")[1] if "." in module else "workbench"


def _rank(unit: str) -> int:
    ranks = [n for n, layer in enumerate(LAYERS) if unit in layer]
    assert ranks, f"{unit} is in no layer: add it to LAYERS and to docs/design.md §2"
    return ranks[0]


EDGES = {module: set(_imports(module)) for module in MODULES}


def test_every_unit_has_a_layer() -> None:
    units = {_unit(m) for m in MODULES} - {"workbench"}
    assert units <= set().union(*LAYERS), "add new modules to LAYERS and to docs/design.md §2"


def test_no_module_imports_the_package_root() -> None:
    offenders = {
        m for m, edges in EDGES.items() if m != "workbench" and any(t == "workbench" for t in edges)
    }
    assert not offenders, "import what you need from its own module (e.g. workbench._version)"


def test_no_import_cycles() -> None:
    """Imports inside functions count: a cycle that only runs later is a cycle all the same."""
    graph = {m: set(edges) for m, edges in EDGES.items()}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as cycle:
        pytest.fail(f"import cycle: {' -> '.join(cycle.args[1])}")


def test_layers_import_only_downwards() -> None:
    upward = sorted(
        f"{m} imports {t}"
        for m, edges in EDGES.items()
        for t in edges
        if m != "workbench" and t != "workbench" and _rank(_unit(t)) > _rank(_unit(m))
    )
    assert not upward, "\n".join(upward)


def test_the_sandbox_shares_only_the_spec_and_pesc() -> None:
    shared = {_unit(t) for m, edges in EDGES.items() if _unit(m) == "sandbox" for t in edges}
    assert shared - {"sandbox"} <= SANDBOX_MAY_IMPORT
