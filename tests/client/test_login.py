"""Logins as partners issue them: OCAS' eTMS login, answers with no expires_in, short
credentials, a Subscription-Key on the exchange, a 401 with no body."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import parse_qsl

import httpx
import pytest

import workbench as wb
from workbench.cli.doctor import passed, run_checks
from workbench.config import RoleSettings, Secret
from workbench.http.auth import BearerAuth, TokenCache


def _login_forms(exchanges) -> list[dict[str, str]]:
    return [
        dict(parse_qsl(e.request_body))
        for e in exchanges
        if e.interface == "identity" and e.url.endswith("/api/auth/login")
    ]


@pytest.mark.parametrize("expiry", ["dot_expires", "dot_expires_iso"])
def test_the_exchange_logs_in_as_ocas_etms_does(
    sandbox_factory, connect_to, exchanges, expiry: str
) -> None:
    sb = sandbox_factory(exchange_login="etms", token_expiry=expiry, token_ttl=1800)
    w = connect_to(sb)
    assert "\\" in sb.env["WORKBENCH_EXCHANGE_USERNAME"]  # Partner\user, as OCAS issues them
    assert len(w.supplier.pending_requests()) > 0
    assert len(w.consumer.pending_transcripts()) > 0
    # One account, one login, one token for both roles; no client id, OCAS' field names.
    assert sb.token_requests[sb.credentials.exchange_username] == 1
    (form,) = _login_forms(exchanges)
    assert form == {
        "grant_type": "password",
        "Username": sb.credentials.exchange_username,
        "Password": "[REDACTED]",
    }
    token = w.session.auth("supplier").token()
    assert 1700 < token.lifetime <= 1800  # from .expires, not the 3600 s assumed without it


def test_an_etms_login_that_expires_logs_in_again_on_a_401(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(exchange_login="etms", token_expiry="none", token_ttl=3600)
    w = connect_to(sb, WORKBENCH_TOKEN_LIFETIME="86400")  # we think it lives a day
    w.supplier.pending_requests()
    sb.advance(hours=2)  # it died after one
    assert len(w.supplier.pending_requests()) > 0
    assert sb.token_requests[sb.credentials.exchange_username] == 2


def test_a_refused_login_names_where_the_credentials_came_from(
    sandbox_factory, connect_to, tmp_path: Path
) -> None:
    sb = sandbox_factory(exchange_login="etms")
    w = connect_to(sb, WORKBENCH_EXCHANGE_PASSWORD="wrong")
    with pytest.raises(wb.AuthError, match="WORKBENCH_EXCHANGE_USERNAME and "
                       "WORKBENCH_EXCHANGE_PASSWORD") as info:  # fmt: skip
        w.supplier.pending_requests()
    assert "wrong" not in str(info.value)
    toml = tmp_path / "profiles.toml"
    toml.write_text(
        f'[profiles.uat]\nexchange_url = "{sb.exchange_url}"\nlogin = "etms"\n'
        f"[profiles.uat.exchange]\nusername = '{sb.credentials.exchange_username}'\n"
        'password_env = "UAT_PASSWORD"\n'
    )
    env = {"UAT_PASSWORD": "wrong"}
    named = r"username in \[profiles.uat.exchange\] of .*profiles\.toml and UAT_PASSWORD \(named by"
    with (
        wb.connect("uat", config_path=toml, env=env, db=tmp_path / "u.db") as u,
        pytest.raises(wb.AuthError, match=named),
    ):
        u.consumer.pending_transcripts()


def _grant(answer: dict[str, object], lifetime: float = 1200.0) -> BearerAuth:
    def post_form(url: str, form: dict[str, str]) -> httpx.Response:
        return httpx.Response(200, json=answer, request=httpx.Request("POST", url))

    settings = RoleSettings(
        role="supplier", grant="password", login="etms", username="Partner\\u",
        password=Secret("p"), token_url="https://x.example/api/auth/login",
    )  # fmt: skip
    return BearerAuth(settings, cache=TokenCache(), post_form=post_form, lifetime=lifetime)


def test_a_token_lives_as_long_as_its_answer_says_else_as_configured() -> None:
    opaque = {"access_token": "opaque-token", "token_type": "bearer"}
    assert _grant(opaque).token().lifetime == 1200.0
    assert _grant({**opaque, "expires_in": 600}).token().lifetime == 600.0
    expires = format_datetime(datetime.now(UTC) + timedelta(minutes=20), usegmt=True)
    assert 1190 < _grant({**opaque, ".expires": expires}).token().lifetime <= 1200
    assert _grant({**opaque, ".expires": "soon"}).token().lifetime == 1200.0
    assert _grant(opaque).form() == {"grant_type": "password", "Username": "Partner\\u",
                                     "Password": "p"}  # fmt: skip


def test_short_credentials_work_and_documents_keep_what_they_spell(
    sandbox_factory, connect_to, tmp_path: Path
) -> None:
    sb = sandbox_factory(credentials_style="short", exchange_login="etms", namespaces="v1.1.0")
    assert len(sb.credentials.intl_password) == 7 and sb.credentials.subscription_key == "2026"
    w = connect_to(sb, WORKBENCH_DB=str(tmp_path / "s.db"))
    checks = run_checks(w)
    assert passed(checks), checks.to_string()
    tokens = checks[checks["check"] == "token"].set_index("interface")["detail"]
    assert tokens["supplier"].startswith("password grant, no scope, ")  # an eTMS login has none
    w.pull(progress=False)
    xml = w.store.document(sb.pending_request_ids()[0])
    assert xml is not None and "2026" in xml and "[REDACTED]" not in xml
    calls = w.store.table("calls")
    sent = " ".join(calls["request_headers"].dropna()) + " ".join(calls["request_body"].dropna())
    for secret in (sb.credentials.intl_password, sb.credentials.exchange_password):
        assert secret not in sent
    assert '"2026"' not in sent  # the key, in a header: masked by position


def test_the_exchange_may_want_a_subscription_key_and_a_401_may_have_no_body(
    sandbox_factory, connect_to
) -> None:
    sb = sandbox_factory(exchange_key_required=True, unauthorized_body="empty")
    assert len(connect_to(sb).supplier.pending_requests()) > 0
    without = connect_to(sb, WORKBENCH_EXCHANGE_SUBSCRIPTION_KEY="")
    with pytest.raises(wb.AuthError) as info:
        without.supplier.pending_requests()
    assert "401" in str(info.value)
    answer = httpx.get(sb.exchange_url + "/api/transcripts/no_response")
    assert answer.status_code == 401 and answer.content == b""
    assert json.dumps(sb.env).count(sb.credentials.subscription_key) == 2  # gateway + exchange


def test_a_shared_account_missing_its_password_names_the_shared_setting(tmp_path: Path) -> None:
    from workbench.config import load_profile

    env = {"WORKBENCH_EXCHANGE_URL": "https://x.example", "WORKBENCH_LOGIN": "etms",
           "WORKBENCH_EXCHANGE_USERNAME": "Partner\\u"}  # fmt: skip
    with pytest.raises(wb.ConfigError) as missing:
        load_profile(env=env).check_interfaces()
    assert "WORKBENCH_EXCHANGE_PASSWORD" in str(missing.value)
    assert "WORKBENCH_SUPPLIER_PASSWORD" not in str(missing.value)
    toml = tmp_path / "w.toml"
    toml.write_text('[profiles.u]\nexchange_url = "https://x.example"\n[profiles.u.exchange]\n'
                    "username = 'P\\\\u'\npassword_env = \"U_PASSWORD\"\n")  # fmt: skip
    with pytest.raises(wb.ConfigError, match=r"U_PASSWORD \(named by password_env in "
                       r"\[profiles.u.exchange\]"):  # fmt: skip
        load_profile("u", env={}, config_path=toml).check_interfaces()


@pytest.mark.parametrize("name", ["accessToken", "AccessToken", "access-token"])
def test_a_login_answer_spelling_its_token_otherwise_logs_in_and_is_masked(name: str) -> None:
    from workbench.http.masking import Redactor

    answer = {name: "Op4queT0kenValueXyz123", "tokenType": "Bearer", "expiresIn": 600}
    token = _grant(answer).token()
    assert token.value == "Op4queT0kenValueXyz123" and token.lifetime == 600.0
    recorded = Redactor().text(json.dumps(answer))
    assert "Op4queT0ken" not in recorded and "600" in recorded


def test_a_login_that_answers_200_without_a_token_says_so_not_check_the_secret() -> None:
    with pytest.raises(wb.AuthError, match=r"answered 200 .* no access_token we can read") as e:
        _grant({"data": {"AccessToken": "Op4queT0kenValueXyz123"}}).token()
    assert "Op4queT0ken" not in str(e.value) and "client" not in str(e.value)
