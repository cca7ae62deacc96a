"""Spec §4.1 and §5: the identity server, every grant and every OAuth2 error."""

from __future__ import annotations

import base64
from urllib.parse import urlencode

import httpx
import jwt
import pytest

from tests.sandbox.wire import request_token, token_form
from workbench import spec
from workbench.sandbox.settings import Credentials

ROLES = ["international", "domestic", "supplier", "consumer"]


@pytest.mark.parametrize("role", ROLES)
def test_each_client_gets_a_bearer_jwt_with_its_scope(sandbox, role):
    response = request_token(sandbox, token_form(sandbox, role))
    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 3600
    assert body["scope"] == token_form(sandbox, role)["scope"]
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["exp"] - claims["iat"] == 3600
    assert response.headers["cache-control"] == "no-store"


def test_lifetime_is_configurable(sandbox_factory):
    sb = sandbox_factory(token_ttl=120)
    assert request_token(sb, token_form(sb, "domestic")).json()["expires_in"] == 120
    sb.set_faults(token_ttl=5)
    assert request_token(sb, token_form(sb, "domestic")).json()["expires_in"] == 5


BAD_FORMS = [
    ("unknown client", "domestic", {"client_id": "nobody"}, 401, "invalid_client"),
    ("wrong secret", "domestic", {"client_secret": "nope"}, 401, "invalid_client"),
    ("wrong user", "international", {"username": "someone@else"}, 400, "invalid_grant"),
    ("wrong password", "international", {"password": "guess"}, 400, "invalid_grant"),
    (
        "unknown grant",
        "domestic",
        {"grant_type": "authorization_code"},
        400,
        "unsupported_grant_type",
    ),
    (
        "grant not allowed for client",
        "domestic",
        {"grant_type": "password"},
        400,
        "unsupported_grant_type",
    ),
    ("wrong scope", "domestic", {"scope": spec.INTL_SCOPE}, 400, "invalid_scope"),
    (
        "two scopes",
        "international",
        {"scope": f"{spec.INTL_SCOPE} {spec.DOMESTIC_SCOPE}"},
        400,
        "invalid_scope",
    ),
    ("missing scope", "supplier", {"scope": ""}, 400, "invalid_scope"),
    ("missing grant type", "supplier", {"grant_type": ""}, 400, "invalid_request"),
    ("missing password", "international", {"password": ""}, 400, "invalid_request"),
    ("non-ASCII secret", "domestic", {"client_secret": "sécret"}, 401, "invalid_client"),
    ("emoji secret", "supplier", {"client_secret": "\U0001f511"}, 401, "invalid_client"),
    ("non-ASCII client id", "consumer", {"client_id": "clïent"}, 401, "invalid_client"),
    ("non-ASCII password", "international", {"password": "pässwörd"}, 400, "invalid_grant"),
    ("emoji user", "international", {"username": "\U0001f600@x"}, 400, "invalid_grant"),
]


@pytest.mark.parametrize(
    ("role", "change", "status", "error"),
    [case[1:] for case in BAD_FORMS],
    ids=[case[0] for case in BAD_FORMS],
)
def test_refusals_carry_the_oauth_error_body(sandbox, role, change, status, error):
    form = {**token_form(sandbox, role), **change}
    response = request_token(sandbox, form)
    assert response.status_code == status
    body = response.json()
    assert body["error"] == error
    assert body["error_description"]
    assert "access_token" not in body


def test_json_body_is_refused(sandbox):
    response = httpx.post(sandbox.auth_url + spec.TOKEN_PATH, json=token_form(sandbox, "supplier"))
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_token_requests_are_counted_per_client(sandbox):
    for _ in range(3):
        request_token(sandbox, token_form(sandbox, "supplier"))
    request_token(sandbox, {**token_form(sandbox, "consumer"), "client_secret": "x"})
    assert sandbox.token_requests == {sandbox.credentials.supplier_client_id: 3}
    assert len(sandbox.issued_tokens) == 3


def _post_token(sb, body: bytes, **headers: str) -> httpx.Response:
    headers = {"Content-Type": "application/x-www-form-urlencoded", **headers}
    return httpx.post(sb.auth_url + spec.TOKEN_PATH, content=body, headers=headers)


def test_non_ascii_credentials_configured_at_the_partner_are_accepted(sandbox_factory):
    credentials = Credentials(domestic_client_secret="sécret-\U0001f511")
    sb = sandbox_factory(credentials=credentials)
    response = request_token(sb, token_form(sb, "domestic"))
    assert response.status_code == 200
    assert response.json()["token_type"] == "Bearer"


@pytest.mark.parametrize(
    ("role", "field", "raw", "status", "error"),
    [
        ("domestic", "client_secret", b"\xff\xfe", 400, "invalid_request"),
        ("domestic", "client_secret", b"%FF%FE", 401, "invalid_client"),
        ("international", "password", b"%C3%28", 400, "invalid_grant"),
    ],
    ids=["raw-invalid-utf8", "percent-encoded-invalid-secret", "percent-encoded-invalid-password"],
)
def test_undecodable_credentials_get_the_oauth_error(sandbox, role, field, raw, status, error):
    form = {name: value for name, value in token_form(sandbox, role).items() if name != field}
    response = _post_token(sandbox, urlencode(form).encode() + f"&{field}=".encode() + raw)
    assert response.status_code == status
    assert response.json()["error"] == error


def test_non_ascii_basic_credentials_get_the_oauth_error(sandbox):
    basic = base64.b64encode("dod-demo:sécret-\U0001f511".encode()).decode()
    body = "grant_type=client_credentials&scope=dod_api&client_id=dod-demo&client_secret=sécret"
    response = _post_token(sandbox, body.encode(), Authorization=f"Basic {basic}")
    assert response.status_code == 401
    assert response.json()["error"] == "invalid_client"
    bare = _post_token(sandbox, b"grant_type=client_credentials", Authorization=f"Basic {basic}")
    assert bare.status_code == 400
    assert bare.json()["error"] == "invalid_request"
