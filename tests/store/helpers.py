"""Small builders shared by the store tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from workbench.http.session import Exchange

SECRETS = ["client-secret-0123", "hunter2-password", "subscription-key-xyz"]
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def exchange(**changes: Any) -> Exchange:
    """A redacted exchange as the session hands it to recorders (a detail GET by default)."""
    values: dict[str, Any] = {
        "interface": "supplier",
        "operation": "supplier.request",
        "method": "GET",
        "url": "http://127.0.0.1:8765/exchange/api/transcriptrequests/R-1",
        "attempt": 1,
        "started_at": T0,
        "duration_s": 0.02,
        "status": 200,
        "request_headers": {"Authorization": "[REDACTED]", "Accept": "application/json"},
        "request_body": "",
        "response_headers": {"content-type": "application/json"},
        "response_body": '[{"RequestID": "R-1", "PESCXML": "<TranscriptRequest/>"}]',
        "error": None,
    }
    values.update(changes)
    return Exchange(**values)


def listed(*ids: str, day: int = 1) -> list[dict[str, str]]:
    """Items of a no-response list, as the partner lists them."""
    return [{"RequestID": i, "RequestDate": f"2026-03-0{day}T08:00:00.000Z"} for i in ids]


def at(minutes: int) -> datetime:
    """``T0`` plus some minutes: snapshot times in order."""
    return T0 + timedelta(minutes=minutes)


def ago(minutes: float) -> datetime:
    """Real time, some minutes back (the outbox stamps entries with the real clock)."""
    return datetime.now(UTC) - timedelta(minutes=minutes)


def soon(minutes: float) -> datetime:
    """Real time, some minutes ahead."""
    return datetime.now(UTC) + timedelta(minutes=minutes)


def store_detail(store: Any, list_name: str, item_id: str, **values: Any) -> None:
    """Store one detail as a pull does (``Store.prepare_detail``'s keywords)."""
    store.write_details([store.prepare_detail(list_name, item_id, **values)])
