"""Jupyter Scheduler jobs run as ``workbench report`` runs a notebook (:func:`run_notebook`):
parameters typed as text, the report's HTML, a one-line failure. JupyterLab takes it with
``--Scheduler.execution_manager_class=workbench.report.scheduled.ReportJobs``."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from jupyter_scheduler.executors import DefaultExecutionManager

from workbench.report.runner import run_notebook


class ReportJobs(DefaultExecutionManager):  # type: ignore[misc]
    """A job's kernel is this Python over Unix sockets, started in the job's staging folder; a
    failed job's message names the cell, its line and the error; partial outputs are kept."""

    def execute(self) -> None:
        source = Path(self.staging_paths["input"])
        os.chdir(source.parent)  # this process runs this one job
        parameters = dict(self.model.parameters or {})  # text, typed as `report -p` types it
        ours = f"{glob.escape(source.stem)}-*"  # what run_notebook names its report
        before = set(source.parent.glob(ours))
        try:  # into the job's staging folder, where what the notebook writes of its own stays
            run_notebook(source.stem, parameters, notebooks_dir=source.parent,
                         output_dir=source.parent)  # fmt: skip
        finally:
            for made in set(source.parent.glob(ours)) - before:  # the .ipynb and .html (0600)
                if made.suffix[1:] in self.staging_paths:
                    shutil.move(made, self.staging_paths[made.suffix[1:]])
