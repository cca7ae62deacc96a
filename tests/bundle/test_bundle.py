"""make_bundle() against a real sandbox and store: the zip's layout, HAR, documents, validation
and timeline."""

from __future__ import annotations

import csv
import io
import json
import re
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from workbench import pesc
from workbench.bundle import make_bundle
from workbench.errors import StoreError
from workbench.sandbox import generator
from workbench.store import Store

from .conftest import Worked, exchange, members

DOCUMENT_NAME = re.compile(r"documents/\d{2,}-(sent|received)-[A-Za-z]+\.xml")


def _bundle(worked: Worked, tmp_path: Path, **options: Any) -> dict[str, bytes]:
    path = make_bundle(worked.w.store, worked.request_id, out_dir=tmp_path / "out", **options)
    return members(path)


# -- the zip ------------------------------------------------------------------------------------


def test_the_zip_is_named_for_the_id_and_the_time_and_never_overwritten(worked, tmp_path):
    out = tmp_path / "bundles" / "new"  # created on demand
    first = make_bundle(worked.w.store, worked.request_id, out_dir=out)
    second = make_bundle(worked.w.store, worked.request_id, out_dir=out)
    assert re.fullmatch(rf"{worked.request_id}-\d{{8}}T\d{{6}}Z(-\d+)?\.zip", first.name)
    assert first != second and first.is_file() and second.is_file()
    assert sorted(p.name for p in out.iterdir()) == sorted([first.name, second.name])
    assert stat.S_IMODE(first.stat().st_mode) == 0o600  # for the partner's support alone


def test_the_zip_holds_the_documented_members(worked, tmp_path):
    files = _bundle(worked, tmp_path)
    fixed = {"calls.har", "validation.json", "timeline.csv"}
    assert fixed <= set(files)
    assert all(DOCUMENT_NAME.fullmatch(name) for name in set(files) - fixed), sorted(files)
    about = json.loads(files["calls.har"])["log"]["comment"]
    assert f"Recorded calls about {worked.request_id}" in about
    assert "personal data NOT masked" in about
    assert "environment: PRODUCTION;" in about


def test_an_unknown_id_is_a_store_error_and_writes_nothing(worked, tmp_path):
    with pytest.raises(StoreError, match="holds nothing about 'no-such-id'"):
        make_bundle(worked.w.store, "no-such-id", out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


# -- calls.har ----------------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _name_values(items: Any) -> None:
    assert isinstance(items, list)
    for item in items:
        assert isinstance(item["name"], str) and isinstance(item["value"], str), item


def _check_har(har: dict[str, Any]) -> list[dict[str, Any]]:
    """Every field HAR 1.2 requires, with its type; the entries."""
    log = har["log"]
    assert log["version"] == "1.2"
    assert log["creator"]["name"] == "workbench" and isinstance(log["creator"]["version"], str)
    assert isinstance(log["entries"], list) and log["entries"]
    for entry in log["entries"]:
        datetime.fromisoformat(entry["startedDateTime"].replace("Z", "+00:00"))
        assert _number(entry["time"]) and entry["time"] >= 0
        request, response = entry["request"], entry["response"]
        assert isinstance(request["method"], str) and request["method"]
        assert urlsplit(request["url"]).scheme in ("http", "https")
        assert request["httpVersion"].startswith("HTTP/")
        for part in (request, response):
            _name_values(part["headers"])
            assert part["cookies"] == []
            assert part["headersSize"] == -1 and isinstance(part["bodySize"], int)
        _name_values(request["queryString"])
        if "postData" in request:
            assert isinstance(request["postData"]["mimeType"], str)
            assert isinstance(request["postData"]["text"], str)
            assert request["bodySize"] == len(request["postData"]["text"].encode())
        assert isinstance(response["status"], int) and isinstance(response["statusText"], str)
        assert response["httpVersion"].startswith("HTTP/") and response["redirectURL"] == ""
        content = response["content"]
        assert isinstance(content["size"], int) and isinstance(content["mimeType"], str)
        assert content["size"] == len(content.get("text", "").encode())
        assert entry["cache"] == {}
        timings = entry["timings"]
        assert all(_number(timings[k]) and timings[k] >= 0 for k in ("send", "wait", "receive"))
        assert entry["time"] == pytest.approx(sum(v for v in timings.values() if v >= 0))
        assert all(k.startswith("_") or k in _ENTRY_FIELDS for k in entry), sorted(entry)
    return log["entries"]


_ENTRY_FIELDS = {"startedDateTime", "time", "request", "response", "cache", "timings", "comment"}


def test_the_har_is_valid_har_1_2_with_the_detail_call_and_the_sends(worked, tmp_path):
    entries = _check_har(json.loads(_bundle(worked, tmp_path)["calls.har"]))
    rid = worked.request_id
    calls = {(e["request"]["method"], urlsplit(e["request"]["url"]).path) for e in entries}
    assert ("GET", f"/exchange/api/transcriptrequests/{rid}") in calls
    assert ("POST", f"/exchange/api/transcriptrequests/{rid}/responses") in calls
    assert ("POST", f"/exchange/api/transcriptrequests/{rid}/transcripts") in calls
    assert not [e for e in entries if "/connect/token" in e["request"]["url"]]
    assert [e["startedDateTime"] for e in entries] == sorted(e["startedDateTime"] for e in entries)
    sends = [e for e in entries if e["request"]["method"] == "POST"]
    assert all(e["request"]["postData"]["mimeType"] == "application/json" for e in sends)
    assert all("PESCXML" in e["request"]["postData"]["text"] for e in sends)


def test_list_calls_show_only_this_ids_items(worked, tmp_path):
    entries = json.loads(_bundle(worked, tmp_path)["calls.har"])["log"]["entries"]
    lists = [e for e in entries if e["request"]["url"].endswith("/no_response")]
    assert len(lists) == 2  # where it appeared, and where it vanished
    appeared, vanished = (json.loads(e["response"]["content"]["text"]) for e in lists)
    assert [item["RequestID"] for item in appeared] == [worked.request_id]
    assert vanished == []
    others = set(worked.w.store.table("transcript_requests")["request_id"]) - {worked.request_id}
    har = json.dumps(entries)
    assert not [other for other in others if other in har]


# -- documents, validation.json, timeline.csv ---------------------------------------------------


def test_every_document_is_there_once_pretty_printed_and_parses(worked, tmp_path):
    files = _bundle(worked, tmp_path)
    documents = {n: v.decode() for n, v in files.items() if n.startswith("documents/")}
    parsed = {name: pesc.parse(text) for name, text in documents.items()}
    assert sorted((name.split("-")[1], d.message_type) for name, d in parsed.items()) == [
        ("received", "Acknowledgment"),
        ("received", "TranscriptRequest"),
        ("sent", "CollegeTranscript"),
        ("sent", "TranscriptResponse"),
    ]
    assert next(iter(documents)).startswith("documents/01-received-TranscriptRequest")
    for text in documents.values():
        assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<')
        assert "\n  <" in text and "&lt;" not in text[:200]
    ours = {pesc.flatten(x)["document_id"] for x in worked.documents}
    assert {pesc.flatten(d)["document_id"] for d in parsed.values()} == ours


def test_validation_has_a_status_per_document(worked, tmp_path, monkeypatch):
    monkeypatch.delenv("WORKBENCH_PESC_SCHEMAS", raising=False)
    files = _bundle(worked, tmp_path)
    report = json.loads(files["validation.json"])["documents"]
    assert report
    assert sorted(r["file"] for r in report) == sorted(n for n in files if n[:10] == "documents/")
    for row in report:
        assert row["status"] == "not validated" and "WORKBENCH_PESC_SCHEMAS" in row["note"]
        assert row["seen_in"] and row["kind"] in ("sent", "received")


def test_validation_against_the_schemas(worked, tmp_path, xsd_dir):
    report = json.loads(_bundle(worked, tmp_path, schemas_dir=xsd_dir)["validation.json"])
    assert report["documents"]
    for row in report["documents"]:
        assert row["status"] in ("valid", "invalid"), row
        assert row["schema"].endswith(".xsd") and row["note"].startswith("validated against")
        assert all(isinstance(e["message"], str) for e in row["errors"])


def test_validation_lines_point_into_the_bundled_file(tmp_path, xsd_dir):
    """A schema-invalid transcript, stored XML-escaped in one line: the bundle unescapes and
    indents it, and each error's line is the line of the bundled file that holds it."""
    bad = generator.college_transcript_xml(
        3, 2, request_id="R-1", created=datetime(2026, 3, 2, tzinfo=UTC), defect="invalid"
    )
    escaped = bad.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    with Store(tmp_path / "s.db") as store:
        store.record_call(exchange("R-1", json.dumps([{"PESCXml": escaped.replace("\n", "")}])))
        path = make_bundle(store, "R-1", out_dir=tmp_path, schemas_dir=xsd_dir)
    files = members(path)
    (row,) = json.loads(files["validation.json"])["documents"]
    assert row["status"] == "invalid" and row["errors"]
    lines = files[row["file"]].decode().splitlines()
    for error in row["errors"]:
        element = re.search(r"Element '(?:\{[^}]*\})?([A-Za-z]+)'", error["message"])
        assert element and f"<{element[1]}" in lines[error["line"] - 1], error


def test_the_timeline_csv_is_the_stores_timeline(worked, tmp_path):
    rows = list(csv.DictReader(io.StringIO(_bundle(worked, tmp_path)["timeline.csv"].decode())))
    timeline = worked.w.store.timeline(worked.request_id)
    assert len(rows) == len(timeline) > 5
    assert list(rows[0]) == list(timeline.columns)
    assert {"call", "outbox", "response", "acknowledgment", "vanished"} <= {r["kind"] for r in rows}
    assert all(r["at"].endswith("Z") for r in rows)


def test_a_received_transcript_and_our_acknowledgment(worked, tmp_path):
    transcript_id = worked.sb.pending_transcript_ids()[0]
    worked.w.consumer.send_acknowledgment(transcript_id)
    path = make_bundle(worked.w.store, transcript_id, out_dir=tmp_path)
    files = members(path)
    names = sorted(n.split("-", 1)[1] for n in files if n.startswith("documents/"))
    assert names == ["received-CollegeTranscript.xml", "sent-Acknowledgment.xml"]
    entries = _check_har(json.loads(files["calls.har"]))
    assert any(e["request"]["url"].endswith("/acknowledgment") for e in entries)


def test_a_failed_call_is_a_har_entry_with_status_0(tmp_path):
    with Store(tmp_path / "s.db") as store:
        store.record_call(exchange("R-1", "", status=None, error="ConnectError: refused"))
        path = make_bundle(store, "R-1", out_dir=tmp_path)
    (entry,) = _check_har(json.loads(members(path)["calls.har"]))
    assert entry["response"]["status"] == 0 and entry["_error"] == "ConnectError: refused"
    assert "documents/" not in "".join(members(path))
