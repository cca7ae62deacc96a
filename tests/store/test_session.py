"""The store as the session's recorder, against the real sandbox: every exchange lands in
``calls`` with its id, and the file holds none of the profile's secrets or issued tokens."""

from __future__ import annotations

from pathlib import Path

from tests.store.helpers import store_detail
from workbench.config import load_profile
from workbench.http.session import Session
from workbench.sandbox import Sandbox
from workbench.spec import (
    PEEK_EVENTS_PATH,
    PENDING_PLACEMENT_EVENTS_PATH,
    SUPPLIER_PENDING_PATH,
    SUPPLIER_REQUEST_PATH,
)
from workbench.store import Store


def test_a_recorded_session_leaves_no_secret_in_the_file(sandbox: Sandbox, tmp_path: Path) -> None:
    profile = load_profile("sandbox", env={}, sandbox_env=sandbox.env)
    path = tmp_path / "wb.db"
    store = Store(path, secrets=profile.secrets())
    run = store.begin_run(kind="pull", profile=profile.name)
    session = Session(profile, recorder=lambda exchange: store.record_call(exchange, run_id=run))
    try:
        listed = session.call(
            "supplier", "GET", SUPPLIER_PENDING_PATH, operation="supplier.pending_requests"
        ).value
        first = listed[0]["RequestID"]
        detail = session.call(
            "supplier",
            "GET",
            SUPPLIER_REQUEST_PATH.format(id=first),
            operation="supplier.request",
        ).value
        session.call(
            "international", "GET", PENDING_PLACEMENT_EVENTS_PATH, operation="intl.pending"
        )
        session.call("domestic", "GET", PEEK_EVENTS_PATH, operation="domestic.peek")
        tokens = [t.value for t in session.tokens.values()]  # what was issued
    finally:
        session.close()
    store.record_snapshot(run, "supplier_requests", listed)
    calls = store.table("calls")
    detail_call = calls.loc[calls["operation"] == "supplier.request", "id"].iloc[-1]
    store_detail(store, "supplier_requests", first, detail=detail, call_id=int(detail_call))
    store.finish_run(run, status="ok")
    assert {"token", "supplier.pending_requests", "supplier.request"} <= set(calls["operation"])
    assert calls.loc[calls["operation"] == "supplier.request", "request_id"].tolist() == [first]
    assert (calls["run_id"] == run).all()
    assert "TranscriptRequest" in (store.document(first, list_name="supplier_requests") or "")
    store.close()
    secrets = [*profile.secrets(), *tokens]
    assert len(tokens) >= 3 and all(len(s) >= 8 for s in secrets)
    for file in tmp_path.iterdir():
        data = file.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"a secret or token is in {file.name}"
