"""``workbench report`` loads neither pandas nor matplotlib in its own process unless its
verdict needs the store's figures (``--max-age``, ``--fail-on-exceptions``, a delivery): the
notebook's kernel, another process, draws the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _imported(report_copy: Path, tmp_path: Path, *options: str) -> set[str]:
    out = str(tmp_path / "reports")
    command = [sys.executable, "-X", "importtime", "-m", "workbench.cli", "report", "--no-pull",
               "--db", str(report_copy), "--output-dir", out, *options]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.splitlines()[-1]).is_file()  # the HTML, written by the kernel
    return {
        line.rpartition("|")[2].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.mark.slow
def test_the_report_command_imports_no_pandas_unless_its_verdict_reads_the_store(
    report_copy: Path, tmp_path: Path
) -> None:
    plain = _imported(report_copy, tmp_path)
    assert "workbench.report.job" in plain  # it was seen
    # numpy may come with papermill (it imports pyarrow.fs when pyarrow is installed)
    assert not {m for m in plain if m.partition(".")[0] in ("pandas", "matplotlib")}
    judged = _imported(report_copy, tmp_path, "--max-age", "10000")
    assert {"pandas", "workbench.reconcile"} <= judged
    assert not {m for m in judged if m.partition(".")[0] == "matplotlib"}
