"""Installs are reproducible: ``uv.lock`` is current with ``pyproject.toml``, pins every package,
and the Makefile (hence CI) installs from it exactly, with a pinned uv."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent


def _declared() -> set[tuple[str, str | None, SpecifierSet]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    groups = {None: project["dependencies"], **project["optional-dependencies"]}
    return {
        (Requirement(line).name.lower(), extra, Requirement(line).specifier)
        for extra, lines in groups.items()
        for line in lines
    }


def _locked() -> tuple[set[tuple[str, str | None, SpecifierSet]], list[dict]]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    ours = next(p for p in lock["package"] if p["name"] == "workbench")
    recorded = set()
    for req in ours["metadata"]["requires-dist"]:
        extra = re.search(r"extra == '([^']+)'", req.get("marker", ""))
        spec = SpecifierSet(req.get("specifier", ""))
        recorded.add((req["name"].lower(), extra and extra.group(1), spec))
    return recorded, lock["package"]


def test_the_lock_file_was_made_from_todays_pyproject() -> None:
    recorded, _ = _locked()
    declared = _declared()
    assert declared == recorded, (
        f"pyproject.toml and uv.lock disagree: only declared {declared - recorded}, only locked "
        f"{recorded - declared}. Run `make lock` (or `uv lock`) and commit uv.lock."
    )


def test_every_locked_package_has_one_version_from_a_registry() -> None:
    _, packages = _locked()
    assert len(packages) > 50  # the whole environment, not just our direct dependencies
    others = [p for p in packages if p["name"] != "workbench"]
    assert all(p.get("version") and "registry" in p.get("source", {}) for p in others), [
        p["name"] for p in others if not p.get("version") or "registry" not in p.get("source", {})
    ]


def test_make_installs_from_the_lock_exactly_with_a_pinned_uv() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^UV_VERSION := \d+\.\d+\.\d+$", makefile, re.M)
    assert "pip install --quiet uv==$(UV_VERSION)" in makefile
    syncs = [line for line in makefile.splitlines() if "uv sync" in line]
    assert syncs and all("--locked" in sync.split() for sync in syncs)  # refuses a stale lock
    assert "pip install --upgrade" not in makefile and "-U " not in makefile
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci and "pip install" not in ci
