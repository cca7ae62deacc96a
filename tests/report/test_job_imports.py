"""``workbench report`` loads no pandas in its own process: it checks the store with sqlite3
and decides its exit code (``--max-age`` included) from the summary the notebook published;
only the notebook's kernel, another process, reads the store with pandas."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_the_report_command_imports_no_pandas(report_copy: Path, tmp_path: Path) -> None:
    command = [sys.executable, "-X", "importtime", "-m", "workbench.cli", "report", "--no-pull",
               "--db", str(report_copy), "--output-dir", str(tmp_path / "reports"),
               "--max-age", "10000"]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    imported = {
        line.rpartition("|")[2].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"workbench.report.job", "workbench.report.staleness"} <= imported  # it was seen
    # numpy may come with papermill (it imports pyarrow.fs when pyarrow is installed)
    assert not {m for m in imported if m.partition(".")[0] == "pandas"}
    assert Path(done.stdout.splitlines()[-1]).is_file()  # the HTML, written by the kernel
