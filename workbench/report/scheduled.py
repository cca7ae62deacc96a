"""Jupyter Scheduler jobs run as ``workbench report`` runs a notebook (:func:`run_notebook`):
parameters typed as text, our HTML, a one-line failure. Start JupyterLab with
``--Scheduler.execution_manager_class=workbench.report.scheduled.ReportJobs``."""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from jupyter_scheduler.executors import DefaultExecutionManager

from workbench.errors import NotebookFailed
from workbench.report.runner import run_notebook


def literal(text: str) -> Any:
    """A parameter as typed in the job's form: a Python literal, else the text itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


class ReportJobs(DefaultExecutionManager):  # type: ignore[misc]
    """The job's kernel starts in its staging folder, this Python over Unix sockets; a failed
    job's message names the cell, its line and the error (the partial outputs are kept)."""

    def execute(self) -> None:
        source = Path(self.staging_paths["input"])
        os.chdir(source.parent)  # this process runs one job: where the default one runs it
        parameters = {k: literal(v) for k, v in (self.model.parameters or {}).items()}
        with tempfile.TemporaryDirectory(prefix="workbench-job-") as out:
            try:
                run = run_notebook(source.stem, parameters, notebooks_dir=source.parent,
                                   output_dir=out)  # fmt: skip
                self._keep(run.ipynb_path, run.html_path)
            except NotebookFailed as exc:
                self._keep(exc.ipynb_path, exc.html_path)
                raise

    def _keep(self, ipynb: Path | None, html: Path | None) -> None:
        for form, path in (("ipynb", ipynb), ("html", html)):
            if path is not None and path.exists() and form in self.staging_paths:
                shutil.move(path, self.staging_paths[form])
