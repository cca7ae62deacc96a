"""``workbench.report`` loads its names on first use: the process that runs a report job (the
CLI) loads no pandas or matplotlib, which only the notebook's kernel draws with; every public
name still resolves, and a function never turns into a module of the same name."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import workbench.report.job, workbench.report.deliver, workbench.report.runner
job_modules = sorted(sys.modules)
from workbench import report
import workbench.report.history, workbench.report.staleness
shadowed = {n: type(getattr(report, n)).__name__ for n in ("trends", "changes", "freshness")}
missing = [n for n in report.__all__ if not hasattr(report, n)]
where = {n: getattr(getattr(report, n), "__module__", "workbench") for n in report.__all__}
foreign = [n for n, module in where.items() if not module.startswith("workbench")]
print(json.dumps({"job": job_modules, "shadowed": shadowed, "missing": missing,
                  "foreign": foreign, "dir": sorted(set(report.__all__) - set(dir(report))),
                  "submodule": report.validation.__name__, "all": sorted(sys.modules),
                  "absent": hasattr(report, "no_such_name")}))
"""


def test_a_report_job_loads_no_pandas_and_every_name_resolves() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    job = set(found["job"])
    assert not [m for m in job if m.split(".")[0] in ("matplotlib", "pandas")]
    assert "workbench.report.charts" not in job and "workbench.pull" not in job
    assert found["shadowed"] == dict.fromkeys(("trends", "changes", "freshness"), "function")
    assert found["missing"] == [] and found["foreign"] == [] and found["dir"] == []
    assert found["submodule"] == "workbench.report.validation"
    assert found["absent"] is False
    assert "matplotlib" in found["all"]  # the charts loaded it when asked for


KERNEL = """
import json, sys
import workbench as wb
from workbench import reconcile, report
from workbench.store import Store
with Store(sys.argv[1], read_only=True) as store:
    report.freshness(store)
print(json.dumps(sorted(sys.modules)))
"""


def test_a_report_kernel_loads_no_http_client(tmp_path) -> None:
    """What a report's kernel imports to read a store: no httpx, httpcore or tenacity, which
    only calls to the partner need (their import is time every report pays, bench/report.py)."""
    from workbench.store import Store

    db = tmp_path / "workbench.db"
    Store(db).close()
    done = subprocess.run(
        [sys.executable, "-c", KERNEL, str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = {m.split(".")[0] for m in json.loads(done.stdout)}
    assert loaded.isdisjoint({"httpx", "httpcore", "tenacity"})
