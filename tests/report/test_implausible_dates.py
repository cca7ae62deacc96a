"""A partner's dates of year 1 and of 9999, and missing ones, in every table a report reads:
`workbench report`, its events report and `workbench troubleshoot` run to the end, list each
implausible date with its item, field and value, and chart only plausible ones."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

WORKBENCH = Path(sys.executable).parent / "workbench"
YEAR_ONE, NEVER = "0001-01-01T00:00:00.000000Z", "9999-12-31T23:59:59.000000Z"
ODD = (YEAR_ONE, NEVER, None, "not a date")  # as the store keeps what a partner sent


def _ids(conn: sqlite3.Connection, sql: str, n: int) -> list[str]:
    found = [row[0] for row in conn.execute(sql)][:n]
    assert len(found) == n, sql
    return found


def _craft(db: Path) -> dict[str, list[str]]:
    """Odd dates in the store as a partner may have sent them: the ids given each."""
    with closing(sqlite3.connect(db)) as conn, conn:
        requests = _ids(conn, "SELECT request_id FROM transcript_requests WHERE on_list = 1 "
                              "ORDER BY request_id", len(ODD))  # fmt: skip
        transcripts = _ids(conn, "SELECT transcript_id FROM transcripts_received "
                                 "ORDER BY transcript_id", len(ODD))  # fmt: skip
        acks = _ids(conn, "SELECT id FROM acknowledgments ORDER BY id", 3)
        events = _ids(conn, "SELECT event_key FROM events WHERE time_is_first_seen = 0 "
                            "AND json_extract(raw_json, '$.occurredAt') IS NOT NULL "
                            "ORDER BY rowid", 3)  # fmt: skip
        entities = (("transcript_requests", "request_id", requests),
                    ("transcripts_received", "transcript_id", transcripts))  # fmt: skip
        for table, column, ids in entities:
            for item, value in zip(ids, ODD, strict=True):
                conn.execute(f"UPDATE {table} SET request_date = ? WHERE {column} = ?",  # noqa: S608
                             (value, item))  # fmt: skip
                conn.execute("UPDATE documents SET request_date = ? WHERE item_id = ?",
                             (value, item))  # fmt: skip
        for ack, value in zip(acks, ODD, strict=False):
            conn.execute("UPDATE acknowledgments SET created_at = ? WHERE id = ?", (value, ack))
        for key, value in zip(events, ODD, strict=False):
            sent = None if value is None else value.replace(".000000", "")
            conn.execute(
                "UPDATE events SET occurred_at = ?, raw_json = json_set(raw_json, "
                "'$.occurredAt', ?) WHERE event_key = ?",
                (value, sent, key),
            )
    return {"requests": requests, "transcripts": transcripts, "events": events}


def _workbench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    done = subprocess.run([str(WORKBENCH), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _html(done: subprocess.CompletedProcess[str]) -> str:
    html = Path(done.stdout.strip().splitlines()[-1])
    assert html.suffix == ".html"
    return html.read_text(encoding="utf-8")


def test_reports_list_implausible_dates_and_run_to_the_end(report_copy: Path) -> None:
    crafted = _craft(report_copy)
    folder = report_copy.parent
    common = ("--no-pull", "--db", str(report_copy), "--tz", "America/Toronto")

    html = _html(_workbench(folder, "report", *common))
    requests, transcripts = crafted["requests"], crafted["transcripts"]
    first, last = "0001-01-01 00:00 UTC", "9999-12-31 23:59 UTC"
    for item, value in ((requests[0], first), (requests[1], last), (transcripts[0], first),
                        (transcripts[1], last)):  # fmt: skip
        row = re.search(rf"<tr[^>]*><td>{item}</td><td>implausible_date</td>.*?</tr>", html)
        assert row is not None, item
        assert f"RequestDate is {value}, outside the plausible dates" in row[0]
    assert f"<td>{requests[2]}</td><td>implausible_date</td>" not in html  # no date: none
    assert f"<td>{requests[3]}</td><td>implausible_date</td>" not in html  # not a date: none

    events = _html(_workbench(folder, "report", "--notebook", "events", *common))
    listed = re.search(r'<div class="wb-problems" data-problems="(\d+)">(.*?)</div>', events, re.S)
    assert listed is not None and listed[1] == "2"
    for key, value in zip(crafted["events"], ("0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"),
                          strict=False):  # fmt: skip
        assert f"<td>{key}</td><td>occurredAt</td><td>{value}</td>" in listed[2]

    story = _workbench(folder, "troubleshoot", requests[0], *common[:3])  # no --tz there
    assert requests[0] in Path(story.stdout.strip().splitlines()[-1]).read_text(encoding="utf-8")
