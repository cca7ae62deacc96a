"""Fixtures of the bundle tests: a sandbox, a store that pulled it, one request worked on."""

from __future__ import annotations

import sqlite3
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.students import of_student
from workbench import pesc
from workbench.http.session import Exchange
from workbench.sandbox import Sandbox, generator


@dataclass
class Worked:
    """A sandbox, a workbench on a fresh store, and a request with a response and a transcript
    sent for it (and the documents involved, as the sandbox and the builders made them)."""

    sb: Sandbox
    w: wb.Workbench
    request_id: str
    request_xml: str
    response_xml: str
    transcript_xml: str
    acknowledgment_xml: str

    @property
    def documents(self) -> list[str]:
        return [self.request_xml, self.response_xml, self.transcript_xml, self.acknowledgment_xml]


@pytest.fixture
def worked(sandbox: Sandbox, tmp_path: Path) -> Iterator[Worked]:
    w = wb.connect(env=sandbox.env, db=tmp_path / "x.db")
    try:
        w.pull(progress=False)
        rid = sandbox.pending_request_ids()[0]
        request_xml = str(w.supplier.request(rid).loc[0, "pescxml"])
        response_xml = pesc.build_response(request_xml, status="Hold", hold_reason="Financial")
        w.supplier.send_response(rid, response_xml)
        transcript_xml = generator.college_transcript_xml(
            5,
            1,
            request_id=rid,
            created=sandbox.state.now,
            namespaces=sandbox.settings.namespaces,
        )
        ack = w.supplier.send_transcript(rid, of_student(transcript_xml, request_xml))
        w.pull(progress=False)  # the request leaves the list: a "vanished" list call
        yield Worked(
            sandbox,
            w,
            rid,
            request_xml,
            response_xml,
            transcript_xml,
            str(ack.loc[0, "pescxml"]),
        )
    finally:
        w.close()


def members(path: Path) -> dict[str, bytes]:
    """Every member of a zip, decompressed."""
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        return {name: archive.read(name) for name in archive.namelist()}


def exchange(rid: str, body: str, **changes: Any) -> Exchange:
    """A detail GET of ``rid`` answered with ``body``, as the session hands it to recorders."""
    values: dict[str, Any] = {
        "interface": "supplier",
        "operation": "supplier.request",
        "method": "GET",
        "url": f"http://127.0.0.1:8765/exchange/api/transcriptrequests/{rid}",
        "attempt": 1,
        "started_at": datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        "duration_s": 0.02,
        "status": 200,
        "request_headers": {"Authorization": "[REDACTED]", "Accept": "application/json"},
        "request_body": "",
        "response_headers": {"content-type": "application/json"},
        "response_body": body,
        **changes,
    }
    return Exchange(**values)


def plant(db: Path, rid: str, **columns: Any) -> None:
    """Write a call row straight into the file, past every scrubber (a store that leaked)."""
    row = {
        "request_id": rid,
        "operation": "supplier.request",
        "method": "GET",
        "url": f"http://127.0.0.1:8765/exchange/api/transcriptrequests/{rid}",
        "started_at": "2026-03-02T09:00:00.000000Z",
        "duration_s": 0.01,
        "status": 200,
        **columns,
    }
    with sqlite3.connect(db) as conn:
        conn.execute(
            f"INSERT INTO calls ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",  # noqa: S608
            list(row.values()),
        )
    conn.close()
