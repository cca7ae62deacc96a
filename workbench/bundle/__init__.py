"""Support bundles: a zip of ``calls.har`` (the calls about a request, token calls left out,
list calls cut to its items), ``documents/NN-<sent|received>-<root>.xml``, ``validation.json``
and ``timeline.csv``, masked by ``http.masking`` (personal data too, when asked). The
calls are a HAR 1.2 log, which opens in a browser's dev tools.

>>> make_bundle(store, "7c1d0b52...", secrets=profile.secrets())  # doctest: +SKIP
PosixPath('data/bundles/7c1d0b52...-20260302T090000Z.zip')
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pandas as pd
from lxml import etree

from workbench import pesc
from workbench._version import __version__
from workbench.errors import ConfigError, PescError
from workbench.folders import create_private
from workbench.http.masking import Personal, Redactor, is_document, is_sent_document
from workbench.pesc.fields import environment_of
from workbench.store import Store
from workbench.store.identity import SANDBOX_TITLE
from workbench.store.schema import json_object

__all__ = ["Document", "make_bundle", "make_bundle_from_profile", "request_documents"]

DEFAULT_OUT_DIR = "data/bundles"


def make_bundle(
    store: Store,
    request_id: str,
    *,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT_DIR,
    secrets: Iterable[str] = (),
    schemas_dir: str | os.PathLike[str] | None = None,
    redact_personal: bool = False,
) -> Path:
    """Write ``<out_dir>/<request_id>-<UTC time>.zip``, 0600; its path. ``StoreError`` when the
    store knows nothing of the id. ``schemas_dir``: default ``WORKBENCH_PESC_SCHEMAS``."""
    rid = store.known(request_id)
    timeline = store.timeline(rid)
    calls = calls_about(store, rid, timeline)
    found = request_documents(store, rid, schemas_dir=schemas_dir, calls=calls)
    personal = Personal(active=redact_personal)
    bodies = [call[k] or "" for call in calls for k in ("request_body", "response_body")]
    for text in [d.text for d in found] + bodies:
        personal.learn(text)  # every value first, so that each member masks all of them
    redactor, mask = Redactor(secrets), personal.text

    sandbox = store.holds_sandbox_data()
    about = (
        f"{SANDBOX_TITLE + ': ' if sandbox else ''}Recorded calls about {rid}, redacted; "
        f"environment: {environment_of(store.process_codes(rid))}; personal data "
        f"{'masked' if redact_personal else 'NOT masked (--redact-personal masks it)'}."
    )
    timeline["at"] = [iso(t) for t in timeline["at"]]
    checked = {"documents": [
        {"file": d.file_name, "kind": d.kind, "message_type": d.message_type,
         "version": getattr(d.parsed, "version", None),
         "namespace": getattr(d.parsed, "namespace", None), **asdict(d.validation),
         "seen_in": d.seen_in}
        for d in found
    ]}  # fmt: skip
    har = har_log(calls, rid, about, redactor, mask)
    # What the store holds was masked when written: kept as written, tokens and JWTs aside (a
    # short key must not turn the timeline's dates into [REDACTED]-11-27).
    members = {
        "calls.har": json.dumps(har, indent=2, ensure_ascii=False),
        "timeline.csv": mask(redactor.stored(timeline.to_csv(index=False, lineterminator="\n"))),
        "validation.json": mask(redactor.stored(json.dumps(checked, indent=2, ensure_ascii=False))),
        **{d.file_name: mask(redactor.document(d.text)) for d in found},
    }
    stem = f"{'sandbox-' if sandbox else ''}{re.sub(r'[^A-Za-z0-9._-]+', '_', rid)[:100]}"
    stem += f"-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        path, n = out / f"{stem}.zip", 1
        while path.exists():  # never overwrite one
            n += 1
            path = out / f"{stem}-{n}.zip"
        create_private(path)  # 0600: the bundle names students
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, text in members.items():
                archive.writestr(name, text)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write the bundle in {out} ({exc.strerror or exc}): pick a folder you can "
            "write in (--out, or out_dir=)."
        ) from None
    return path


def make_bundle_from_profile(
    request_id: str,
    *,
    profile: str | None = None,
    db: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT_DIR,
    redact_personal: bool = False,
) -> Path:
    """``make_bundle`` on a profile's database (or ``db``), masking its secrets; offline."""
    from workbench.config import load_profile

    resolved = load_profile(profile, config_path=config_path)
    path = Path(db if db is not None else resolved.db)
    secrets = resolved.secrets()
    with Store(path, secrets=secrets, read_only=True) as store:  # a missing one: StoreError
        return make_bundle(
            store, request_id, out_dir=out_dir, secrets=secrets, redact_personal=redact_personal
        )


_PHRASES = {s.value: s.phrase for s in HTTPStatus}


def iso(moment: Any) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z`` (what HAR readers parse); '' when missing."""
    if moment is None or pd.isna(moment):
        return ""
    when = pd.to_datetime(moment, utc=True)  # a time without a zone is UTC, as stored
    return str(when.isoformat(timespec="milliseconds")).replace("+00:00", "Z")


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of Python values, None for a missing one (read through the store: its lock,
    one snapshot, its typed errors)."""
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
    masked = redactor.headers(json_object(text), document=document)
    return [{"name": k, "value": mask(v)} for k, v in masked.items()]


def _header(headers: list[dict[str, str]], name: str) -> str:
    return next((h["value"] for h in headers if h["name"].lower() == name), "")


_PESCXML_FIELD = re.compile(r'"pescxml"\s*:\s*("(?:[^"\\]|\\.)*")', re.IGNORECASE)


@dataclass(frozen=True)
class Document:
    """One distinct PESC document about a request, pretty-printed, with its validation (which
    says how to validate when it could not) and where it was seen (``seen_in``)."""

    number: int
    kind: str  # sent / received
    message_type: str  # the root element, or "unparsed"
    text: str
    validation: pesc.Validation
    seen_in: list[dict[str, Any]] = field(default_factory=list)
    parsed: pesc.PescDocument | None = None

    @property
    def title(self) -> str:
        return f"{self.number}. {self.kind} {self.message_type}"

    @property
    def file_name(self) -> str:
        """Its member in a bundle: ``documents/NN-<sent|received>-<root>.xml``."""
        kind = re.sub(r"[^A-Za-z0-9_.]+", "_", self.message_type)
        return f"documents/{self.number:02d}-{self.kind}-{kind}.xml"


def request_documents(
    store: Store,
    rid: str,
    *,
    schemas_dir: str | os.PathLike[str] | None = None,
    calls: list[dict[str, Any]] | None = None,
) -> list[Document]:
    """Every distinct PESC document about ``rid`` in its ``calls`` (default: :func:`calls_about`),
    the outbox, responses, acknowledgments and the stored detail, oldest first (a call's request
    before its answer), each once, validated on its pretty text (so that lines point into it)."""
    calls = calls_about(store, rid, store.timeline(rid)) if calls is None else calls
    seen: list[tuple[str, str, str, dict[str, Any]]] = []  # (xml, at, kind, where)

    def add(value: Any, at: str, kind: str, place: str, **ids: Any) -> None:
        seen.extend(
            (xml, at, kind, {"at": at, **ids, "in": place}) for xml in _pescxml_values(value)
        )

    for call in calls:
        at, op, cid = iso(call["started_at"]), call["operation"], call["id"]
        add(call["request_body"], at, "sent", f"{op} request", call_id=cid)
        add(call["response_body"], at, "received", f"{op} response", call_id=cid)
    for row in _rows(store, "outbox", rid):
        at, op, oid = iso(row["created_at"]), row["operation"], row["id"]
        add(row["payload"], at, "sent", f"outbox {op} payload", outbox_id=oid)
        add(row["response_body"], at, "received", f"outbox {op} answer", outbox_id=oid)
    for row in _rows(store, "responses", rid):
        add(row, iso(row["sent_at"]), "sent", "responses")
    for row in _rows(store, "acknowledgments", rid):
        add(row, iso(row["recorded_at"]), str(row["direction"]), "acknowledgments")
    if stored := store.document(rid):
        seen.append((stored, "~", "received", {"at": None, "in": "stored detail"}))

    unique: dict[str, tuple[str, pesc.PescDocument | None, list[dict[str, Any]]]] = {}
    for xml, _at, kind, where in sorted(seen, key=lambda s: s[1]):  # stable
        text, parsed = pretty(xml)
        unique.setdefault(text, (kind, parsed, []))[2].append(where)
    return [
        Document(n, kind, parsed.message_type if parsed else "unparsed", text,
                 pesc.validate(text, schemas_dir=schemas_dir), sources, parsed)
        for n, (text, (kind, parsed, sources)) in enumerate(unique.items(), start=1)
    ]  # fmt: skip


def _rows(store: Store, table: str, rid: str) -> list[dict[str, Any]]:
    return records(store.table(table, where="request_id = ?", params=[rid]))


def _pescxml_values(value: Any) -> list[str]:
    """A row's, a body's or a payload's ``PESCXML`` fields (any case, any depth), or its XML."""
    if isinstance(value, Mapping):
        return [v for k, v in value.items() if k.lower() == "pescxml" and isinstance(v, str) and v]
    text = str(value or "").strip()
    if text.startswith(("<", "&lt;")):
        return [text]
    return [xml for xml in (json.loads(m[1]) for m in _PESCXML_FIELD.finditer(text)) if xml]


def pretty(xml: str) -> tuple[str, pesc.PescDocument | None]:
    """The document unescaped and indented; as stored (unescaped once) when it does not parse."""
    try:
        document = pesc.parse(xml)
    except PescError:
        text = xml.strip()
        return (html.unescape(text) if text.startswith("&lt;") else text) + "\n", None
    root = copy.deepcopy(document.root)  # indent() changes the tree it is given
    etree.indent(root, space="  ")
    declaration = '<?xml version="1.0" encoding="UTF-8"?>\n'
    return declaration + etree.tostring(root, encoding="unicode") + "\n", document
