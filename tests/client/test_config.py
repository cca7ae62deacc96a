"""Profiles: env vars and the TOML file, secrets by reference, clear errors, no leaks in repr."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import workbench as wb
from tests.watched import secrets_of
from workbench.config import Secret, load_profile, with_overrides
from workbench.config.settings import TUNING
from workbench.sandbox import Sandbox

from .conftest import exchange_hits

PROFILES = """
default_profile = "prod"

[profiles.prod]
auth_url = "https://identity.example.test"
gateway_url = "https://gateway.example.test"
exchange_url = "https://exchange.example.test"
subscription_key_env = "PROD_KEY"
read_only = true
concurrency = 4

[profiles.prod.supplier]
client_id = "college-supplier"
client_secret_env = "PROD_SUPPLIER_SECRET"

[profiles.prod.intl]
client_id = "sis"
client_secret_env = "PROD_INTL_SECRET"
username = "analyst"
password_env = "PROD_INTL_PASSWORD"
"""


@pytest.fixture
def profiles_file(tmp_path: Path) -> Path:
    path = tmp_path / "workbench.toml"
    path.write_text(PROFILES)
    return path


def test_nothing_configured_is_the_sandbox() -> None:
    profile = load_profile(env={})
    assert profile.name == "sandbox"
    assert profile.is_sandbox


def test_urls_in_env_without_profile_use_env(sandbox: Sandbox) -> None:
    profile = load_profile(env=sandbox.env)
    assert profile.name == "env"
    assert profile.role("supplier").base_url == sandbox.exchange_url
    assert profile.role("international").grant == "password"
    assert profile.role("domestic").grant == "client_credentials"


def test_toml_profile_resolves_secrets_by_env_name(profiles_file: Path) -> None:
    env = {"PROD_SUPPLIER_SECRET": "s3cret-supplier", "PROD_KEY": "key-123-prod"}
    profile = load_profile(env=env)  # default_profile = "prod"
    supplier = profile.role("supplier")
    assert profile.name == "prod"
    assert profile.read_only is True
    assert profile.concurrency == 4
    assert supplier.client_id == "college-supplier"
    assert supplier.client_secret == Secret("s3cret-supplier")
    assert supplier.scope == "transcript_api"


def test_env_wins_over_toml(profiles_file: Path) -> None:
    env = {
        "PROD_SUPPLIER_SECRET": "from-file-ref",
        "WORKBENCH_SUPPLIER_CLIENT_SECRET": "from-env",
        "WORKBENCH_CONCURRENCY": "12",
        "WORKBENCH_READ_ONLY": "no",
        "WORKBENCH_EXCHANGE_URL": "https://other.example.test/",
    }
    profile = load_profile("prod", env=env)
    supplier = profile.role("supplier")
    assert supplier.client_secret is not None
    assert supplier.client_secret.reveal() == "from-env"
    assert supplier.base_url == "https://other.example.test"
    assert profile.concurrency == 12
    assert profile.read_only is False


def test_missing_secret_variable_named_by_toml(profiles_file: Path) -> None:
    profile = load_profile(env={"PROD_KEY": "key-123-prod"})  # fine until the supplier role is used
    assert "supplier" in profile.interfaces  # its credentials are set, one is missing
    with pytest.raises(wb.ConfigError, match=r"PROD_SUPPLIER_SECRET \(named by client_secret_env"):
        profile.role("supplier")


def test_secret_written_in_the_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "workbench.toml"
    path.write_text('[profiles.x.supplier]\nclient_secret = "plain-text-secret"\n')
    with pytest.raises(wb.ConfigError, match="client_secret_env") as info:
        load_profile("x", env={})
    assert "plain-text-secret" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[profiles.x]\ngateway_ur = 'https://g'\n", "Unknown setting 'gateway_ur'.*'gateway_url'"),
        ("[profiles.x.international]\nclient_id = 'c'\n", r"Did you mean 'intl'\?.*\[\.\.\.intl\]"),
        ("[profiles.x]\nconcurrency = 'many'\n", "concurrency.*must be int"),
        ("[profiles.x]\nconcurrency = 0\n", "at least 1"),
        ("[profiles.x]\ngateway_url = 'ftp://g'\n", "must be an http"),
        ("[profiles.x\n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_problem(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "workbench.toml").write_text(text)
    with pytest.raises(wb.ConfigError, match=match):
        load_profile("x", env={})


def test_unknown_profile_lists_the_known_ones(profiles_file: Path) -> None:
    with pytest.raises(wb.ConfigError, match=r"'staging' is not defined.*prod"):
        load_profile("staging", env={})


def test_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(wb.ConfigError, match="WORKBENCH_CONFIG"):
        load_profile(env={"WORKBENCH_CONFIG": str(tmp_path / "absent.toml")})


def test_bad_tuning_value_names_the_variable() -> None:
    with pytest.raises(wb.ConfigError, match="WORKBENCH_READ_TIMEOUT"):
        load_profile(env={"WORKBENCH_READ_TIMEOUT": "soon"})
    with pytest.raises(wb.ConfigError, match="WORKBENCH_READ_ONLY"):
        load_profile(env={"WORKBENCH_READ_ONLY": "maybe"})


def test_overrides_and_unknown_override() -> None:
    profile = load_profile(env={})
    assert with_overrides(profile, concurrency=3).concurrency == 3
    assert with_overrides(profile, read_only="yes").read_only is True
    with pytest.raises(wb.ConfigError, match="concurency"):
        with_overrides(profile, concurency=3)
    with pytest.raises(wb.ConfigError, match="concurrency must be at least 1"):
        with_overrides(profile, concurrency=0)


def test_missing_setting_names_the_variable_and_sends_nothing(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_INTL_PASSWORD="")
    with pytest.raises(wb.ConfigError, match="WORKBENCH_INTL_PASSWORD"):
        w.diagnostics()
    # The other interfaces still work.
    assert len(w.supplier.pending_requests()) > 0
    assert not any("diagnostics" in path for _, path in exchange_hits(sandbox))


def test_missing_subscription_key_is_a_config_error(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_SUBSCRIPTION_KEY="")
    with pytest.raises(wb.ConfigError, match="WORKBENCH_SUBSCRIPTION_KEY"):
        w.peek_events()


def test_repr_shows_no_secret(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox)
    shown = repr(w.profile) + str(w.profile) + repr(w) + repr(w.supplier)
    for secret in secrets_of(sandbox.credentials):
        assert secret not in shown
    assert "Secret('********')" in repr(w.profile)


def test_connect_without_configuration_runs_the_embedded_sandbox() -> None:
    with wb.connect(env={}) as w:
        assert w.sandbox is not None
        url = w.sandbox.root_url
        assert w.diagnostics()["customer_code"].iloc[0] == w.sandbox.credentials.customer_code
        assert "sandbox" in repr(w)
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "/gateway/", timeout=2)
    w.close()  # a second close is harmless


def test_static_token_grant(sandbox: Sandbox, connect_to) -> None:
    c = sandbox.credentials
    answer = httpx.post(
        sandbox.auth_url + "/auth/connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": c.supplier_client_id,
            "client_secret": c.supplier_client_secret,
            "scope": "transcript_api",
        },
    ).json()
    w = connect_to(sandbox, WORKBENCH_SUPPLIER_TOKEN=answer["access_token"])
    assert w.profile.role("supplier").grant == "static"
    before = sandbox.token_requests.get(c.supplier_client_id, 0)
    assert len(w.supplier.pending_requests()) > 0
    assert sandbox.token_requests.get(c.supplier_client_id, 0) == before


def test_db_setting(sandbox: Sandbox) -> None:
    with wb.connect(env={**sandbox.env, "WORKBENCH_DB": "x.db"}) as w:
        assert w.db == "x.db"
    with wb.connect(env=sandbox.env, db="y.db") as w:
        assert w.db == "y.db"


def test_workbench_home_anchors_relative_paths(
    profiles_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebooks = tmp_path / "notebooks"  # where JupyterLab starts a notebook's kernel
    notebooks.mkdir()
    monkeypatch.chdir(notebooks)
    assert load_profile(env={}).name == "sandbox"  # no workbench.toml in this folder
    home = {
        "WORKBENCH_HOME": str(tmp_path),
        "PROD_KEY": "key-123-prod",
        "PROD_SUPPLIER_SECRET": "s3cret-supplier",
    }
    profile = load_profile(env=home)
    assert profile.name == "prod"  # the project's workbench.toml, found through the home
    assert profile.db == str(tmp_path / "data" / "workbench.db")
    assert load_profile(env={**home, "WORKBENCH_DB": "other.db"}).db == str(tmp_path / "other.db")
    absolute = str(tmp_path / "elsewhere" / "x.db")
    assert load_profile(env={**home, "WORKBENCH_DB": absolute}).db == absolute


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("WORKBENCH_READ_TIMEOUT", "nan"),
        ("WORKBENCH_CONNECT_TIMEOUT", "inf"),
        ("WORKBENCH_BACKOFF_INITIAL", "inf"),
        ("WORKBENCH_BACKOFF_MAX", "1e308"),
        ("WORKBENCH_RETRY_AFTER_MAX", "-inf"),
        ("WORKBENCH_CONCURRENCY", "100000"),
        ("WORKBENCH_MAX_ATTEMPTS", "1000000"),
    ],
)
def test_numbers_out_of_range_are_refused_at_load(name: str, raw: str) -> None:
    with pytest.raises(wb.ConfigError, match=rf"{name} must be at least .* and at most .*, got"):
        load_profile(env={name: raw})


def test_every_number_setting_has_a_finite_range() -> None:
    defaults = load_profile(env={})
    for key, setting in TUNING.items():
        minimum, maximum = setting.limits
        default = getattr(defaults, key)
        if not isinstance(default, bool):
            assert minimum <= default <= maximum < 1e12, key


def test_toml_numbers_are_checked_like_env_numbers(tmp_path: Path) -> None:
    (tmp_path / "workbench.toml").write_text("[profiles.x]\nread_timeout = nan\n")
    with pytest.raises(wb.ConfigError, match=r"read_timeout in \[profiles.x\].*at most"):
        load_profile("x", env={"WORKBENCH_HOME": str(tmp_path)})


@pytest.mark.parametrize("value", ["['prod', 'test']", "{ name = 'prod' }"])
def test_default_profile_of_the_wrong_type_names_the_file_and_key(
    tmp_path: Path, value: str
) -> None:
    (tmp_path / "workbench.toml").write_text(f"default_profile = {value}\n")
    with pytest.raises(wb.ConfigError, match=r"default_profile in .*workbench.toml must be"):
        load_profile(env={"WORKBENCH_HOME": str(tmp_path)})


def test_an_empty_variable_is_unset(profiles_file: Path) -> None:
    """An empty WORKBENCH_* variable leaves the file's value, and a secret's named variable."""
    env = {
        "PROD_SUPPLIER_SECRET": "from-the-named-variable",
        "PROD_KEY": "key-123-prod",
        "WORKBENCH_CONCURRENCY": "",
        "WORKBENCH_READ_ONLY": "",
        "WORKBENCH_GATEWAY_URL": "",
        "WORKBENCH_SUPPLIER_CLIENT_SECRET": "",
    }
    profile = load_profile(env=env)
    assert (profile.concurrency, profile.read_only) == (4, True)
    assert profile.roles["international"].base_url == "https://gateway.example.test"
    secret = profile.role("supplier").client_secret
    assert secret is not None and secret.reveal() == "from-the-named-variable"


@pytest.mark.parametrize(
    ("env", "match"),
    [
        ({"WORKBENCH_CONCURRENCY": "many"}, r"^WORKBENCH_CONCURRENCY must be int, got 'many'"),
        ({}, r"^concurrency in \[profiles.x\] of .*workbench.toml must be int, got 'lots'"),
    ],
)
def test_a_bad_value_names_where_it_came_from(
    tmp_path: Path, env: dict[str, str], match: str
) -> None:
    (tmp_path / "workbench.toml").write_text("[profiles.x]\nconcurrency = 'lots'\n")
    with pytest.raises(wb.ConfigError, match=match):
        load_profile("x", env={"WORKBENCH_HOME": str(tmp_path), **env})


@pytest.mark.parametrize(
    ("word", "value"),
    [
        ("1", True), (" On ", True), ("YES", True), ("true", True),
        ("0", False), ("off", False), ("No", False), ("FALSE", False),
    ],
)  # fmt: skip
def test_yes_no_words(word: str, value: bool) -> None:
    assert load_profile(env={"WORKBENCH_READ_ONLY": word}).read_only is value
    assert with_overrides(load_profile(env={}), read_only=word).read_only is value


@pytest.mark.parametrize("zone", ["localtime", "Factory", "posixrules", "right/UTC",
                                  "posix/America/Toronto"])  # fmt: skip
def test_a_file_of_the_zone_database_that_is_no_place_s_zone_is_refused(zone: str) -> None:
    """They load with ZoneInfo, yet name no place: the machine's own zone, a placeholder, a
    zone counting leap seconds or a copy. Reports show times in an IANA zone or UTC."""
    with pytest.raises(wb.ConfigError, match=rf"WORKBENCH_TIMEZONE: '{zone}' is not a time zone"):
        load_profile(env={"WORKBENCH_TIMEZONE": zone})
    for name in ("UTC", "Etc/UTC", "America/Toronto"):
        assert load_profile(env={"WORKBENCH_TIMEZONE": name}).timezone == name
