"""Interfaces per profile (issue #11): a profile uses the interfaces it has credentials for, or
the list it names (``interfaces = [...]``, ``WORKBENCH_INTERFACES``); ``doctor``, ``pull`` and
``report`` skip the others, say which, and are ok when everything configured succeeded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.config import load_profile
from workbench.errors import ConfigError
from workbench.sandbox import Sandbox


def _exchange_only(sb: Sandbox) -> dict[str, str | None]:
    """The sandbox's variables without the international and domestic credentials; every other
    WORKBENCH_* variable of this process unset."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    gateway = ("WORKBENCH_INTL_", "WORKBENCH_DOMESTIC_")
    kept = {k: v for k, v in sb.env.items() if not k.startswith(gateway)}
    return {**unset, **kept}


def _invoke(*args: str, env: dict[str, str | None]):
    return CliRunner().invoke(app, list(args), env=env)


def test_a_profile_uses_the_interfaces_it_has_credentials_for(sandbox: Sandbox) -> None:
    env = {k: v for k, v in _exchange_only(sandbox).items() if v is not None}
    assert load_profile(env=env).interfaces == ("supplier", "consumer")
    assert load_profile(env=sandbox.env).interfaces == (
        "international", "domestic", "supplier", "consumer",
    )  # fmt: skip


def test_the_interfaces_setting_limits_them(sandbox: Sandbox, tmp_path: Path) -> None:
    env = {**sandbox.env, "WORKBENCH_INTERFACES": "consumer, supplier"}
    assert load_profile(env=env).interfaces == ("supplier", "consumer")
    toml = tmp_path / "wb.toml"
    toml.write_text('[profiles.college]\ninterfaces = ["domestic"]\n')
    assert load_profile("college", env=sandbox.env, config_path=toml).interfaces == ("domestic",)
    with pytest.raises(ConfigError, match=r"WORKBENCH_INTERFACES.*international, domestic"):
        load_profile(env={**sandbox.env, "WORKBENCH_INTERFACES": "supplier,exchange"})
    with wb.connect(env=env, db=tmp_path / "wb.db") as w:
        summary = w.pull(progress=False)
    assert summary.status == "ok", str(summary)
    assert set(summary.lists) == {"supplier_requests", "consumer_transcripts"}
    assert "skipped: international, domestic (not in the profile's interfaces)" in str(summary)


def test_supplier_and_consumer_only_pull_and_doctor_exit_0(sandbox: Sandbox, tmp_path: Path):
    env = {**_exchange_only(sandbox), "WORKBENCH_DB": str(tmp_path / "wb.db")}
    pulled = _invoke("pull", env=env)
    assert pulled.exit_code == 0, pulled.output
    assert "skipped: international, domestic (no credentials)" in pulled.output
    assert "domestic_events" not in pulled.output
    checked = _invoke("doctor", env=env)
    assert checked.exit_code == 0, checked.output
    assert "skipped" in checked.output


@pytest.mark.slow
def test_supplier_and_consumer_only_report_exits_0(sandbox: Sandbox, tmp_path: Path):
    env = {**_exchange_only(sandbox), "WORKBENCH_DB": str(tmp_path / "wb.db")}
    done = _invoke("report", "--output-dir", str(tmp_path / "reports"), env=env)
    assert done.exit_code == 0, done.output
    assert "skipped: international, domestic (no credentials)" in done.output


def test_a_listed_interface_without_credentials_is_a_config_error(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {**_exchange_only(sandbox), "WORKBENCH_INTERFACES": "supplier,consumer,domestic"}
    done = _invoke("pull", env=env)
    assert done.exit_code == 2, done.output
    assert "WORKBENCH_DOMESTIC_CLIENT_SECRET" in done.output
    assert list(tmp_path.iterdir()) == []  # no database, no data/ folder
