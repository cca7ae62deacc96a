"""notebooks/explore.ipynb: thin, clean in git, and it runs under papermill on a real kernel
(this Python's, through the report runner: never a ``python3`` kernelspec someone installed)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from workbench.errors import NotebookFailed
from workbench.report.runner import run_notebook

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "explore.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_the_notebook_is_thin_and_its_outputs_are_cleared() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert [c.source.split("#")[0].strip() for c in tagged] == ["db = None"]  # the profile's
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert "Explorer.open(db)" in code[-1].source
    assert nb.metadata.kernelspec.name == "python3"


@pytest.mark.slow
def test_the_notebook_runs_under_papermill(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the kernel starts here
    run = run_notebook(
        "explore", {"db": str(db)}, notebooks_dir=NOTEBOOK.parent, output_dir=tmp_path,
        timeout_s=120,
    )  # fmt: skip
    cells = nbformat.read(run.ipynb_path, as_version=4).cells
    shown = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert [o.output_type for o in shown if o.output_type == "error"] == []
    views = [o.data[WIDGET_VIEW] for o in shown if WIDGET_VIEW in o.get("data", {})]
    assert len(views) == 1 and views[0]["model_id"]
    injected = [c for c in cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and json.dumps(str(db)) in injected[0].source


@pytest.mark.slow
def test_a_missing_database_fails_the_notebook_with_the_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "nowhere.db"
    with pytest.raises(NotebookFailed, match="run `workbench pull` first"):
        run_notebook(
            "explore", {"db": str(missing)}, notebooks_dir=NOTEBOOK.parent,
            output_dir=tmp_path / "out", timeout_s=120,
        )  # fmt: skip
    assert not missing.exists()
