"""`workbench bundle`: reads the database only, prints the zip's path, clean exit codes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

from .conftest import Worked, members, plant


@pytest.fixture
def no_settings(monkeypatch, tmp_path):
    """No WORKBENCH_* variable and no workbench.toml: the default (sandbox) profile."""
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, ["bundle", *args], env=env)


def test_ok_prints_the_path_and_contacts_nobody(worked: Worked, tmp_path, no_settings):
    sb = worked.sb
    hits, tokens = sb.hits.copy(), dict(sb.token_requests)
    out = tmp_path / "out"
    result = _invoke(worked.request_id, "--db", worked.w.db, "--out", str(out))
    assert result.exit_code == 0, result.output
    path = Path(result.stdout.strip())
    assert path.parent == out and path.is_file()
    assert "calls.har" in members(path)
    assert sb.hits == hits and sb.token_requests == tokens


def test_the_profiles_secrets_are_masked(worked: Worked, tmp_path, no_settings):
    secret = worked.sb.credentials.supplier_client_secret
    plant(Path(worked.w.db), worked.request_id, status=400, response_body=f"echo: {secret}!")
    env = {**worked.sb.env, "WORKBENCH_DB": worked.w.db}  # a configured profile: "env"
    result = _invoke(worked.request_id, "--out", str(tmp_path), "--redact-personal", env=env)
    assert result.exit_code == 0, result.output
    files = members(Path(result.stdout.strip()))
    assert not [n for n, v in files.items() if secret.encode() in v]
    har = json.loads(files["calls.har"])
    assert any(
        e["response"]["content"]["text"] == "echo: [REDACTED]!" for e in har["log"]["entries"]
    )
    assert "personal data masked" in har["log"]["comment"]


def test_an_unknown_id_exits_1_with_a_message(worked: Worked, tmp_path, no_settings):
    result = _invoke("0123456789abcdef", "--db", worked.w.db, "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "holds nothing about '0123456789abcdef'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_missing_database_exits_1_without_creating_it(tmp_path, no_settings):
    result = _invoke("R-1", "--db", str(tmp_path / "none.db"))
    assert result.exit_code == 1
    assert "No workbench database at" in result.output and "workbench pull" in result.output
    assert not (tmp_path / "none.db").exists()


def test_a_configuration_error_exits_2(tmp_path, no_settings):
    result = _invoke("R-1", "--profile", "nope", "--db", str(tmp_path / "x.db"))
    assert result.exit_code == 2
    assert "Configuration error" in result.output and "'nope' is not defined" in result.output
