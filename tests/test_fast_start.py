"""Fast start: ``workbench --help``, ``--version`` and ``import workbench`` load no heavy module.

Each case runs in a fresh interpreter (this session has pandas loaded already) and reports the
modules it ended with; heavy ones load where a command uses them (``bench/cli.py`` times it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import typer.main

import workbench
import workbench.client
import workbench.pesc
from workbench.cli import app

# What a start must not load: data and plotting stacks, the HTTP client (and its own CLI, which
# pulls in Rich), Rich itself, XML, the store, notebooks and the sandbox's server.
HEAVY = (
    "pandas", "numpy", "matplotlib", "httpx", "httpx._main", "rich", "lxml", "sqlite_utils",
    "papermill", "nbformat", "nbconvert", "starlette", "uvicorn",
)  # fmt: skip
COMMANDS = sorted(typer.main.get_group(app).commands)  # every registered command

CLI_PROBE = """
import json, sys
from workbench.cli import main
out, sys.argv = sys.argv[1], ["workbench", *sys.argv[2:]]
try:
    main()
    code = 0
except SystemExit as exit:
    code = exit.code
with open(out, "w") as file:
    json.dump({"code": code, "modules": sorted(sys.modules)}, file)
"""

IMPORT_PROBE = """
import json, sys
import workbench as wb
from workbench import ConfigError, WorkbenchError
print(json.dumps(sorted(sys.modules)))
"""


def run_cli(tmp_path: Path, *args: str) -> tuple[int, set[str], str]:
    """Run the ``workbench`` entry point in a fresh interpreter: exit code, modules, stdout."""
    out = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, "-c", CLI_PROBE, str(out), *args],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        timeout=60,
    )
    assert out.is_file(), done.stderr
    probe = json.loads(out.read_text())
    return probe["code"], set(probe["modules"]), done.stdout


def heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY or name in HEAVY)


def test_help_lists_every_command_and_loads_nothing_heavy(tmp_path):
    code, modules, stdout = run_cli(tmp_path, "--help")
    assert code == 0
    assert heavy(modules) == []
    assert "workbench.client" not in modules and "workbench.pull" not in modules
    listed = stdout.split("Commands:")[1]
    for command in COMMANDS:
        assert f"\n  {command} " in listed, command
    assert "╭" not in stdout  # Click's plain help, not Rich's boxes


def test_version_prints_the_installed_version_and_loads_nothing_heavy(tmp_path):
    code, modules, stdout = run_cli(tmp_path, "--version")
    assert code == 0
    assert stdout == f"workbench {version('workbench')}\n"
    assert heavy(modules) == []


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_loads_nothing_heavy(tmp_path, command):
    code, modules, stdout = run_cli(tmp_path, command, "--help")
    assert code == 0
    assert stdout.startswith(f"Usage: workbench {command} [OPTIONS]")
    assert heavy(modules) == []


def test_a_usage_error_exits_2_without_loading_anything_heavy(tmp_path):
    code, modules, _ = run_cli(tmp_path, "pull", "--no-such-option")
    assert code == 2
    assert heavy(modules) == []


def test_importing_the_package_loads_nothing_heavy():
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert heavy(set(json.loads(done.stdout))) == []


def test_lazy_names_are_the_real_objects():
    assert workbench.connect is workbench.client.connect
    assert workbench.Workbench is workbench.client.Workbench
    assert workbench.__version__ == version("workbench")
    assert workbench.pesc is sys.modules["workbench.pesc"]
    assert {"connect", "Workbench", "__version__"} <= set(dir(workbench))


def test_an_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = workbench.no_such_name
    assert not hasattr(workbench, "__wrapped__")


@pytest.mark.parametrize("args", [("--notify", "not a url"), ("--mail-to", "nobody")])
def test_a_refused_delivery_exits_2_before_papermill_loads(tmp_path, args):
    """A report's delivery options are checked before the notebook machinery (papermill,
    nbformat and its jsonschema: about 2 s) is imported."""
    db = tmp_path / "x.db"
    code, modules, _ = run_cli(tmp_path, "report", "--no-pull", "--db", str(db), *args)
    assert code == 2
    notebooks = ("papermill", "nbformat", "nbconvert", "jsonschema", "jupyter_client")
    assert sorted(m for m in modules if m.split(".")[0] in notebooks) == []
    assert not db.exists()
