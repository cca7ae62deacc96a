"""No secret and no token in any log line, exception, recorded exchange or repr of a session."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable
from dataclasses import astuple
from typing import Any

import pytest

from workbench.doctor import render, run_checks
from workbench.http import Exchange

from .documents import response_xml


@pytest.mark.slow
def test_a_whole_session_leaks_nothing(sandbox_factory, connect_to, exchanges, caplog) -> None:
    for name in ("", "httpx", "httpcore", "workbench", "uvicorn", "tenacity"):
        caplog.set_level(logging.DEBUG, logger=name)
    sb = sandbox_factory(token_ttl=2)
    other = sandbox_factory()
    seen: list[str] = []

    def attempt(call: Callable[[], Any]) -> None:
        try:
            result = call()
            seen.append(repr(result))
        except Exception as exc:
            seen.append("".join(traceback.format_exception(exc)))
            seen.append(repr(exc) + repr(getattr(exc, "body", "")))

    w = connect_to(sb)
    sb.set_faults(error_rate=0.1, rate_limit_rate=0.1, retry_after_s=0.1, drop_rate=0.05)
    request_ids, transcript_ids = sb.pending_request_ids(), sb.pending_transcript_ids()
    for _ in range(2):
        attempt(w.diagnostics)
        attempt(w.pending_placement_events)
        attempt(lambda: w.peek_events(count=3))
        attempt(w.supplier.pending_requests)
        attempt(w.consumer.pending_transcripts)
        attempt(lambda: w.supplier.requests(request_ids[:10]))
        attempt(lambda: w.consumer.transcripts(transcript_ids[:5]))
    attempt(lambda: w.supplier.send_response(request_ids[0], response_xml(request_ids[0])))
    attempt(lambda: w.consumer.send_acknowledgment(transcript_ids[0]))
    attempt(lambda: w.supplier.request("0123456789abcdef0123456789abcdef"))
    attempt(lambda: w.supplier.request("bad_value"))
    attempt(lambda: w.peek_events(count=500))
    sb.set_faults(error_rate=0.0, rate_limit_rate=0.0, drop_rate=0.0)
    seen.append(render(run_checks(w)) + repr(w) + repr(w.profile))

    c = sb.credentials
    other_token = _token(other)
    broken = [
        {"WORKBENCH_SUPPLIER_CLIENT_SECRET": c.supplier_client_secret + "-wrong"},
        {"WORKBENCH_INTL_PASSWORD": c.intl_password + "-wrong"},
        {"WORKBENCH_SUBSCRIPTION_KEY": c.subscription_key + "-wrong"},
        {"WORKBENCH_SUPPLIER_TOKEN": other_token},  # a real token, of another partner
        {"WORKBENCH_AUTH_URL": other.auth_url},  # tokens the exchange refuses (2 x 401)
        {"WORKBENCH_EXCHANGE_URL": "http://127.0.0.1:9", "WORKBENCH_MAX_ATTEMPTS": "2"},
    ]
    for env in broken:
        bad = connect_to(sb, **env)
        attempt(bad.diagnostics)
        attempt(bad.supplier.pending_requests)
        seen.append(render(run_checks(bad)) + repr(bad.profile))

    secrets = [
        *c.secrets(),
        *other.credentials.secrets(),
        *(
            v
            for env in broken
            for k, v in env.items()
            if k.endswith(("SECRET", "PASSWORD", "KEY", "TOKEN"))
        ),
        *sb.issued_tokens,
        *other.issued_tokens,
    ]
    recorded = [str(astuple(e)) for e in exchanges]
    assert len(sb.issued_tokens) >= 5  # several tokens were issued and used
    assert any(isinstance(e, Exchange) and e.interface == "identity" for e in exchanges)
    assert caplog.records, "logs were captured"
    haystacks = {"logs": caplog.text, "errors and results": "\n".join(seen)}
    haystacks["exchanges"] = "\n".join(recorded)
    for where, text in haystacks.items():
        leaked = [s[:12] + "..." for s in secrets if s and s in text]
        assert not leaked, f"secrets in {where}: {leaked}"


def _token(sb) -> str:
    import httpx

    c = sb.credentials
    answer = httpx.post(
        sb.auth_url + "/auth/connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": c.supplier_client_id,
            "client_secret": c.supplier_client_secret,
            "scope": "transcript_api",
        },
    )
    return answer.json()["access_token"]
