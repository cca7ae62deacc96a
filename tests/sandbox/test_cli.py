"""`workbench sandbox` as a user runs it: prints URLs and credentials, serves, stops on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandbox.helpers import pending_from_env, start_cli, stop_cli
from workbench.sandbox import SandboxSettings

pytestmark = pytest.mark.slow


def test_serves_until_ctrl_c_and_prints_what_a_client_needs(tmp_path: Path):
    proc, env = start_cli("--seed", "3")
    try:
        for name in (
            "WORKBENCH_AUTH_URL",
            "WORKBENCH_GATEWAY_URL",
            "WORKBENCH_EXCHANGE_URL",
            "WORKBENCH_SUPPLIER_CLIENT_SECRET",
            "WORKBENCH_SUBSCRIPTION_KEY",
        ):
            assert env.get(name), name
        listing = pending_from_env(env)
        assert len(listing.json()) == SandboxSettings().initial_requests
    finally:
        out, err = stop_cli(proc)
    assert proc.returncode == 0, err
    assert "Stopping the sandbox" in out
    assert "Traceback" not in err


def test_ctrl_c_stops_a_sandbox_started_as_a_background_job():
    # `workbench sandbox &` in a script (or a CI runner) starts with SIGINT ignored.
    proc, _ = start_cli(background=True)
    out, err = stop_cli(proc)
    assert proc.returncode == 0, err
    assert "Stopping the sandbox." in out


def test_sigterm_stops_cleanly_and_keeps_state(tmp_path: Path):
    state = tmp_path / "state.json"
    proc, _ = start_cli("--state", str(state))
    _, err = stop_cli(proc, signal.SIGTERM)
    assert proc.returncode == 0, err
    assert state.exists()


def test_busy_port_is_a_clear_usage_error():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "workbench.cli", "sandbox", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 2
    assert "Try --port 0" in result.stderr


def test_serves_with_the_faults_it_is_given():
    proc, env = start_cli("--fault", "rate_limit_rate=1", "--fault", "retry_after_s=7")
    try:
        listing = pending_from_env(env)
        assert (listing.status_code, listing.headers["Retry-After"]) == (429, "7")
    finally:
        stop_cli(proc)
    assert proc.returncode == 0
