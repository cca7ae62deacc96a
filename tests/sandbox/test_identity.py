"""Spec §4.1 and §5: the identity server, every grant and every OAuth2 error."""

from __future__ import annotations

import jwt
import pytest

from tests.sandbox.wire import request_token, token_form
from workbench import spec

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
    import httpx

    response = httpx.post(sandbox.auth_url + spec.TOKEN_PATH, json=token_form(sandbox, "supplier"))
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_token_requests_are_counted_per_client(sandbox):
    for _ in range(3):
        request_token(sandbox, token_form(sandbox, "supplier"))
    request_token(sandbox, {**token_form(sandbox, "consumer"), "client_secret": "x"})
    assert sandbox.token_requests == {sandbox.credentials.supplier_client_id: 3}
    assert len(sandbox.issued_tokens) == 3
