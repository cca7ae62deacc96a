"""The session on the wire: headers, retries under faults, POSTs at most once, recording."""

from __future__ import annotations

import socket
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

import workbench as wb
from workbench.http.limits import retry_after
from workbench.http.masking import MASK, Redactor
from workbench.http.session import Exchange
from workbench.sandbox import Sandbox
from workbench.spec import DIAGNOSTICS_PATH, SUPPLIER_REQUEST_PATH

from .documents import response_xml

FAULTS = {"error_rate": 0.15, "rate_limit_rate": 0.1, "retry_after_s": 0.2, "drop_rate": 0.1}


def test_gateway_and_exchange_headers(sandbox: Sandbox, w: wb.Workbench, exchanges) -> None:
    w.diagnostics()
    w.supplier.pending_requests()
    by_interface = {e.interface: e for e in exchanges if e.interface != "identity"}
    gateway = by_interface["international"].request_headers
    exchange = {k.lower(): v for k, v in by_interface["supplier"].request_headers.items()}
    gateway = {k.lower(): v for k, v in gateway.items()}
    assert gateway["subscription-key"] == MASK
    assert gateway["accept"] == "application/json"
    assert gateway["authorization"] == MASK
    assert gateway["user-agent"] == f"workbench/{wb.__version__}"
    assert "subscription-key" not in exchange
    assert exchange["user-agent"] == f"workbench/{wb.__version__}"


def test_exchange_sends_a_subscription_key_only_when_configured(
    sandbox: Sandbox, connect_to, exchanges
) -> None:
    w = connect_to(sandbox, WORKBENCH_EXCHANGE_SUBSCRIPTION_KEY="exchange-key-1234")
    w.consumer.pending_transcripts()
    sent = next(e for e in exchanges if e.interface == "consumer").request_headers
    assert {k.lower(): v for k, v in sent.items()}["subscription-key"] == MASK


def test_wrong_subscription_key_is_an_auth_error(sandbox: Sandbox, connect_to) -> None:
    w = connect_to(sandbox, WORKBENCH_SUBSCRIPTION_KEY="not-the-key")
    with pytest.raises(wb.AuthError) as info:
        w.diagnostics()
    assert "WORKBENCH_SUBSCRIPTION_KEY" in str(info.value)
    assert "subscription key" in str(info.value)  # the partner's own words
    assert "not-the-key" not in str(info.value)


def test_wrong_role_is_a_partner_error_with_status(sandbox: Sandbox, connect_to) -> None:
    c = sandbox.credentials
    w = connect_to(
        sandbox,
        WORKBENCH_SUPPLIER_CLIENT_ID=c.consumer_client_id,
        WORKBENCH_SUPPLIER_CLIENT_SECRET=c.consumer_client_secret,
    )
    with pytest.raises(wb.PartnerError) as info:
        w.supplier.pending_requests()
    assert info.value.status == 403
    assert "supplier" in str(info.value)


def test_reads_succeed_under_faults(sandbox: Sandbox, w: wb.Workbench, exchanges) -> None:
    sandbox.set_faults(**FAULTS, drop_after_rate=0.05)
    ids = sandbox.pending_request_ids()
    for _ in range(3):
        assert len(w.diagnostics()) == 1
        assert len(w.pending_placement_events()) > 0
        assert len(w.peek_events(count=5)) == 5
        assert list(w.supplier.pending_requests()["request_id"]) == ids
        assert len(w.consumer.pending_transcripts()) > 0
    details = w.supplier.requests(ids)
    assert details["error"].isna().all()
    statuses = Counter(e.status for e in exchanges)
    assert statuses[429] + statuses[500] + statuses[503] + statuses[None] > 0  # faults did fire
    assert max(e.attempt for e in exchanges) > 1


SENDS = r"/(responses|transcripts|acknowledgment)$"  # faults on the POSTs, not on their checks


def test_post_is_not_retried_after_a_5xx_or_429(sandbox: Sandbox, w: wb.Workbench) -> None:
    request_id = sandbox.pending_request_ids()[0]
    sandbox.set_faults(error_rate=1.0, path_pattern=SENDS)  # the send's check reads first
    with pytest.raises(wb.PartnerError) as info:
        w.supplier.send_response(request_id, response_xml(request_id))
    assert info.value.status in (500, 503)
    assert "not retried" in str(info.value)
    assert sandbox.hits[("POST", f"/api/transcriptrequests/{request_id}/responses")] == 1
    sandbox.set_faults(error_rate=0.0, rate_limit_rate=1.0)
    # After a 5xx the send is uncertain in the outbox: a blind second send is refused...
    with pytest.raises(wb.DuplicateSend):
        w.supplier.send_response(request_id, response_xml(request_id))
    with pytest.raises(wb.PartnerError) as info:  # ...unless forced
        w.supplier.send_response(request_id, response_xml(request_id), force=True)
    assert info.value.status == 429
    assert sandbox.hits[("POST", f"/api/transcriptrequests/{request_id}/responses")] == 2
    assert sandbox.received == []


def test_post_dropped_after_processing_is_not_resent(sandbox: Sandbox, w: wb.Workbench) -> None:
    request_id = sandbox.pending_request_ids()[0]
    sandbox.set_faults(drop_after_rate=1.0, path_pattern=SENDS)
    with pytest.raises(wb.TransportError, match="may or may not have processed"):
        w.supplier.send_response(request_id, response_xml(request_id))
    assert [r["request_id"] for r in sandbox.received] == [request_id]
    assert sandbox.hits[("POST", f"/api/transcriptrequests/{request_id}/responses")] == 1


def test_posts_under_faults_reach_the_partner_at_most_once(sandbox_factory, connect_to) -> None:
    sb = sandbox_factory(initial_requests=40)
    w = connect_to(sb)
    w.supplier.pending_requests()  # tokens first: the identity server has no faults anyway
    sb.set_faults(**FAULTS, drop_after_rate=0.1)
    outcomes: Counter[str] = Counter()
    sent_ok: list[str] = []
    for request_id in sb.pending_request_ids():
        try:
            w.supplier.send_response(request_id, response_xml(request_id))
            sent_ok.append(request_id)
            outcomes["ok"] += 1
        except wb.WorkbenchError as exc:
            outcomes[type(exc).__name__] += 1
    per_id = Counter(r["request_id"] for r in sb.received)
    assert per_id and max(per_id.values()) == 1
    assert all(per_id[i] == 1 for i in sent_ok)
    assert outcomes["ok"] < 40  # the faults did bite


def test_connect_failures_are_retried_then_reported(sandbox: Sandbox, connect_to, exchanges):
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    w = connect_to(
        sandbox, WORKBENCH_EXCHANGE_URL=f"http://127.0.0.1:{port}", WORKBENCH_MAX_ATTEMPTS="3"
    )
    with pytest.raises(wb.TransportError, match=r"could not reach.*3 attempt"):
        w.supplier.pending_requests()
    failed = [e for e in exchanges if e.interface == "supplier"]
    assert [e.attempt for e in failed] == [1, 2, 3]
    assert all(e.status is None and "ConnectError" in (e.error or "") for e in failed)


def test_recorder_sees_every_exchange_redacted(sandbox: Sandbox, w: wb.Workbench, exchanges):
    w.supplier.pending_requests()
    token, listing = exchanges
    assert isinstance(token, Exchange)
    assert (token.interface, token.operation, token.method, token.status) == (
        "identity",
        "token",
        "POST",
        200,
    )
    assert f"client_secret={MASK}" in token.request_body
    assert sandbox.credentials.supplier_client_secret not in token.request_body
    assert MASK in token.response_body and "access_token" in token.response_body
    assert listing.operation == "supplier.pending_requests"
    assert listing.url.endswith("/exchange/api/transcriptrequests/no_response")
    assert listing.attempt == 1
    assert listing.duration_s >= 0
    assert listing.started_at.tzinfo is not None
    assert "RequestID" in listing.response_body


@pytest.mark.parametrize("slash", ["", "/"])
def test_paths_join_the_base_url_as_httpx_joins_them(
    sandbox: Sandbox, connect_to, exchanges, slash: str
) -> None:
    base = sandbox.env["WORKBENCH_EXCHANGE_URL"].rstrip("/")
    w = connect_to(sandbox, WORKBENCH_EXCHANGE_URL=base + slash)
    request_id = sandbox.pending_request_ids()[0]
    w.supplier.request(request_id)
    w.supplier.request(request_id)  # the second call reuses the first one's retry policy
    urls = [e.url for e in exchanges if e.interface == "supplier"]
    assert urls == [f"{base}/api/transcriptrequests/{request_id}"] * 2
    hits = sandbox.hits[("GET", f"/api/transcriptrequests/{request_id}")]
    assert hits == 2


def test_a_failing_recorder_does_not_break_calls(sandbox: Sandbox, caplog) -> None:
    def broken(exchange: Exchange) -> None:
        raise RuntimeError("disk full")

    with wb.connect(env=sandbox.env, recorder=broken) as w:
        assert len(w.supplier.pending_requests()) > 0
        assert w.session.unrecorded == 2  # the token call, the list call
    assert "was not recorded: RuntimeError: disk full" in caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize(
    ("header", "expected"),
    [("3", 3.0), ("0", 0.0), (None, None), ("soon", None), ("", None)],
)
def test_retry_after_seconds(header, expected) -> None:
    assert retry_after(header) == expected


def test_retry_after_http_date() -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 <= (retry_after(format_datetime(when, usegmt=True)) or 0) <= 30


def test_redactor_masks_names_values_jwts_and_bearers() -> None:
    jwt_like = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
    r = Redactor(["hunter2-secret"])
    r.add("learned-token-value")
    assert r.text("pw=hunter2-secret tok=learned-token-value") == f"pw={MASK} tok={MASK}"
    assert jwt_like not in r.text(f"got {jwt_like} back")
    assert r.text("Authorization: Bearer abcdefghijkl") == f"Authorization: Bearer {MASK}"
    assert r.headers({"Subscription-Key": "k", "Accept": "x"}) == {
        "Subscription-Key": MASK,
        "Accept": "x",
    }
    assert "s3" not in r.body(b"client_secret=s3&scope=a", "application/x-www-form-urlencoded")
    assert r.body(b'{"access_token": "abc", "n": 1}', "application/json") == (
        f'{{"access_token": "{MASK}", "n": 1}}'
    )
    assert r.body(b'{"Message": "fine"}', "application/json") == '{"Message": "fine"}'
    assert (
        r.url("https://x.test/p?access_token=zzz9&a=1")
        == f"https://x.test/p?access_token={MASK}&a=1"
    )


def test_read_timeout_is_a_setting(sandbox: Sandbox, connect_to, exchanges) -> None:
    w = connect_to(sandbox, WORKBENCH_READ_TIMEOUT="0.05", WORKBENCH_MAX_ATTEMPTS="2")
    w.consumer.pending_transcripts()  # the token first: the identity server gets slow too
    exchanges.clear()
    sandbox.set_faults(latency_ms=300)
    with pytest.raises(wb.TransportError, match=r"after 2 attempt\(s\) \(ReadTimeout"):
        w.consumer.pending_transcripts()
    assert [e.attempt for e in exchanges] == [1, 2]
    assert all(e.status is None for e in exchanges)


def test_frames_carry_the_call_id_a_recorder_returns(sandbox: Sandbox) -> None:
    ids = iter(range(1, 1000))

    def store(exchange: Exchange) -> int:  # what the snapshot store will do
        return next(ids)

    with wb.connect(env=sandbox.env, recorder=store) as w:
        first = w.supplier.pending_requests()  # token request = 1, the list = 2
        second = w.diagnostics()  # token = 3, diagnostics = 4
        assert (first.attrs["call_id"], second.attrs["call_id"]) == (2, 4)
        answer = w.session.call("international", "GET", DIAGNOSTICS_PATH, operation="diag")
        assert answer.call_id == 5 and answer.value["customerCode"]
    with wb.connect(env=sandbox.env) as w:
        call_id = w.supplier.pending_requests().attrs["call_id"]  # the store's own id
        assert w.store.db["calls"].get(call_id)["operation"] == "supplier.pending_requests"


def test_a_failed_call_carries_its_call_id(sandbox: Sandbox) -> None:
    ids = iter(range(1, 1000))
    with wb.connect(env=sandbox.env, recorder=lambda exchange: next(ids)) as w:
        with pytest.raises(wb.NotFound) as info:
            w.supplier.request("NO-SUCH-REQUEST")  # token request = 1, the detail = 2
        assert info.value.call_id == 2


def test_concurrent_calls_each_get_their_own_call_id(sandbox: Sandbox) -> None:
    recorded: dict[int, str] = {}
    lock = threading.Lock()

    def store(exchange: Exchange) -> int:
        with lock:
            recorded[len(recorded) + 1] = exchange.url
            return len(recorded)

    request_ids = sandbox.pending_request_ids()[:6]
    with wb.connect(env=sandbox.env, recorder=store) as w:
        w.supplier.pending_requests()  # the token, before the threads
        paths = [SUPPLIER_REQUEST_PATH.format(id=rid) for rid in request_ids]
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(
                pool.map(lambda p: w.session.call("supplier", "GET", p, operation="d"), paths)
            )
        # The id is the store's (recorded after the given recorder), each call's own exchange.
        urls = [w.store.db["calls"].get(answer.call_id)["url"] for answer in answers]
    assert len(recorded) >= len(paths)
    assert all(url.endswith(path) for url, path in zip(urls, paths, strict=True)), urls
