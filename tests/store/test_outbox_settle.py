"""Uncertain sends are settled only from lists requested after they became uncertain."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.client.documents import response_xml
from tests.store.helpers import ago, exchange, listed
from workbench import spec
from workbench.store import Store

LIST_URL = "http://127.0.0.1:8765/exchange" + spec.SUPPLIER_PENDING_PATH


def list_call(store: Store) -> int:
    """Record a supplier list call started now; its call id (what a pull hands the snapshot)."""
    return store.record_call(
        exchange(operation="supplier.pending_requests", url=LIST_URL, started_at=datetime.now(UTC))
    )


def uncertain(store: Store, request_id: str = "R-1") -> int:
    entry = store.outbox.begin("send_response", request_id, "<TResp/>")
    store.outbox.mark_uncertain(entry, error="connection dropped after sending")
    return entry


def test_a_list_requested_before_the_send_still_showing_it_does_not_fail_it(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=ago(1))
    call = list_call(store)  # requested now; its answer arrives after the send was lost
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"), call_id=call)
    assert diff.resolved == ()
    assert store.outbox.get(entry)["state"] == "uncertain"
    with pytest.raises(wb.DuplicateSend):
        store.outbox.begin("send_response", "R-1", "<TResp/>")


def test_a_list_requested_before_the_send_not_showing_it_infers_nothing(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    call = list_call(store)  # R-1 was answered elsewhere before our send even began
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-2"), call_id=call)
    assert diff.resolved == ()
    assert store.outbox.get(entry)["state"] == "uncertain"
    assert diff.left == {"R-1": "elsewhere"}  # our send had not begun when the list was asked


def test_a_list_requested_after_the_send_turned_uncertain_settles_it(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    failed, gone = uncertain(store, "R-1"), uncertain(store, "R-2")
    call = list_call(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"), call_id=call)
    assert {d["entry_id"]: d["state"] for d in diff.resolved} == {failed: "failed", gone: "sent"}
    assert diff.left == {"R-2": "outbox"}


def test_a_list_of_unknown_request_time_settles_nothing(store: Store) -> None:
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"))  # no call, no time
    assert diff.resolved == () and store.outbox.get(entry)["state"] == "uncertain"


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    for _ in range(400):  # 20 s at most
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_a_send_lost_while_a_pull_lists_is_posted_exactly_once(
    sandbox_factory: Callable[..., Any], tmp_path: Path
) -> None:
    sb = sandbox_factory(initial_requests=6, requests_per_hour=0, closed_elsewhere_per_hour=0)
    listing = ("GET", spec.SUPPLIER_PENDING_PATH)
    with wb.connect(env=sb.env, db=tmp_path / "db.sqlite") as w:
        w.pull(progress=False)  # tokens, and a snapshot listing every request before the sends
        for request_id in sb.pending_request_ids()[:3]:
            asked = sb.hits[listing]
            sb.set_faults(latency_ms=1500)  # the pull's list is answered 1.5 s after it arrives
            errors: list[BaseException] = []
            pull = threading.Thread(target=_run, args=(w.pull, errors), daemon=True)
            pull.start()
            _wait_for(lambda a=asked: sb.hits[listing] > a, "the pull's list request")
            time.sleep(0.2)  # let the sandbox take that list's latency in before it changes
            # The send is processed at once, and its answer lost: uncertain, the list in flight.
            sb.set_faults(latency_ms=0, drop_after_rate=1.0, path_pattern="/responses$")
            with pytest.raises(wb.TransportError, match="may or may not have processed"):
                w.supplier.send_response(request_id, response_xml(request_id))
            sb.set_faults(drop_after_rate=0.0, path_pattern="")
            pull.join(timeout=30)
            assert not pull.is_alive() and not errors
            (entry,) = w.store.table("outbox", where="request_id = ?", params=[request_id])["id"]
            # The list was requested before the send: it still showed the request, and says
            # nothing about the send.
            assert w.store.outbox.get(entry)["state"] == "uncertain"
            with pytest.raises(wb.DuplicateSend):
                w.supplier.send_response(request_id, response_xml(request_id))
            w.pull(progress=False)  # its list is requested after the send: gone, so sent
            row = w.store.outbox.get(entry)
            assert row["state"] == "sent" and "inferred sent" in row["resolution"]
            posts = [r for r in sb.received if r["request_id"] == request_id]
            assert len(posts) == 1


def _run(pull: Callable[..., Any], errors: list[BaseException]) -> None:
    try:
        pull(progress=False)
    except BaseException as exc:  # reported by the test, not lost in the thread
        errors.append(exc)
