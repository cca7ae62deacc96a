"""The package behaves the same with and without pyarrow installed.

The dev install has pyarrow (for `workbench export --format parquet`), and with it pandas 3
stores inferred text in pyarrow; a core install has none, and pandas stores it in Python
objects. The suite runs with pyarrow; this test reruns the reconciliation and the report's
sections in a child process where pyarrow cannot be imported, so both storages stay covered.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_reconciliation_and_the_report_sections_pass_without_pyarrow(tmp_path: Path) -> None:
    hidden = tmp_path / "hide" / "pyarrow"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("pyarrow is hidden by this test")\n')
    probe = "import pandas as pd; print(pd.Series(['a']).dtype.storage)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden.parent), str(ROOT)])}
    storage = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert storage.stdout.strip() == "python"
    tests = ["tests/reconcile", "tests/report/test_sections.py", "tests/report/test_figures.py"]
    options = ["-q", "-x", "-p", "no:cacheprovider", "-n", "0", "-m", "not slow"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *options, *tests],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
