"""The workbench against a hostile sandbox (``tests.hostile.sandbox``).

No answer may hang, crash or flood a pull; a send is never made twice.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.conftest import FAST
from workbench import pesc
from workbench.cli import app

SUPPLIER_LIST = r"/transcriptrequests/no_response"
SUPPLIER_DETAILS = r"/api/transcriptrequests/[0-9a-f]{32}$"
ONE_ATTEMPT = {**FAST, "WORKBENCH_MAX_ATTEMPTS": "1"}


@pytest.fixture
def connected(sandbox_factory, connect_to, tmp_path: Path):
    """``connected(env_overrides, **sandbox_overrides)``: (sandbox, workbench on a fresh db)."""

    def make(env: dict[str, str] | None = None, **overrides):
        sb = sandbox_factory(**{"initial_requests": 3, "initial_transcripts": 3, **overrides})
        db = tmp_path / f"{sb.port}.sqlite"
        return sb, connect_to(sb, db=db, **{**ONE_ATTEMPT, **(env or {})})

    return make


def _one_detail(sb) -> str:
    """A path_pattern that hits the detail of one pending request only."""
    return rf"/api/transcriptrequests/{sb.pending_request_ids()[0]}$"


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    "fault",
    [
        {"trickle_rate": 1.0, "trickle_interval_s": 0.01},
        {"trickle_rate": 1.0, "trickle_interval_s": 0.01, "trickle_forever": True},
        {"header_flood_rate": 1.0, "trickle_interval_s": 0.2},
    ],
    ids=["trickle", "trickle_forever", "header_flood"],
)
def test_an_answer_that_never_ends_is_cut_by_the_call_deadline(connected, fault):
    sb, w = connected({"WORKBENCH_CALL_DEADLINE": "2"})
    stuck = sb.pending_request_ids()[0]
    sb.set_faults(path_pattern=_one_detail(sb), **fault)
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    assert [f["id"] for f in summary.failures] == [stuck]
    assert summary.lists["supplier_requests"].details_fetched == 2
    assert summary.lists["consumer_transcripts"].details_fetched == 3
    sb.set_faults(trickle_rate=0.0, header_flood_rate=0.0)
    again = w.pull(progress=False)  # the first pull let go of the lock
    assert again.status == "ok"
    assert again.lists["supplier_requests"].details_fetched == 1


@pytest.mark.timeout(120)
def test_a_gzip_bomb_fails_its_call_naming_the_cap(connected):
    sb, w = connected({"WORKBENCH_MAX_ANSWER_BYTES": "1048576"})
    bombed = sb.pending_request_ids()[0]
    sb.set_faults(gzip_bomb_bytes=50_000_000, path_pattern=_one_detail(sb))
    summary = w.pull(progress=False)
    assert summary.status == "partial"
    (failure,) = summary.failures
    assert failure["id"] == bombed
    assert re.search(r"max_answer_bytes|1048576|1 ?Mi?B", failure["error"], re.IGNORECASE)
    stored = w.store.table("transcript_requests")
    assert stored["detail_call_id"].notna().sum() == 2
    assert len(w.store.table("transcripts_received")) == 3


@pytest.mark.parametrize("shape", ["null", "object", "scalar"])
def test_a_list_that_is_not_an_array_fails_and_nothing_departs(
    sandbox_factory, tmp_path, monkeypatch, shape
):
    sb = sandbox_factory(initial_requests=3, initial_transcripts=3)
    for name, value in {**sb.env, **ONE_ATTEMPT}.items():
        monkeypatch.setenv(name, value)
    db = str(tmp_path / "shape.db")
    runner = CliRunner()
    first = runner.invoke(app, ["pull", "--db", db])
    assert first.exit_code == 0, first.output
    sb.set_faults(list_shape=shape, path_pattern=SUPPLIER_LIST)
    second = runner.invoke(app, ["pull", "--db", db])
    assert second.exit_code == 1, second.output
    assert "Traceback" not in second.output
    with wb.connect(env=sb.env, db=db) as w:
        assert list(w.store.table("runs")["status"]) == ["ok", "partial"]
        requests = w.store.table("transcript_requests")
        assert len(requests) == 3
        assert requests["left_at"].isna().all()  # a broken list is no evidence of departure
        assert (requests["on_list"] == 1).all()


@pytest.mark.parametrize("kind", ["deep", "surrogate_id", "nan"])
@pytest.mark.parametrize("where", [SUPPLIER_LIST, SUPPLIER_DETAILS], ids=["list", "details"])
def test_hostile_json_fails_the_list_or_item_and_the_rest_is_stored(connected, kind, where):
    _, w = connected(hostile_json=kind, path_pattern=where)
    summary = w.pull(progress=False)  # no exception escapes
    assert summary.status == "partial"
    assert summary.failures
    assert all("Traceback" not in f["error"] for f in summary.failures)
    assert len(w.store.table("transcripts_received")) == 3
    assert summary.lists["consumer_transcripts"].details_fetched == 3
    w.store.table("calls")  # what was recorded reads back


@pytest.mark.parametrize("kind", ["empty", "no_content", "text", "html"])
def test_a_send_answered_without_json_is_sent_and_never_sent_twice(connected, kind):
    sb, w = connected()
    request_id = sb.pending_request_ids()[0]
    request = w.supplier.request(request_id)
    response = pesc.build_response(request.loc[0, "pescxml"], status="Hold",
                                   hold_reason="Financial")  # fmt: skip
    sb.set_faults(success_body=kind)
    w.supplier.send_response(request_id, response)
    assert len(sb.received) == 1
    assert list(w.store.table("outbox")["state"]) == ["sent"]
    with pytest.raises(wb.DuplicateSend):
        w.supplier.send_response(request_id, response)
    assert len(sb.received) == 1


def test_an_identity_error_echoing_the_request_leaks_no_secret(connected, tmp_path):
    secret = "wr0ng s3cret/+&%-hostile"
    _, w = connected({"WORKBENCH_SUPPLIER_CLIENT_SECRET": secret}, echo_errors=True)
    spellings = {secret, quote_plus(secret), quote(secret, safe=""), quote(secret)}
    spellings |= {s.lower() for s in spellings}
    with pytest.raises(wb.AuthError) as info:
        w.supplier.pending_requests()
    assert "invalid_client" in str(info.value)
    assert not [s for s in spellings if s in str(info.value)]
    w.pull(progress=False)
    calls = w.store.table("calls")
    assert len(calls)
    text = "\n".join(map(str, calls.to_numpy().ravel()))
    assert not [s for s in spellings if s in text]
    w.close()
    for path in tmp_path.glob("db0.sqlite*"):
        data = path.read_bytes()
        assert not [s for s in spellings if s.encode() in data]


def test_a_detail_mislabelled_gzip_fails_alone(sandbox_factory, connect_to):
    sb = sandbox_factory(initial_requests=3, requests_per_hour=0, closed_elsewhere_per_hour=0)
    request_id = sb.pending_request_ids()[0]
    sb.set_faults(bad_encoding=True, path_pattern=re.escape(request_id) + "$")
    summary = connect_to(sb).pull(progress=False)
    assert summary.status == "partial"
    assert [f["id"] for f in summary.failures] == [request_id]
    assert "Content-Encoding" in summary.failures[0]["error"]
