"""The recorded calls about an id, as a HAR 1.2 log that opens in a browser's dev tools."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pandas as pd

from workbench._version import __version__
from workbench.bundle.plain import iso, records
from workbench.bundle.redaction import Redaction
from workbench.http.masking import is_document, is_sent_document
from workbench.store import Store

LIST_KINDS = ("appeared", "vanished")


def calls_about(store: Store, rid: str, timeline: pd.DataFrame) -> list[dict[str, Any]]:
    """The calls about ``rid`` (token calls excluded), oldest first, with ``_listing`` set on
    the list calls that show it appearing or vanishing."""
    listing = {int(c) for c in timeline.loc[timeline["kind"].isin(LIST_KINDS), "call_id"].dropna()}
    linked = set(listing)
    for table in ("outbox", "acknowledgments"):
        rows = store.table(table, where="request_id = ? AND call_id IS NOT NULL", params=[rid])
        linked |= {int(c) for c in rows["call_id"]}
    marks = ", ".join("?" * len(linked))
    where = f"request_id = ? OR id IN ({marks})" if linked else "request_id = ?"
    frame = store.table("calls", where=where, params=[rid, *sorted(linked)])
    calls = []
    for row in records(frame):
        if row["operation"] == "token" or "/connect/token" in str(row["url"] or ""):
            continue
        row["_listing"] = row["id"] in listing and row["request_id"] != rid
        calls.append(row)
    return sorted(calls, key=lambda c: (c["started_at"], c["id"]))


def har_log(calls: list[dict[str, Any]], rid: str, red: Redaction) -> dict[str, Any]:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "workbench", "version": __version__},
            "comment": f"Recorded calls about {rid}, redacted.",
            "entries": [_entry(call, rid, red) for call in calls],
        }
    }


def _entry(call: dict[str, Any], rid: str, red: Redaction) -> dict[str, Any]:
    request_headers = _headers(call["request_headers"])
    response_headers = _headers(call["response_headers"])
    request_type = _header(request_headers, "content-type")
    response_type = _header(response_headers, "content-type") or ""
    # The rule the session records by (redact.is_document): a login or an error answer is
    # masked by value, a document is kept as written.
    document = is_sent_document(call["interface"], call["method"])
    answered = is_document(call["interface"], call["status"])
    request_body = red.body(call["request_body"], request_type, document=document)
    response_text, comment = call["response_body"] or "", str(call["operation"] or "")
    if call["_listing"]:
        response_text, comment = _listed_items(response_text, rid, comment)
    response_body = red.body(response_text, response_type, document=answered)
    url = red.url(str(call["url"] or ""))
    time_ms = round(max(float(call["duration_s"] or 0.0), 0.0) * 1000, 3)
    status = int(call["status"]) if call["status"] is not None else 0
    request: dict[str, Any] = {
        "method": str(call["method"] or "GET"),
        "url": url,
        "httpVersion": "HTTP/1.1",
        "headers": red.headers(request_headers, document=False),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query)],
        "cookies": [],
        "headersSize": -1,
        "bodySize": len(request_body.encode()),
    }
    if request_body:
        request["postData"] = {"mimeType": request_type or "", "text": request_body}
    entry: dict[str, Any] = {
        "startedDateTime": iso(call["started_at"]),
        "time": time_ms,
        "request": request,
        "response": {
            "status": status,
            "statusText": _status_text(status),
            "httpVersion": "HTTP/1.1",
            "headers": red.headers(response_headers, document=answered),
            "cookies": [],
            "content": {
                "size": len(response_body.encode()),
                "mimeType": response_type,
                "text": response_body,
            },
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(response_body.encode()),
        },
        "cache": {},
        "timings": {"send": 0, "wait": time_ms, "receive": 0},
        "comment": comment,
        "_workbench": {
            "call_id": call["id"],
            "run_id": call["run_id"],
            "interface": call["interface"],
            "operation": call["operation"],
            "attempt": call["attempt"],
        },
    }
    if call["error"]:
        entry["_error"] = red.text(str(call["error"]))
    return entry


def _listed_items(body: str, rid: str, comment: str) -> tuple[str, str]:
    """A list call's body cut down to the items about ``rid`` (others' ids stay home)."""
    try:
        payload = json.loads(body) if body else []
    except ValueError:
        return "", f"{comment}; body left out: not JSON"
    if isinstance(payload, dict):  # an object holding one array
        payload = next((v for v in payload.values() if isinstance(v, list)), [])
    items = payload if isinstance(payload, list) else []
    kept = [i for i in items if isinstance(i, dict) and rid in map(str, i.values())]
    note = f"{comment}; body cut to the {len(kept)} of {len(items)} listed items about {rid}"
    return json.dumps(kept, ensure_ascii=False), note


def _headers(text: Any) -> dict[str, str]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _header(headers: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name), None)


def _status_text(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
