"""Uncertain sends are settled only from lists requested after they became uncertain."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.client.documents import response_xml
from tests.store.helpers import ago, exchange, listed, soon
from workbench import spec
from workbench.store import Store

LIST_URL = "http://127.0.0.1:8765/exchange" + spec.SUPPLIER_PENDING_PATH


def list_call(store: Store, at: datetime | None = None) -> int:
    """Record a supplier list call started ``at`` (now); its call id (what a pull hands the
    snapshot)."""
    started = at or datetime.now(UTC)
    return store.record_call(
        exchange(operation="supplier.pending_requests", url=LIST_URL, started_at=started)
    )


def uncertain(store: Store, request_id: str = "R-1") -> int:
    entry = store.outbox.begin("send_response", request_id, "<TResp/>")
    store.outbox.mark(entry, "uncertain", error="connection dropped after sending")
    return entry


def test_a_list_requested_before_the_send_still_showing_it_does_not_fail_it(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=ago(1))
    call = list_call(store)  # requested now; its answer arrives after the send was lost
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"), call_id=call)
    assert diff.resolved == ()
    assert store.db["outbox"].get(entry)["state"] == "uncertain"
    with pytest.raises(wb.DuplicateSend):
        store.outbox.begin("send_response", "R-1", "<TResp/>")


def test_a_list_requested_before_the_send_not_showing_it_infers_nothing(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    call = list_call(store)  # R-1 was answered elsewhere before our send even began
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-2"), call_id=call)
    assert diff.resolved == ()
    assert store.db["outbox"].get(entry)["state"] == "uncertain"
    assert diff.left == {"R-1": "elsewhere"}  # our send had not begun when the list was asked


def test_a_list_requested_after_the_send_turned_uncertain_settles_it(store: Store) -> None:
    store.record_snapshot(None, "supplier_requests", listed("R-1", "R-2"), taken_at=ago(1))
    failed, gone = uncertain(store, "R-1"), uncertain(store, "R-2")
    call = list_call(store, soon(16))  # past SETTLE_MARGIN: still listed can mean failed
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"), call_id=call)
    assert {d["entry_id"]: d["state"] for d in diff.resolved} == {failed: "failed", gone: "sent"}
    assert diff.left == {"R-2": "outbox"}


def test_still_listed_soon_after_the_send_is_too_soon_to_fail_it(store: Store) -> None:
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=soon(5))
    assert [d["state"] for d in diff.resolved] == ["uncertain"]
    assert "too soon to tell" in store.db["outbox"].get(entry)["resolution"]
    with pytest.raises(wb.DuplicateSend):
        store.outbox.begin("send_response", "R-1", "<TResp/>")
    decided = store.record_snapshot(None, "supplier_requests", listed("R-1"), taken_at=soon(16))
    assert [d["state"] for d in decided.resolved] == ["failed"]


def test_a_list_of_unknown_request_time_settles_nothing(store: Store) -> None:
    entry = uncertain(store)
    diff = store.record_snapshot(None, "supplier_requests", listed("R-1"))  # no call, no time
    assert diff.resolved == () and store.db["outbox"].get(entry)["state"] == "uncertain"


@pytest.mark.slow
def test_a_send_lost_while_a_pull_lists_is_posted_exactly_once(tmp_path: Path) -> None:
    partner = _Partner({"R-1", "R-2", "R-3"})
    try:
        env = {**partner.env, "WORKBENCH_READ_TIMEOUT": "60"}  # a held list is waited for
        with wb.connect(env=env, db=tmp_path / "db.sqlite") as w:
            w.pull(progress=False)  # a snapshot listing every request before the sends
            partner.drop_answers = True  # a send is processed, and its answer lost
            for request_id in ("R-1", "R-2", "R-3"):
                partner.held, partner.asked = threading.Event(), threading.Event()
                errors: list[BaseException] = []
                pull = threading.Thread(target=_run, args=(w.pull, errors), daemon=True)
                pull.start()
                assert partner.asked.wait(30)  # the pull's list is read, its answer held
                with pytest.raises(wb.TransportError, match="may or may not have processed"):
                    w.supplier.send_response(request_id, response_xml(request_id))
                partner.held.set()  # the list, still showing the request, is answered now
                pull.join(timeout=30)
                assert not pull.is_alive() and not errors
                partner.held = None
                shown = w.store.as_of()["supplier_requests"]["request_id"].tolist()
                assert request_id in shown  # the held list was answered, and showed it
                (entry,) = w.store.table("outbox", where="request_id = ?", params=[request_id])[
                    "id"
                ]
                # The list was requested before the send: it says nothing about the send.
                assert w.store.db["outbox"].get(int(entry))["state"] == "uncertain"
                with pytest.raises(wb.DuplicateSend):
                    w.supplier.send_response(request_id, response_xml(request_id))
                w.pull(progress=False)  # its list is requested after the send: gone, so sent
                row = w.store.db["outbox"].get(int(entry))
                assert row["state"] == "sent" and "inferred sent" in row["resolution"]
                assert partner.posts.count(request_id) == 1
    finally:
        partner.close()


def _run(pull: Callable[..., Any], errors: list[BaseException]) -> None:
    try:
        pull(progress=False)
    except BaseException as exc:  # reported by the test, not lost in the thread
        errors.append(exc)


class _Partner(ThreadingHTTPServer):
    """A supplier partner on 127.0.0.1 whose timing the test holds: a list is read when asked
    but answered only once ``held`` (when set) is released; a send is processed only once
    ``finish`` (when set) is released, or (``drop_answers``) processed and its answer dropped.
    Records the ids POSTed to."""

    def __init__(self, pending: set[str]) -> None:
        self.pending, self.posts = set(pending), []
        self.held: threading.Event | None = None
        self.asked, self.finish, self.processed = threading.Event(), None, threading.Event()
        self.drop_answers = False
        partner = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 30

            def _json(self, status: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.endswith(spec.SUPPLIER_PENDING_PATH):
                    listed = [{"RequestID": r} for r in sorted(partner.pending)]
                    if (held := partner.held) is not None:
                        partner.asked.set()
                        held.wait(30)
                    if listed:
                        self._json(200, listed)
                    else:
                        self._json(400, {"Message": spec.NO_REQUESTS_FOUND})
                elif self.path.endswith("/no_response"):
                    self._json(400, {"Message": spec.NO_TRANSCRIPTS_FOUND})
                elif "transcriptrequests/" in self.path:
                    self._json(200, {"RequestID": self.path.rsplit("/", 1)[-1], "PESCXML": None})
                else:
                    self._json(200, [])

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request_id = self.path.split("/")[-2]
                partner.posts.append(request_id)
                if partner.finish is not None:  # a slow backend: still working when we give up
                    partner.finish.wait(30)
                partner.pending.discard(request_id)
                partner.processed.set()
                if partner.drop_answers:
                    self.close_connection = True  # processed, and the answer never sent
                else:
                    self._json(200, {"RequestID": request_id})

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self) -> None:
        for gate in (self.held, self.finish):
            if gate is not None:
                gate.set()
        self.shutdown()
        self.server_close()

    @property
    def env(self) -> dict[str, str]:
        url = f"http://127.0.0.1:{self.server_address[1]}"
        return {
            "WORKBENCH_GATEWAY_URL": url,
            "WORKBENCH_EXCHANGE_URL": url,
            "WORKBENCH_SUBSCRIPTION_KEY": "key-0123456789",
            **{f"WORKBENCH_{r}_TOKEN": f"token-{r.lower()}-0123" for r in _ROLES},
            "WORKBENCH_MAX_ATTEMPTS": "1",
            "WORKBENCH_READ_TIMEOUT": "1",  # a send held unfinished is given up
        }


_ROLES = ("INTL", "DOMESTIC", "SUPPLIER", "CONSUMER")


@pytest.mark.slow
def test_a_send_the_partner_is_still_processing_is_not_failed_by_the_next_list(
    tmp_path: Path,
) -> None:
    partner = _Partner({"R-1"})
    partner.finish = threading.Event()  # released by the test, after the client gave up
    try:
        with wb.connect(env=partner.env, db=tmp_path / "db.sqlite") as w:
            w.pull(progress=False)  # R-1 is listed before the send
            with pytest.raises(wb.TransportError):  # read timeout: the answer is given up
                w.supplier.send_response("R-1", response_xml("R-1"))
            w.pull(progress=False)  # the partner still lists R-1, still processing
            [entry] = w.store.table("outbox")[["state", "resolution"]].to_dict("records")
            assert entry["state"] == "uncertain" and "too soon" in entry["resolution"]
            with pytest.raises(wb.DuplicateSend):
                w.supplier.send_response("R-1", response_xml("R-1"))
        partner.finish.set()
        assert partner.processed.wait(30)
        assert partner.posts == ["R-1"]
    finally:
        partner.close()
