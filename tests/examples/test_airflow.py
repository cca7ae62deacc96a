"""examples/airflow/: the DAG run by a real Airflow, installed in its own environment (never a
dependency of the workbench), with `airflow dags test` against sandbox colleges."""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.sandbox import Sandbox
from workbench.store import Store

AIRFLOW = "3.3.2"
# uv resolves Airflow's dependencies as they stood that day: the same environment on every
# machine, without the constraint file Airflow publishes (CI reaches package registries only).
RESOLVED_AS_OF = "2026-11-27T00:00:00Z"
DAG = Path(__file__).resolve().parents[2] / "examples" / "airflow" / "workbench_colleges.py"
SECRET_KEYS = ("SECRET", "PASSWORD", "SUBSCRIPTION_KEY")
ROLES = ("intl", "domestic", "supplier", "consumer")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def airflow_env_dir() -> Path:
    """Airflow's own environment, installed once per machine and reused."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return cache / "workbench-tests" / f"airflow-{AIRFLOW}-py{version}"


@pytest.fixture(scope="session")
def airflow() -> Path:
    """The ``airflow`` executable; installed with uv on first use (``install.log`` says how
    long that took). A lock keeps two test runs from installing it at once."""
    venv = airflow_env_dir()
    venv.parent.mkdir(parents=True, exist_ok=True)
    done, wanted = venv / "installed", f"apache-airflow=={AIRFLOW} as of {RESOLVED_AS_OF}\n"
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists() or done.read_text() != wanted:
            shutil.rmtree(venv, ignore_errors=True)  # half made (interrupted), or another pin
            uv = [sys.executable, "-m", "uv"]  # the dev environment's (the Makefile installs it)
            started = time.monotonic()
            subprocess.run([*uv, "venv", "--quiet", "--python", sys.executable, venv], check=True)
            subprocess.run(
                [*uv, "pip", "install", "--quiet", "--python", venv / "bin" / "python",
                 "--exclude-newer", RESOLVED_AS_OF, f"apache-airflow=={AIRFLOW}"],
                check=True,
            )  # fmt: skip
            seconds = time.monotonic() - started
            (venv / "install.log").write_text(f"{wanted.strip()}: installed in {seconds:.0f} s\n")
            done.write_text(wanted)
    return venv / "bin" / "airflow"


def write_profiles(path: Path, colleges: dict[str, Sandbox]) -> dict[str, str]:
    """A profiles file with one profile per college, each on its own sandbox, in its own folder;
    returns the variables holding their secrets, which the file names."""
    lines, secrets = [], {}
    for name, sb in colleges.items():
        sections: dict[str, list[str]] = {"": [f'db = "{name}/workbench.db"']}
        for key, value in sb.env.items():
            setting = key.removeprefix("WORKBENCH_").lower()
            role, _, rest = setting.partition("_")
            role, setting = (role, rest) if role in ROLES else ("", setting)
            if any(word in key for word in SECRET_KEYS):
                secrets[variable := f"{name}_{key}".upper()] = value
                sections.setdefault(role, []).append(f'{setting}_env = "{variable}"')
            else:
                sections.setdefault(role, []).append(f'{setting} = "{value}"')
        for role, settings in sections.items():
            lines += [f"[profiles.{name}{'.' + role if role else ''}]", *settings]
    path.write_text("\n".join(lines) + "\n")
    return secrets


def test_the_dag_pulls_then_reports_each_college_and_passes_no_secret(
    airflow: Path, sandbox_factory: Callable[..., Sandbox], tmp_path: Path
) -> None:
    """Three colleges: a clean one; one whose report finds exceptions (exit 3: the task still
    succeeds); one whose secret is unset (exit 2: failed at once, never retried, and the
    others go on)."""
    colleges = {"college_a": sandbox_factory(), "college_b": sandbox_factory(malformed_share=0.3)}
    config = tmp_path / "colleges" / "workbench.toml"
    config.parent.mkdir()
    secrets = write_profiles(config, colleges)
    with config.open("a") as f:
        f.write('[profiles.college_c.supplier]\nclient_id = "c"\nclient_secret_env = "UNSET"\n')
    home, dags = tmp_path / "airflow", tmp_path / "dags"
    dags.mkdir()
    shutil.copy(DAG, dags)
    workbench = Path(sys.executable).parent / "workbench"
    assert workbench.exists(), "the workbench console script, beside this Python"
    # Nothing of the workbench reaches Airflow's Python: not even a PYTHONPATH to its checkout
    leave_out = ("WORKBENCH_", "AIRFLOW", "PYTHONPATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(leave_out)}
    env |= {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW_VAR_WORKBENCH_COMMAND": str(workbench),
        "AIRFLOW_VAR_WORKBENCH_PROFILES": "college_a, college_b,college_c",
        "WORKBENCH_CONFIG": str(config),
        **secrets,
    }

    def airflow_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [airflow, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1500
        )

    migrated = airflow_run("db", "migrate")
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    done = airflow_run("dags", "test", "workbench_colleges")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-6000:]  # the run failed: college_c did
    with sqlite3.connect(home / "airflow.db") as db:
        tasks = db.execute(
            "SELECT task_id, rendered_map_index, state, try_number FROM task_instance "
            "WHERE map_index >= 0"
        ).fetchall()
        xcom = db.execute("SELECT count(*) FROM xcom").fetchone()[0]
        rendered = db.execute("SELECT count(*) FROM rendered_task_instance_fields").fetchone()[0]
    assert sorted(tasks) == [
        ("college.pull", "college_a", "success", 1),
        ("college.pull", "college_b", "success", 1),
        ("college.pull", "college_c", "failed", 1),
        ("college.report", "college_a", "success", 1),
        ("college.report", "college_b", "success", 1),
        ("college.report", "college_c", "failed", 1),
    ]
    assert "The report of college_b holds exceptions at high severity or worse." in output
    assert "college_c exited 2" in output

    for name, sb in colleges.items():
        with Store(config.parent / name / "workbench.db", read_only=True) as store:
            runs = store.db.execute("SELECT kind, status FROM runs").fetchall()
            assert runs == [("pull", "ok")], name
            assert store.db.execute("SELECT count(*) FROM outbox").fetchone() == (0,)
        assert len(list((config.parent / name / "reports").glob(f"reconcile-{name}-*.html"))) == 1
        assert sb.received == [], f"{name}: the sandbox received a send"
        assert sb.issued_tokens, name

    assert xcom and rendered  # what is searched below holds something
    searched = {"the output of airflow dags test": output}
    for path in home.rglob("*"):  # the metadata database (XCom, rendered fields...), the logs
        if path.is_file():
            searched[str(path)] = path.read_bytes().decode("utf-8", "replace")
    issued = [token for sb in colleges.values() for token in sb.issued_tokens]
    leaked = [
        (where, secret[:4] + "...")
        for secret in [*secrets.values(), *issued]
        for where, text in searched.items()
        if secret in text
    ]
    assert leaked == []
