"""Tokens: cached, renewed ahead of expiry, one renewal at a time, 401 -> renew once -> retry."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

import workbench as wb
from workbench.http.auth import Token
from workbench.sandbox import Sandbox

from .conftest import exchange_hits


def test_one_token_per_client_for_many_calls(sandbox: Sandbox, w: wb.Workbench) -> None:
    for _ in range(5):
        w.supplier.pending_requests()
        w.consumer.pending_transcripts()
        w.diagnostics()
        w.peek_events(count=2)
    c = sandbox.credentials
    assert sandbox.token_requests == {
        c.supplier_client_id: 1,
        c.consumer_client_id: 1,
        c.intl_client_id: 1,
        c.domestic_client_id: 1,
    }


def test_threads_share_one_renewal(sandbox: Sandbox, w: wb.Workbench) -> None:
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def call() -> None:
        barrier.wait()
        try:
            w.supplier.pending_requests()
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert sandbox.token_requests[sandbox.credentials.supplier_client_id] == 1


def test_tokens_are_renewed_per_expiry_not_per_call(sandbox_factory, connect_to):
    """The partner's clock, not ours, is moved past each token's life: no wall-clock race."""
    sb = sandbox_factory(token_ttl=3600)
    w = connect_to(sb)
    for period in range(3):
        if period:
            sb.advance(hours=1.01)  # the token we hold has died at the partner
        for _ in range(5):
            assert len(w.supplier.pending_requests()) > 0
    assert sb.token_requests[sb.credentials.supplier_client_id] == 3  # one per life, 15 calls


def test_a_401_renews_once_and_retries(sandbox: Sandbox, w: wb.Workbench) -> None:
    auth = w.session.auth("supplier")
    auth.token()
    # The partner revokes the token we hold (a restart, a key rotation...).
    revoked = Token(
        value="revoked.token.value",
        scope="transcript_api",
        lifetime=3600,
        renew_after=time.monotonic() + 3600,
        obtained_at=datetime.now(UTC),
    )
    w.session.tokens[auth.key] = revoked
    assert len(w.supplier.pending_requests()) > 0
    assert sandbox.token_requests[sandbox.credentials.supplier_client_id] == 2
    assert exchange_hits(sandbox)[("GET", "/api/transcriptrequests/no_response")] == 2


def test_a_second_401_is_an_auth_error_naming_what_to_check(sandbox_factory, connect_to):
    identity, partner = sandbox_factory(), sandbox_factory()
    # Tokens from one identity server are refused by another sandbox's exchange.
    w = connect_to(partner, WORKBENCH_AUTH_URL=identity.auth_url)
    with pytest.raises(wb.AuthError) as info:
        w.supplier.pending_requests()
    message = str(info.value)
    assert "supplier" in message
    assert "WORKBENCH_SUPPLIER_" in message
    assert "401" in message
    assert partner.hits[("GET", "/api/transcriptrequests/no_response")] == 2
    assert identity.token_requests[identity.credentials.supplier_client_id] == 2


def test_a_refused_static_token_says_how_to_fix_it(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_CONSUMER_TOKEN="not-a-valid-token")
    with pytest.raises(wb.AuthError, match="WORKBENCH_CONSUMER_TOKEN"):
        w.consumer.pending_transcripts()
    assert sandbox.hits[("GET", "/api/transcripts/no_response")] == 1  # no renewal possible


@pytest.mark.parametrize(
    ("env", "role", "error"),
    [
        ({"WORKBENCH_SUPPLIER_CLIENT_SECRET": "wrong-secret"}, "supplier", "invalid_client"),
        ({"WORKBENCH_INTL_PASSWORD": "wrong-password"}, "international", "invalid_grant"),
        ({"WORKBENCH_DOMESTIC_SCOPE": "intl_api.public"}, "domestic", "invalid_scope"),
        ({"WORKBENCH_CONSUMER_CLIENT_ID": "nobody"}, "consumer", "invalid_client"),
    ],
)
def test_identity_server_errors_carry_oauth_error(sandbox: Sandbox, connect_to, env, role, error):
    w = connect_to(sandbox, **env)
    calls = {
        "supplier": w.supplier.pending_requests,
        "consumer": w.consumer.pending_transcripts,
        "international": w.diagnostics,
        "domestic": w.peek_events,
    }
    with pytest.raises(wb.AuthError) as info:
        calls[role]()
    assert role in str(info.value)
    assert error in str(info.value)
    for value in env.values():
        if "wrong" in value:
            assert value not in str(info.value)
    assert exchange_hits(sandbox) == {}


def test_identity_errors_are_not_retried(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_SUPPLIER_CLIENT_SECRET="wrong-secret")
    with pytest.raises(wb.AuthError):
        w.supplier.pending_requests()
    assert sandbox.hits[("POST", "/auth/connect/token")] == 1


def test_token_settings_and_renewal(sandbox: Sandbox, w: wb.Workbench) -> None:
    auth = w.session.auth("international")
    token = auth.token()
    assert (auth.role, auth.grant, auth.client_id, auth.scope) == (
        "international",
        "password",
        sandbox.credentials.intl_client_id,
        "intl_api.public",
    )
    assert token.scope == "intl_api.public"
    assert 3590 <= token.lifetime <= 3600
    assert token.value not in repr(token)
    assert auth.token(force=True) is not token


@pytest.mark.parametrize("fault", ["error_rate", "rate_limit_rate"])
def test_identity_server_failures_are_retried_then_partner_errors(sandbox, connect_to, fault):
    # The gateway answers 5xx/429 to everything under this fault, token requests included.
    sandbox.set_faults(**{fault: 1.0, "retry_after_s": 0})
    w = connect_to(sandbox, WORKBENCH_AUTH_URL=sandbox.gateway_url, WORKBENCH_MAX_ATTEMPTS="3")
    with pytest.raises(
        wb.PartnerError, match=r"/auth/connect/token answered (500|503|429)"
    ) as info:
        w.supplier.pending_requests()
    assert not isinstance(info.value, wb.AuthError)
    assert sandbox.hits[("POST", "/auth/connect/token")] == 3  # a token request is safe to repeat
