"""No secret and no token in any log line, exception, recorded exchange or repr of a session."""

from __future__ import annotations

import json
import logging
import re
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import astuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus

import pytest

import workbench as wb
from tests.watched import secrets_of
from workbench.cli.doctor import render, run_checks
from workbench.config import load_profile
from workbench.http.session import Exchange

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
        *secrets_of(c),
        *secrets_of(other.credentials),
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


# Every character a form encoder treats apart: "+" "/" "=" "&" and a space.
ECHOED_SECRET = "s3cr+t/val=ue&x y"
ECHOED_PASSWORD = "pa ss+w/o=rd&Q7"


@pytest.fixture
def echoing_identity() -> Iterator[str]:
    """An identity server on loopback that refuses every token request, echoing the form it
    got in its error: as received, and each value percent-encoded (lower-case hex, ``%20``)."""

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            form = self.rfile.read(int(self.headers["Content-Length"])).decode()
            values = [v for _, v in parse_qsl(form)]
            lowered = [re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), quote(v)) for v in values]
            body = json.dumps(
                {
                    "error": "invalid_client",
                    "error_description": f"Could not read {form} (values: {' '.join(lowered)})",
                }
            ).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    server.timeout = 5
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_secrets_echoed_percent_encoded_are_masked(
    sandbox, connect_to, echoing_identity, tmp_path, capsys, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    w = connect_to(
        sandbox,
        WORKBENCH_AUTH_URL=echoing_identity,
        WORKBENCH_INTL_CLIENT_SECRET=ECHOED_SECRET,
        WORKBENCH_INTL_PASSWORD=ECHOED_PASSWORD,
        WORKBENCH_DB=str(tmp_path / "wb.db"),
    )
    w.store  # noqa: B018 - opened, so the token call is recorded in it
    with pytest.raises(wb.AuthError) as info:
        w.diagnostics()
    print(info.value, "".join(traceback.format_exception(info.value)))
    w.close()
    seen = capsys.readouterr().out + caplog.text
    data = b"".join(f.read_bytes() for f in tmp_path.glob("wb.db*")).decode("utf-8", "replace")
    assert "invalid_client" in seen and "/auth/connect/token" in data  # the error was recorded
    for secret in (ECHOED_SECRET, ECHOED_PASSWORD):
        for spelled in _url_spellings(secret):
            assert spelled not in seen, spelled
            assert spelled not in data, spelled


def _url_spellings(secret: str) -> set[str]:
    """The secret as written and as URL encoders write it, hex in either case."""
    spellings = {secret, quote(secret, safe=""), quote_plus(secret), quote(secret)}
    return spellings | {re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), s) for s in spellings}


@pytest.mark.parametrize(
    "value", ["2026", "20260220", "2026-02-20", "password", "a", "Pw#2026", "s3cr+t/val=ue&x y"]
)
def test_a_credential_of_any_length_or_form_is_taken_as_issued(tmp_path, value: str) -> None:
    env = {
        "WORKBENCH_GATEWAY_URL": "http://127.0.0.1:9",
        "WORKBENCH_SUBSCRIPTION_KEY": value,
        "WORKBENCH_DOMESTIC_TOKEN": "t0k",
    }
    assert value in load_profile(env=env).secrets()
    toml = tmp_path / "workbench.toml"
    toml.write_text('[profiles.prod.supplier]\nclient_secret_env = "PROD_SUPPLIER_SECRET"\n')
    profile = load_profile("prod", env={"PROD_SUPPLIER_SECRET": value}, config_path=toml)
    assert value in profile.secrets()


def test_the_secrets_of_an_unused_interface_are_never_read(tmp_path) -> None:
    toml = tmp_path / "workbench.toml"
    toml.write_text(
        '[profiles.p]\nexchange_url = "https://x.example"\ninterfaces = ["supplier"]\n'
        '[profiles.p.supplier]\nclient_id = "c"\nclient_secret_env = "SUPPLIER_SECRET"\n'
        '[profiles.p.intl]\nclient_id = "i"\npassword_env = "INTL_PASSWORD"\n'
    )

    class Reads(dict):
        def get(self, key, default=None):
            read.append(key)
            return super().get(key, default)

    read: list[str] = []
    env = Reads(SUPPLIER_SECRET="s", INTL_PASSWORD="7-chars", WORKBENCH_INTL_CLIENT_SECRET="x")
    profile = load_profile("p", env=env, config_path=toml)
    assert profile.interfaces == ("supplier",)
    assert profile.secrets() == ["s"]
    assert "INTL_PASSWORD" not in read and "WORKBENCH_INTL_CLIENT_SECRET" not in read


@pytest.mark.parametrize("before", [270, 290, 1990])
def test_an_error_answer_is_masked_before_it_is_cut(tmp_path, before: int) -> None:
    """A secret echoed across the length a message shows is never shown in part."""
    from tests.hostile.partner import HostilePartner
    from workbench import spec

    key = "k7Qz9Wp2Lm4Xv8Rt6Yn3Bc5Hd1Jf0"
    with HostilePartner() as partner:
        env = {**partner.env, "WORKBENCH_SUBSCRIPTION_KEY": key}
        partner.answer("GET", spec.PEEK_EVENTS_PATH, ("E" * before + f" key {key} no").encode(),
                       500)  # fmt: skip
        with wb.connect(env=env, db=tmp_path / "wb.db") as w, pytest.raises(wb.PartnerError) as e:
            w.peek_events(count=1)
        said = str(e.value) + (e.value.body or "")
        stored = b"".join(f.read_bytes() for f in tmp_path.glob("wb.db*"))
    pieces = {key[i : i + 8] for i in range(len(key) - 7)}
    assert not [p for p in pieces if p in said], said[-80:]
    assert not [p for p in pieces if p.encode() in stored]
