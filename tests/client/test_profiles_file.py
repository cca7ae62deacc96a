"""The profiles file is found from any folder and read safely; the sandbox is never used by
accident; every setting is documented in docs/configuration.md."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

import workbench as wb
from workbench.config import load_profile
from workbench.config.settings import PROFILE_SETTINGS, ROLE_SETTINGS, SMTP_SETTINGS, Setting

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text("utf-8")
EXAMPLES = dict(re.findall(r"### ([^\n]+)\n\n```toml\n(.*?)```", DOCS, re.S))

PROD = """
default_profile = "prod"

[profiles.prod]
exchange_url = "https://exchange.example.test"
db = "stores/prod.db"

[profiles.prod.supplier]
client_id = "college-supplier"
client_secret_env = "PROD_SUPPLIER_SECRET"
"""


def test_the_users_profiles_are_found_from_any_folder(tmp_path: Path, monkeypatch) -> None:
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "workbench"
    config.mkdir(parents=True)
    (config / "workbench.toml").write_text(PROD)
    elsewhere = tmp_path / "cron" / "job"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    profile = load_profile(env={"PROD_SUPPLIER_SECRET": "s", **os.environ})
    assert profile.name == "prod" and profile.config_path == str(config / "workbench.toml")
    # A store set in the file lives beside the file, whatever folder the command runs in.
    assert profile.db == str(config / "stores" / "prod.db")


def test_the_working_folder_wins_over_home_and_the_config_folder(tmp_path, monkeypatch) -> None:
    here, home = tmp_path / "here", tmp_path / "home"
    for folder, name in ((here, "here"), (home, "home")):
        folder.mkdir()
        (folder / "workbench.toml").write_text(f'default_profile = "{name}"\n[profiles.{name}]\n')
    monkeypatch.chdir(here)
    assert load_profile(env={"WORKBENCH_HOME": str(home)}).name == "here"
    monkeypatch.chdir(tmp_path)
    assert load_profile(env={"WORKBENCH_HOME": str(home)}).name == "home"


@pytest.mark.parametrize(
    "variable", ["WORKBENCH_SUPPLIER_CLIENT_SECRET", "WORKBENCH_EXCHANGE_PASSWORD",
                 "WORKBENCH_LOGIN", "WORKBENCH_SUBSCRIPTION_KEY"]
)  # fmt: skip
def test_partner_settings_no_profile_uses_are_refused_not_replaced_by_the_sandbox(
    tmp_path, monkeypatch, variable: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(wb.ConfigError, match=rf"{variable} is set, but no profile uses it") as e:
        load_profile(env={variable: "etms"})
    assert "--profile sandbox" in str(e.value) and "etms" not in str(e.value).replace(
        "WORKBENCH_LOGIN", ""
    )
    assert load_profile("sandbox", env={variable: "x"}).is_sandbox  # chosen on purpose
    assert not (tmp_path / "data").exists()


def test_a_profiles_file_that_chooses_no_profile_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workbench.toml").write_text("[profiles.prod]\n[profiles.test]\n")
    with pytest.raises(wb.ConfigError, match="defines prod, test but chooses none"):
        load_profile(env={})


@pytest.mark.parametrize(
    "url", ["https://svc:PASS@etms.example", "https://svc@etms.example", "https://:PASS@x.example"]
)
def test_a_url_with_credentials_in_it_is_refused_naming_the_setting(url: str) -> None:
    with pytest.raises(wb.ConfigError, match="WORKBENCH_EXCHANGE_URL holds a user name") as e:
        load_profile(env={"WORKBENCH_EXCHANGE_URL": url})
    assert "PASS" not in str(e.value)


def test_hostile_profile_files_are_refused_in_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[\n" * 100_000 + "]\n" * 100_000)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    cases = {
        tmp_path: "not a regular file",
        Path("/dev/zero"): "not a regular file",
        fifo: "not a regular file",
        deep: "is not valid TOML",
    }
    for path, message in cases.items():
        done: list[BaseException] = []
        thread = threading.Thread(  # a FIFO must not block the read
            target=lambda p=path, out=done: out.append(_refusal(p)), daemon=True
        )
        thread.start()
        thread.join(timeout=20)
        assert done, f"{path} hung"
        assert isinstance(done[0], wb.ConfigError) and message in str(done[0]), (path, done)
        assert "\n" not in str(done[0])


def _refusal(path: Path) -> BaseException:
    try:
        load_profile(env={}, config_path=path)
    except BaseException as exc:
        return exc
    raise AssertionError(f"{path} was read")


@pytest.mark.parametrize(
    "text", ['[profile.prod]\nexchange_url = "https://x.example"\n', "x = 1\n"]
)
def test_a_misspelt_profiles_file_is_refused_not_left_to_the_sandbox(tmp_path, text) -> None:
    path = tmp_path / "workbench.toml"
    path.write_text(text)
    with pytest.raises(wb.ConfigError, match=r"Unknown key .* at the top of") as refused:
        load_profile(env={}, config_path=path)
    if "profile." in text:
        assert "Did you mean 'profiles'?" in str(refused.value)


def test_a_url_with_credentials_shows_neither(tmp_path) -> None:
    for url in ("http://TOKEN@x.example/exchange", "http://svc%3ATOKEN@x.example"):
        with pytest.raises(wb.ConfigError) as refused:
            load_profile(env={"WORKBENCH_EXCHANGE_URL": url})
        assert "TOKEN" not in str(refused.value) and "***@x.example" in str(refused.value)


def _documented(s: Setting) -> str:
    """The start of a setting's row in docs/configuration.md, and what it says of its values."""
    default = s.default
    if isinstance(default, bool):
        default = "yes" if default else "no"
    elif isinstance(default, float):
        default = f"{default:g}"
    row = f"| `{s.file_key}` | `{s.variable.replace('WORKBENCH_*_', 'WORKBENCH_<ROLE>_')}` | "
    row += f"{'' if default is None else default} |"
    if s.choices:
        return rf"{re.escape(row)} .*One of: {re.escape(', '.join(s.choices))}\. \|"
    if s.limits is not None and s.kind is int:
        return rf"{re.escape(row)} .*From {int(s.limits[0]):,} to {int(s.limits[1]):,}\. \|"
    if s.limits is not None and s.kind is float:
        return rf"{re.escape(row)} .*From {s.limits[0]:g} to {s.limits[1]:g}\. \|"
    return re.escape(row)


def test_the_configuration_reference_names_every_setting_as_declared() -> None:
    for setting in (*PROFILE_SETTINGS, *ROLE_SETTINGS, *SMTP_SETTINGS):
        assert re.search(_documented(setting), DOCS), f"docs/configuration.md: {setting}"
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("title", sorted(EXAMPLES))
def test_every_example_profile_loads(tmp_path: Path, title: str) -> None:
    path = tmp_path / "workbench.toml"
    path.write_text(EXAMPLES[title])
    names = re.findall(r'_env = "(\w+)"', EXAMPLES[title])
    profile = load_profile(env=dict.fromkeys(names, "issued-value"), config_path=path)
    profile.check_interfaces()
    assert profile.interfaces


def test_a_file_that_only_tunes_the_sandbox_chooses_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workbench.toml").write_text('[profiles.sandbox]\ntimezone = "America/Toronto"\n')
    assert load_profile(env={}).name == "sandbox"


def test_a_profiles_file_others_may_write_is_refused(tmp_path: Path, monkeypatch) -> None:
    """It says where credentials are sent: a token_url of another user's would get them."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "workbench.toml"
    path.write_text('default_profile = "p"\n[profiles.p]\nexchange_url = "https://x.example"\n')
    path.chmod(0o666)
    with pytest.raises(wb.ConfigError, match=r"writable by others.*chmod go-w"):
        load_profile(env={})
    path.chmod(0o644)
    assert load_profile(env={}).name == "p"
    if os.getuid() == 0:  # root may own a file for another user, as a planted one would be
        os.chown(path, 65534, 65534)
        with pytest.raises(wb.ConfigError, match="another user's"):
            load_profile(env={})


def test_places_that_would_skip_the_user_s_profiles_are_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workbench.toml").symlink_to(tmp_path / "gone.toml")
    with pytest.raises(wb.ConfigError, match="a link to nothing"):
        load_profile(env={})
    (tmp_path / "workbench.toml").unlink()
    with pytest.raises(wb.ConfigError, match=r"WORKBENCH_HOME is .*no folder"):
        load_profile(env={"WORKBENCH_HOME": str(tmp_path / "mistyped")})


def test_a_file_s_sandbox_default_never_wins_over_partner_variables(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "workbench.toml").write_text('default_profile = "sandbox"\n')
    env = {"WORKBENCH_EXCHANGE_URL": "https://x.example", "WORKBENCH_SUPPLIER_CLIENT_ID": "c"}
    with pytest.raises(wb.ConfigError, match="chooses the embedded sandbox"):
        load_profile(env=env)
    assert load_profile("env", env=env).name == "env"
    (tmp_path / "workbench.toml").write_text('[profiles.env]\nexchange_url = "https://x.example"\n')
    assert "[profiles.env]" in load_profile("env", env={}).origin


@pytest.mark.parametrize(
    "url", ["https://x.example/api?subscription-key=K3y", "https://x.example#K3y", "svc:K3y@x"]
)
def test_a_base_url_with_a_query_or_no_scheme_is_refused_without_showing_it(url) -> None:
    with pytest.raises(wb.ConfigError, match="WORKBENCH_GATEWAY_URL") as refused:
        load_profile(env={"WORKBENCH_GATEWAY_URL": url})
    assert "K3y" not in str(refused.value)
