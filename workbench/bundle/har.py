"""The recorded calls about an id, as a HAR 1.2 log that opens in a browser's dev tools."""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pandas as pd

from workbench._version import __version__
from workbench.http.masking import Redactor, is_document, is_sent_document
from workbench.store import Store

_PHRASES = {s.value: s.phrase for s in HTTPStatus}


def iso(moment: Any) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z`` (what HAR readers parse); '' when missing."""
    if moment is None or pd.isna(moment):
        return ""
    when = pd.to_datetime(moment, utc=True)  # a time without a zone is UTC, as stored
    return str(when.isoformat(timespec="milliseconds")).replace("+00:00", "Z")


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of Python values, None for a missing one."""
    plain = frame.astype(object).where(frame.notna(), None)
    return [{str(k): v for k, v in row.items()} for row in plain.to_dict("records")]


def calls_about(store: Store, rid: str, timeline: pd.DataFrame) -> list[dict[str, Any]]:
    """The calls about ``rid`` but token calls, oldest first; ``_listing``: a list call of it."""
    kinds = timeline["kind"].isin(("appeared", "vanished"))
    listing = {int(c) for c in timeline.loc[kinds, "call_id"].dropna()}
    linked = set(listing)
    for table in ("outbox", "acknowledgments"):
        rows = store.table(table, where="request_id = ? AND call_id IS NOT NULL", params=[rid])
        linked |= {int(c) for c in rows["call_id"]}
    about = f"(request_id = ? OR id IN ({', '.join('?' * len(linked))}))"
    tokens = "coalesce(operation, '') = 'token' OR coalesce(url, '') LIKE '%/connect/token%'"
    where = f"{about} AND NOT ({tokens}) ORDER BY started_at, id"
    calls = records(store.table("calls", where=where, params=[rid, *sorted(linked)]))
    for call in calls:
        call["_listing"] = call["id"] in listing and call["request_id"] != rid
    return calls


def har_log(
    calls: list[dict[str, Any]],
    rid: str,
    comment: str,
    redactor: Redactor,
    mask: Callable[[str], str],
) -> dict[str, Any]:
    """``calls`` as HAR, masked as the session records (documents as written), then by ``mask``."""
    entries = [_entry(call, rid, redactor, mask) for call in calls]
    creator = {"name": "workbench", "version": __version__}
    return {"log": {"version": "1.2", "creator": creator, "comment": comment, "entries": entries}}


def _entry(
    call: dict[str, Any], rid: str, redactor: Redactor, mask: Callable[[str], str]
) -> dict[str, Any]:
    sent = is_sent_document(call["interface"], call["method"])
    answered = is_document(call["interface"], call["status"])
    request_headers = _headers(call["request_headers"], redactor, mask, document=False)
    response_headers = _headers(call["response_headers"], redactor, mask, document=answered)
    request_type = _header(request_headers, "content-type")
    response_type = _header(response_headers, "content-type")
    body, comment = call["response_body"] or "", str(call["operation"] or "")
    if call["_listing"]:
        body, comment = _listed_items(body, rid, comment)
    request_body = mask(redactor.body(call["request_body"], request_type, document=sent))
    response_body = mask(redactor.body(body, response_type, document=answered))
    url = mask(redactor.url(str(call["url"] or "")))
    time_ms = round(max(float(call["duration_s"] or 0.0), 0.0) * 1000, 3)
    status = int(call["status"]) if call["status"] is not None else 0
    request: dict[str, Any] = {
        "method": str(call["method"] or "GET"),
        "url": url,
        "httpVersion": "HTTP/1.1",
        "headers": request_headers,
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query)],
        "cookies": [],
        "headersSize": -1,
        "bodySize": len(request_body.encode()),
        **({"postData": {"mimeType": request_type, "text": request_body}} if request_body else {}),
    }
    size = len(response_body.encode())
    entry: dict[str, Any] = {
        "startedDateTime": iso(call["started_at"]),
        "time": time_ms,
        "request": request,
        "response": {
            "status": status,
            "statusText": _PHRASES.get(status, ""),
            "httpVersion": "HTTP/1.1",
            "headers": response_headers,
            "cookies": [],
            "content": {"size": size, "mimeType": response_type, "text": response_body},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": size,
        },
        "cache": {},
        "timings": {"send": 0, "wait": time_ms, "receive": 0},
        "comment": comment,
        "_call_id": call["id"],
    }
    if call["error"]:
        entry["_error"] = mask(redactor.text(str(call["error"])))
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


def _headers(
    text: str | None, redactor: Redactor, mask: Callable[[str], str], *, document: bool
) -> list[dict[str, str]]:
    try:
        stored = json.loads(text) if text else {}
    except ValueError:
        stored = {}
    masked = redactor.headers(stored if isinstance(stored, dict) else {}, document=document)
    return [{"name": k, "value": mask(v)} for k, v in masked.items()]


def _header(headers: list[dict[str, str]], name: str) -> str:
    return next((h["value"] for h in headers if h["name"].lower() == name), "")
