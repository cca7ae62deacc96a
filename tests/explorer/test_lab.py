"""The headless JupyterLab of the browser tests starts on a shared machine: when another
process holds its port, it starts again on another one (no Chromium needed here)."""

from __future__ import annotations

import shutil
import socket
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from tests.browser.conftest import PORT_TAKEN, lab_folder, start_lab, stop_lab


@pytest.mark.slow
def test_a_taken_port_makes_the_lab_start_on_another(tmp_path: Path) -> None:
    root, env, runtime = lab_folder(tmp_path)
    log = tmp_path / "jupyterlab.log"
    with closing(socket.socket()) as holder:  # another process's server on that port
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = int(holder.getsockname()[1])
        try:
            process, lab = start_lab(root, env, runtime, log, ports=[taken])
            try:
                assert lab.url != f"http://127.0.0.1:{taken}"
                status = httpx.get(
                    f"{lab.url}/api/status",
                    headers={"Authorization": f"token {lab.token}"},
                    timeout=5,
                )
                assert status.status_code == 200
            finally:
                stop_lab(process, lab, runtime)
        finally:
            shutil.rmtree(runtime, ignore_errors=True)
    assert f"port {taken} {PORT_TAKEN}" in log.read_text(errors="replace")
    assert process.poll() is not None  # stopped
