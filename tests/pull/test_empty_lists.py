"""An empty exchange list, as the spec writes it (400 "No requests found"), in another error body
or as a partner may (200 []), is an empty list to every reader: the pending lists, the pull and
reconcile."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import workbench as wb
from workbench import reconcile
from workbench.http.session import Exchange
from workbench.sandbox import Sandbox

LISTS = (
    "supplier.pending_requests", "consumer.pending_transcripts",
    "supplier.pull_list", "consumer.pull_list",
)  # fmt: skip


@pytest.mark.parametrize(("empty_list", "error_body", "status", "body"), [
    ("message", "message", 400, '{"Message": "No requests found"}'),
    ("message", "problem", 400,
     '{"type":"about:blank","title":"Bad Request","status":400,"detail":"No requests found"}'),
    ("message", "text", 400, "No requests found"),
    ("array", "message", 200, "[]"),
])  # fmt: skip
def test_an_empty_exchange_list_is_empty_whatever_the_partner_answers(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    exchanges: list[Exchange],
    empty_list: str,
    error_body: str,
    status: int,
    body: str,
) -> None:
    sb = sandbox_factory(
        empty_list=empty_list, error_body=error_body, initial_requests=0, initial_transcripts=0
    )
    w = connect_to(sb)
    requests, transcripts = w.supplier.pending_requests(), w.consumer.pending_transcripts()
    assert requests.empty and "request_id" in requests.columns
    assert transcripts.empty and "request_id" in transcripts.columns
    summary = w.pull(progress=False)
    assert summary.status == "ok", str(summary)

    listed = [e for e in exchanges if e.operation in LISTS]
    assert {e.operation for e in listed} == set(LISTS)
    assert {e.status for e in listed} == {status}
    assert any(e.response_body.replace(" ", "") == body.replace(" ", "") for e in listed)
    snapshots = w.store.table("latest_snapshots").set_index("list_name")["item_count"]
    assert snapshots[["supplier_requests", "consumer_transcripts"]].tolist() == [0, 0]
    assert w.store.meta("partner_exchange_url") == sb.exchange_url  # it reached the partner
    rec = reconcile.reconcile(reconcile.load(w.store))
    assert rec.requests.empty and rec.transcripts.empty
    assert (rec.headline["open_requests"], rec.headline["transcripts_awaiting_ack"]) == (0, 0)
