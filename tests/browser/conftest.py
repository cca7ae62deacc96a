"""Fixtures of the browser tests: Debian's Chromium driven by Playwright, a populated database,
and a headless JupyterLab on a loopback port.

Chromium is never downloaded (no ``playwright install``): the tests use ``WORKBENCH_CHROMIUM``,
else ``chromium`` on the PATH, else ``/usr/bin/chromium``, and skip saying what to install when
there is none. Every test here is slow.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.explorer.populate import populate

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ENV = "WORKBENCH_CHROMIUM"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
INSTALL_HINT = (
    "install Debian's Chromium (`apt-get install chromium`, as root) or set "
    f"{CHROMIUM_ENV} to a Chromium binary; never `playwright install`"
)
LAB_START_S = 90.0  # JupyterLab answers in 10-20 s on a 2-core machine; leave room
# A free port may be taken by another process before the server binds it (a shared CI
# machine): the server then exits saying so, and starts again on another port, this often.
LAB_START_ATTEMPTS = 3
PORT_TAKEN = "is already in use"


def find_chromium() -> tuple[str | None, str]:
    """(the Chromium binary, or None; where it was looked for)."""
    chosen = os.environ.get(CHROMIUM_ENV)
    if chosen:
        found = shutil.which(chosen)
        return found, f"{CHROMIUM_ENV}={chosen}"
    found = shutil.which("chromium") or shutil.which("/usr/bin/chromium")
    return found, "`chromium` on the PATH and /usr/bin/chromium"


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path, looked = find_chromium()
    if path is None:
        pytest.skip(f"No Chromium found ({looked}): {INSTALL_HINT}.")
    pytest.importorskip(
        "playwright.sync_api",
        reason="Playwright's Python package is missing: pip install -e '.[dev]' "
        "(its own browser download is not needed)",
    )
    return path


@contextmanager
def chromium(path: str) -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed at the end of the block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """``tests/artifacts/``: screenshots kept after the run (git-ignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def browser_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with two pulls around a realistic mix of sends."""
    path = tmp_path_factory.mktemp("browser") / "workbench.db"
    populate(path)
    return path


# -- JupyterLab ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _quiet_lab_settings(config_dir: Path) -> None:
    """User settings that keep the front end off the network: no news, no update check."""
    folder = config_dir / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    folder.mkdir(parents=True, exist_ok=True)
    notification = {"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True}
    (folder / "notification.jupyterlab-settings").write_text(json.dumps(notification))


def _lab_env(home: Path, runtime: Path) -> dict[str, str]:
    """The environment of the server: nothing of the user's Jupyter or workbench settings.
    ``runtime`` holds the kernels' Unix sockets: keep its path short (108 bytes at most)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("WORKBENCH_", "JUPYTER_", "IPYTHON", "PYTHONPATH"))
    }
    for name, sub in (
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("IPYTHONDIR", "ipython"),
        ("MPLCONFIGDIR", "matplotlib"),
    ):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    env["JUPYTER_RUNTIME_DIR"] = str(runtime)
    env["HOME"] = str(home)
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    return env


def _lab_command(port: int, token: str, root: Path) -> list[str]:
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--KernelManager.transport=ipc",  # kernel channels on Unix sockets, not loopback TCP
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--LabApp.expose_app_in_browser=True",  # lets the test run cells by command
    ]  # fmt: skip
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    return command


def _wait_until_up(process: subprocess.Popen[bytes], lab: Lab) -> bool:
    """True once the server answers; False when it exited first; a failure after
    ``LAB_START_S``."""
    deadline = time.monotonic() + LAB_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with suppress(httpx.HTTPError):
            answer = httpx.get(
                f"{lab.url}/api/status",
                headers={"Authorization": f"token {lab.token}"},
                timeout=2,
            )
            if answer.status_code == 200:
                return True
        time.sleep(0.25)
    pytest.fail(f"JupyterLab did not answer /api/status in {LAB_START_S:.0f} s:\n{lab.log_tail()}")


def _kernels_of(runtime: Path) -> list[int]:
    """Processes whose command line names a connection file in our runtime folder (kernels
    run in their own session, so killing the server's group does not reach them)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with suppress(OSError):
            if str(runtime).encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
    return found


def stop_lab(process: subprocess.Popen[bytes], lab: Lab, runtime: Path) -> None:
    with suppress(httpx.HTTPError):  # a clean shutdown stops the kernels too
        httpx.post(
            f"{lab.url}/api/shutdown", headers={"Authorization": f"token {lab.token}"}, timeout=5
        )
    with suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        if process.poll() is not None:
            break
        with suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=wait_s)
    for pid in _kernels_of(runtime):
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_lab(
    root: Path, env: dict[str, str], runtime: Path, log: Path, *, ports: Iterable[int] = ()
) -> tuple[subprocess.Popen[bytes], Lab]:
    """JupyterLab serving ``root`` on a loopback port (from ``ports``, then free ones), once it
    answers. When another process took the port first, it starts again on the next one, at
    most ``LAB_START_ATTEMPTS`` times; every attempt's output is appended to ``log``."""
    token = secrets.token_hex(16)
    chosen = iter(ports)
    for attempt in range(1, LAB_START_ATTEMPTS + 1):
        port = next(chosen, None) or free_port()
        lab = Lab(f"http://127.0.0.1:{port}", token, root, log)
        with log.open("ab") as out:
            process = subprocess.Popen(
                _lab_command(port, token, root),
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed as one at teardown
            )
        try:
            up = _wait_until_up(process, lab)
        except BaseException:
            stop_lab(process, lab, runtime)
            raise
        if up:
            return process, lab
        taken = f"port {port} {PORT_TAKEN}" in lab.log_tail(lines=20)
        if not taken or attempt == LAB_START_ATTEMPTS:
            pytest.fail(
                f"JupyterLab exited with {process.returncode} (attempt {attempt} of "
                f"{LAB_START_ATTEMPTS}):\n{lab.log_tail()}"
            )
    raise AssertionError("unreachable: the last attempt returns or fails")  # pragma: no cover


def lab_folder(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """(the folder to serve, the server's environment, its short runtime folder: remove it
    after the server stopped)."""
    root, home = tmp_path / "lab", tmp_path / "home"
    root.mkdir(parents=True, exist_ok=True)
    runtime = Path(tempfile.mkdtemp(prefix="wb-lab-"))  # short: socket paths are limited
    env = _lab_env(home, runtime)
    _quiet_lab_settings(Path(env["JUPYTER_CONFIG_DIR"]))
    return root, env, runtime


@pytest.fixture
def jupyter_lab(tmp_path: Path, browser_db: Path) -> Iterator[Lab]:
    """JupyterLab on a free loopback port, serving a folder with ``explore.ipynb`` and the
    database at ``data/workbench.db`` (where the notebook's default, the profile's database,
    is found from the kernel's folder when WORKBENCH_DB is unset)."""
    root, env, runtime = lab_folder(tmp_path)
    (root / "data").mkdir()
    shutil.copy(ROOT / "notebooks" / "explore.ipynb", root / "explore.ipynb")
    with (
        closing(sqlite3.connect(browser_db)) as source,
        closing(sqlite3.connect(root / "data" / "workbench.db")) as target,
    ):
        source.backup(target)
    try:
        process, lab = start_lab(root, env, runtime, tmp_path / "jupyterlab.log")
        try:
            yield lab
        finally:
            stop_lab(process, lab, runtime)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
