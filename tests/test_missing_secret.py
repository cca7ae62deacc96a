"""A missing secret is a configuration error (issue #11): exit 2, naming the variable, before
any file is created (no database, no data/ folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.sandbox import Sandbox


@pytest.mark.parametrize("command", ["pull", "report", "doctor"])
def test_a_missing_secret_exits_2_and_creates_nothing(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.chdir(tmp_path)
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    env.update(sandbox.env)
    env["WORKBENCH_SUPPLIER_CLIENT_SECRET"] = None  # its client id is still set
    done = CliRunner().invoke(app, [command], env=env)
    assert done.exit_code == 2, done.output
    assert "Configuration error" in done.output
    assert "WORKBENCH_SUPPLIER_CLIENT_SECRET" in done.output
    assert list(tmp_path.iterdir()) == []


def test_a_secret_named_by_the_profiles_file_and_unset_is_named(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workbench.toml").write_text(
        '[profiles.prod]\ndb = "data/prod.db"\n'
        '[profiles.prod.consumer]\nclient_id = "c"\nclient_secret_env = "PROD_CONSUMER_SECRET"\n'
    )
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    env.update(WORKBENCH_EXCHANGE_URL=sandbox.exchange_url, WORKBENCH_AUTH_URL=sandbox.auth_url)
    done = CliRunner().invoke(app, ["pull", "--profile", "prod"], env=env)
    assert done.exit_code == 2, done.output
    assert "PROD_CONSUMER_SECRET" in done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["workbench.toml"]
