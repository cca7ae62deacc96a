"""Spec §4.2, §4.3 and §5: diagnostics, pending placement events, peek events, gateway auth."""

from __future__ import annotations

import json
import time

import httpx
import jwt
import pytest

from tests.sandbox.wire import gateway, token
from workbench import spec


def test_diagnostics_echoes_the_caller(sandbox):
    with gateway(sandbox) as client:
        response = client.get(spec.DIAGNOSTICS_PATH)
    assert response.status_code == 200
    c = sandbox.credentials
    assert response.json() == {
        "name": c.caller_name,
        "customerCode": c.customer_code,
        "roles": c.caller_role,
    }


def test_pending_placement_events_are_a_json_array(sandbox):
    with gateway(sandbox) as client:
        events = client.get(spec.PENDING_PLACEMENT_EVENTS_PATH).json()
    assert isinstance(events, list)
    assert len(events) == sandbox.settings.initial_placement_events
    assert {"eventId", "eventType", "occurredAt"} <= set(events[0])


@pytest.mark.parametrize(("query", "expected"), [({}, 10), ({"Count": 1}, 1), ({"Count": 25}, 25)])
def test_peek_returns_count_events_oldest_first(sandbox, query, expected):
    with gateway(sandbox, "domestic") as client:
        events = client.get(spec.PEEK_EVENTS_PATH, params=query).json()
    assert len(events) == expected
    times = [e["occurredAt"] for e in events]
    assert times == sorted(times)


def test_peek_does_not_remove_events(sandbox):
    with gateway(sandbox, "domestic") as client:
        first = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 5}).json()
        again = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 5}).json()
    assert first == again


SHAPE_KEYS = {
    "flat": {"eventId", "eventType", "occurredAt", "payload"},
    "kind_at": {"id", "kind", "at", "payload"},
    "event_info": {"id", "eventInfo"},
}


@pytest.mark.parametrize("event_list", ["array", "object"])
@pytest.mark.parametrize("shape", SHAPE_KEYS)
def test_events_come_in_the_shape_and_list_set(sandbox_factory, shape, event_list):
    sb = sandbox_factory(event_shape=shape, event_list=event_list)
    with gateway(sb) as client:
        placement = client.get(spec.PENDING_PLACEMENT_EVENTS_PATH).json()
    with gateway(sb, "domestic") as client:
        domestic = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 100}).json()
    for answer, truth in ((placement, sb.state.placement_events),
                          (domestic, sb.state.domestic_events)):  # fmt: skip
        if event_list == "object":
            assert answer == {"events": answer["events"], "count": len(truth)}
            answer = answer["events"]
        assert len(answer) == len(truth)
        for event in answer:
            assert set(event) == SHAPE_KEYS[shape]
        if shape == "event_info":  # OCAS' International SIS shape: no time at all
            assert set(answer[0]["eventInfo"]) == {"action", "data"}
            assert "occurredAt" not in json.dumps(answer)


@pytest.mark.parametrize(("written", "first"), [("epoch_ms", 1772442000005),
                                                ("dotnet", "/Date(1772442000005)/")])  # fmt: skip
def test_event_times_are_written_as_set(sandbox_factory, written, first):
    sb = sandbox_factory(event_time=written, initial_domestic_events=1)
    sb.state.domestic_events[0]["occurredAt"] = "2026-03-02T09:00:00.005Z"
    with gateway(sb, "domestic") as client:
        (event,) = client.get(spec.PEEK_EVENTS_PATH).json()
    assert event["occurredAt"] == first


def test_peek_removes_what_it_returns_when_set(sandbox_factory):
    sb = sandbox_factory(peek_removes=True, initial_domestic_events=12)
    with gateway(sb, "domestic") as client:
        first = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 10}).json()
        rest = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 10}).json()
        none = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 10}).json()
    assert (len(first), len(rest), none) == (10, 2, [])
    assert first[-1]["occurredAt"] <= rest[0]["occurredAt"]  # oldest first, as without removal


def test_peek_count_is_capped_by_what_exists(sandbox):
    with gateway(sandbox, "domestic") as client:
        events = client.get(spec.PEEK_EVENTS_PATH, params={"Count": 100}).json()
    assert len(events) == sandbox.settings.initial_domestic_events


@pytest.mark.parametrize("count", ["0", "101", "-1", "abc", "1.5", "", "9" * 50])
def test_peek_count_outside_1_to_100_is_a_400_with_a_message(sandbox, count):
    with gateway(sandbox, "domestic") as client:
        response = client.get(spec.PEEK_EVENTS_PATH, params={"Count": count})
    assert response.status_code == 400
    assert "not valid for Count" in response.json()["Message"]


GATEWAY_CALLS = [
    ("international", spec.DIAGNOSTICS_PATH),
    ("international", spec.PENDING_PLACEMENT_EVENTS_PATH),
    ("domestic", spec.PEEK_EVENTS_PATH),
]


@pytest.mark.parametrize(("role", "path"), GATEWAY_CALLS)
def test_missing_or_wrong_subscription_key_is_a_401(sandbox, role, path):
    bearer = {"Authorization": f"Bearer {token(sandbox, role)}"}
    missing = httpx.get(sandbox.gateway_url + path, headers=bearer)
    wrong = httpx.get(sandbox.gateway_url + path, headers={**bearer, "Subscription-Key": "x"})
    assert missing.status_code == wrong.status_code == 401
    assert "missing subscription key" in missing.json()["Message"]
    assert "invalid subscription key" in wrong.json()["Message"]


def _other_key_token() -> str:
    claims = {
        "iss": "workbench-sandbox",
        "client_id": "sis-demo",
        "scope": spec.INTL_SCOPE,
        "iat": int(time.time()),
        "exp": int(time.time()) + 600,
    }
    return jwt.encode(claims, b"not-the-sandbox-key-but-32-bytes!", algorithm="HS256")


BAD_AUTHORIZATION = {
    "missing": None,
    "empty bearer": "Bearer",
    "not bearer": "Basic dXNlcjpwYXNz",
    "malformed": "Bearer not.a.jwt",
    "wrongly signed": f"Bearer {_other_key_token()}",
}


@pytest.mark.parametrize("case", BAD_AUTHORIZATION)
@pytest.mark.parametrize(("role", "path"), GATEWAY_CALLS)
def test_bad_tokens_are_a_401_with_a_message(sandbox, role, path, case):
    headers = {"Subscription-Key": sandbox.credentials.subscription_key}
    if BAD_AUTHORIZATION[case] is not None:
        headers["Authorization"] = BAD_AUTHORIZATION[case]
    response = httpx.get(sandbox.gateway_url + path, headers=headers)
    assert response.status_code == 401
    assert response.json()["Message"]


def test_expired_token_is_a_401(sandbox):
    sandbox.set_faults(token_ttl=-5)  # issued already expired: no waiting
    with gateway(sandbox) as client:
        response = client.get(spec.DIAGNOSTICS_PATH)
    assert response.status_code == 401
    assert "expired" in response.json()["Message"]


def test_token_expires_when_the_sandbox_clock_passes_its_lifetime(sandbox):
    with gateway(sandbox) as client:  # the default lifetime: one hour
        assert client.get(spec.DIAGNOSTICS_PATH).status_code == 200
        sandbox.advance(hours=0.9)
        assert client.get(spec.DIAGNOSTICS_PATH).status_code == 200
        sandbox.advance(hours=0.2)
        response = client.get(spec.DIAGNOSTICS_PATH)
    assert response.status_code == 401
    assert "expired" in response.json()["Message"]


def test_the_workbench_renews_a_token_the_sandbox_clock_expired(sandbox, connect_to, exchanges):
    w = connect_to(sandbox)
    w.diagnostics()
    sandbox.advance(hours=2)  # the token the workbench holds is now expired for the partner
    w.diagnostics()
    assert sandbox.token_requests[sandbox.credentials.intl_client_id] == 2
    assert [e.status for e in exchanges if e.operation == "diagnostics"] == [200, 401, 200]


def test_token_of_another_interface_is_forbidden(sandbox):
    with gateway(sandbox, "domestic") as client:
        assert client.get(spec.DIAGNOSTICS_PATH).status_code == 403
    with gateway(sandbox, "international") as client:
        assert client.get(spec.PEEK_EVENTS_PATH).status_code == 403
    with gateway(sandbox, "supplier") as client:
        assert client.get(spec.PENDING_PLACEMENT_EVENTS_PATH).status_code == 403


def test_exchange_paths_do_not_exist_on_the_gateway(sandbox):
    with gateway(sandbox) as client:
        response = client.get(spec.SUPPLIER_PENDING_PATH)
    assert response.status_code == 404
    assert response.json()["Message"]
