"""Support bundles: everything recorded about one request, zipped for a ticket with the partner.

>>> from workbench.bundle import make_bundle
>>> make_bundle(store, "7c1d0b52...", secrets=profile.secrets())  # doctest: +SKIP
PosixPath('data/bundles/7c1d0b52...-20260302T090000Z.zip')

The zip holds:

- ``README.txt``: what is in the bundle, when and by which workbench version it was made, and
  which redactions were applied;
- ``calls.har``: a HAR 1.2 log of every recorded call about the id (it opens in a browser's
  developer tools): calls whose ``request_id`` is the id, the calls of its outbox entries, and
  the list calls in which it appeared on or vanished from a partner list (their bodies cut down
  to this id's items, so no other request leaks in). Token calls are left out;
- ``documents/NN-<kind>-<type>.xml``: every distinct PESC document about the id, from call
  bodies, the outbox and the stored details, unescaped and pretty-printed, in the order first
  seen; ``kind`` is ``sent`` or ``received``, ``type`` the root element (``unparsed`` when it
  does not parse: it is then written as stored);
- ``validation.json``: per document, its validation (status, schema, note, errors with the line
  in the bundled file) and where it was seen;
- ``timeline.csv``: ``Store.timeline(id)``.

Secrets never leave: every text passes :class:`workbench.redact.Redactor` and the store's
:class:`~workbench.store.scrub.Scrubber` with the given ``secrets``, so sensitive headers and
fields are masked by name, the secrets by value, JWTs and bearer credentials by shape, even if
the store somehow held one. ``redact_personal=True`` also masks student personal data
(:data:`PERSONAL_ELEMENTS`) in every member, with stable placeholders such as
``[LastName-1]``: the same value gets the same placeholder throughout the bundle, so the partner
can still see that two documents name the same student.
"""

from __future__ import annotations

import contextlib
import copy
import html
import io
import json
import os
import re
import textwrap
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pandas as pd
from lxml import etree

from workbench import pesc
from workbench.errors import PescError, StoreError
from workbench.redact import SENSITIVE_FIELDS, SENSITIVE_HEADERS, Redactor
from workbench.store import Store
from workbench.store.scrub import Scrubber

DEFAULT_OUT_DIR = "data/bundles"
# Leaf elements masked by ``redact_personal``, wherever they appear (organisation contacts
# included: masking too much is the safe side of a document that leaves the institution).
PERSONAL_ELEMENTS: dict[str, tuple[str, ...]] = {
    "names": ("NamePrefix", "FirstName", "MiddleName", "LastName", "NameSuffix", "CompositeName"),
    "birth": ("BirthDate", "Birthday", "BirthCity", "BirthStateProvinceCode", "BirthCountry"),
    "identifiers": ("SchoolAssignedPersonID", "AgencyAssignedID", "RecipientAssignedID",
                    "SIN", "NSN", "SSN", "PartialSSN"),
    "addresses": ("AddressLine", "City", "StateProvince", "StateProvinceCode", "PostalCode"),
    "emails": ("EmailAddress",),
    "phones": ("CountryPrefixCode", "AreaCityCode", "PhoneNumber", "PhoneNumberExtension"),
}  # fmt: skip
_LIST_KINDS = ("appeared", "vanished")
_XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'


def make_bundle(
    store: Store,
    request_id: str,
    *,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT_DIR,
    secrets: Iterable[str] = (),
    schemas_dir: str | os.PathLike[str] | None = None,
    redact_personal: bool = False,
) -> Path:
    """Write ``<out_dir>/<request_id>-<UTC timestamp>.zip`` for ``request_id``; its path.

    ``StoreError`` when the store knows nothing about the id. ``schemas_dir``: the PESC XSDs to
    validate against (default: ``WORKBENCH_PESC_SCHEMAS``).
    """
    rid = str(request_id)
    timeline = store.timeline(rid)
    stored = store.document(rid)
    if timeline.empty and stored is None:
        raise StoreError(
            f"The store at {store.path} holds nothing about {rid!r}: no call, list entry, "
            "outbox entry or document. Check the id, or pull first (workbench pull)."
        )
    made = datetime.now(UTC)
    calls = _calls(store, rid, timeline)
    found = _documents(store, rid, calls, stored)
    personal = _Personal() if redact_personal else None
    if personal is not None:  # learn every value first, so each member masks all of them
        for document in found:
            personal.learn(document.text)
        for call in calls:
            personal.learn(call.get("request_body") or "")
            personal.learn(call.get("response_body") or "")
    red = _Redaction(list(secrets), personal)

    files = [(f"documents/{d.file_name(n)}", d.text) for n, d in enumerate(found, start=1)]
    members = {
        "README.txt": _readme(rid, made, calls, files, red),
        "calls.har": json.dumps(_har(calls, rid, red), indent=2, ensure_ascii=False),
        "timeline.csv": _timeline_csv(timeline),
        "validation.json": json.dumps(
            _validation(found, files, schemas_dir), indent=2, ensure_ascii=False
        ),
        **dict(files),
    }
    return _write_zip(Path(out_dir), rid, made, {k: red.text(v) for k, v in members.items()})


def make_bundle_from_profile(
    request_id: str,
    *,
    profile: str | None = None,
    db: str | os.PathLike[str] | None = None,
    config_path: str | os.PathLike[str] | None = None,
    out_dir: str | os.PathLike[str] = DEFAULT_OUT_DIR,
    schemas_dir: str | os.PathLike[str] | None = None,
    redact_personal: bool = False,
) -> Path:
    """``make_bundle`` on a profile's database (``db`` overrides it), masking the profile's
    secrets. Never contacts the partner, starts no sandbox and needs no credential.

    ``StoreError`` when there is no database there; ``ConfigError`` for a bad profile.

    >>> make_bundle_from_profile("7c1d0b52...", profile="prod")  # doctest: +SKIP
    """
    from workbench.config import load_profile

    resolved = load_profile(profile, config_path=config_path)
    path = Path(db if db is not None else resolved.db)
    if not path.is_file():  # opening a Store would create an empty database
        raise StoreError(f"There is no database at {path}: run `workbench pull` first.")
    secrets = resolved.secrets()
    if resolved.is_sandbox:  # the embedded sandbox's demo credentials, defensively
        from workbench.sandbox import SandboxSettings

        secrets += SandboxSettings().credentials.secrets()
    with Store(path, secrets=secrets) as store:
        return make_bundle(
            store,
            request_id,
            out_dir=out_dir,
            secrets=secrets,
            schemas_dir=schemas_dir,
            redact_personal=redact_personal,
        )


# -- redaction ----------------------------------------------------------------------------------


class _Redaction:
    """Secrets (and, optionally, personal data) out of every text that enters the bundle."""

    def __init__(self, secrets: list[str], personal: _Personal | None) -> None:
        self.secret_count = len({s for s in secrets if s})
        self.personal = personal
        self._redactor = Redactor(secrets)
        self._scrubber = Scrubber(secrets)

    def text(self, text: str | None) -> str:
        clean = self._redactor.text(self._scrubber.text(text) or "")
        return self.personal.text(clean) if self.personal is not None else clean

    def body(self, text: str | None, content_type: str | None) -> str:
        return self.text(self._redactor.body(text or "", content_type))

    def url(self, url: str) -> str:
        return self.text(self._redactor.url(url))

    def headers(self, headers: Mapping[str, str]) -> list[dict[str, str]]:
        masked = self._redactor.headers(headers)
        return [{"name": str(k), "value": self.text(str(v))} for k, v in masked.items()]


def _element_pattern(names: Iterable[str], *, escaped: bool) -> re.Pattern[str]:
    """A leaf element named one of ``names`` (any prefix), raw or XML-escaped once."""
    alternatives = "|".join(sorted(names, key=len, reverse=True))
    prefix = r"(?:[A-Za-z_][\w.-]*:)?"
    lt, gt = ("&lt;", "&gt;") if escaped else ("<", ">")
    attributes = r"(?:\s(?:(?!&gt;)[^<>])*)?" if escaped else r"(?:\s[^<>]*)?"
    content = r"(?:(?!&lt;)[^<])*" if escaped else r"[^<]*"
    return re.compile(
        f"({lt}{prefix}(?P<name>{alternatives}){attributes}{gt})(?P<value>{content})"
        f"({lt}/{prefix}(?P=name)\\s*{gt})"
    )


_ALL_PERSONAL = tuple(name for names in PERSONAL_ELEMENTS.values() for name in names)
_RAW_ELEMENT = _element_pattern(_ALL_PERSONAL, escaped=False)
_ESCAPED_ELEMENT = _element_pattern(_ALL_PERSONAL, escaped=True)
_PLACEHOLDER = re.compile(r"\s*\[(?:[A-Za-z]+-\d+|REDACTED|personal)\]\s*")
_MARKUP = r"</?[A-Za-z_][^<>]*>|&lt;/?[A-Za-z_](?:(?!&gt;)[^<>])*&gt;"


class _Personal:
    """Masks student personal data: by element (:data:`PERSONAL_ELEMENTS`), then every value so
    learned wherever else it shows up (a note, a tracking id, a validation message, a JSON
    field), outside markup. The same value always gets the same placeholder."""

    def __init__(self) -> None:
        self._placeholders: dict[str, str] = {}  # value (lower case) -> placeholder
        self._counts: dict[str, int] = {}
        self._variants: dict[str, str] = {}  # each spelling of a value -> placeholder
        self._net: re.Pattern[str] | None = None

    def learn(self, text: str) -> None:
        """Remember the personal values in ``text`` (and give each its placeholder)."""
        for pattern, unescape in ((_RAW_ELEMENT, 1), (_ESCAPED_ELEMENT, 2)):
            for match in pattern.finditer(text):
                self._placeholder(match["name"], match["value"], unescape)

    def text(self, text: str) -> str:
        """``text`` with every personal element's content and every learned value masked."""
        for pattern, unescape in ((_RAW_ELEMENT, 1), (_ESCAPED_ELEMENT, 2)):

            def masked(m: re.Match[str], unescape: int = unescape) -> str:
                return m[1] + self._placeholder(m["name"], m["value"], unescape) + m[4]

            text = pattern.sub(masked, text)
        net = self._pattern()
        if net is None:
            return text
        return net.sub(lambda m: m[0] if m["markup"] else self._variant(m[0]), text)

    def _placeholder(self, name: str, value: str, unescape: int) -> str:
        if not value.strip() or _PLACEHOLDER.fullmatch(value):
            return value
        plain = value
        for _ in range(unescape):
            plain = html.unescape(plain)
        if "\\" in plain:  # the document was read out of a JSON string
            with contextlib.suppress(ValueError):
                plain = json.loads(f'"{plain}"')
        plain = plain.strip()
        key = plain.lower()
        if key not in self._placeholders:
            self._counts[name] = self._counts.get(name, 0) + 1
            self._placeholders[key] = f"[{name}-{self._counts[name]}]"
            self._add_variants(plain, self._placeholders[key])
        return self._placeholders[key]

    def _add_variants(self, value: str, placeholder: str) -> None:
        if len(value) < 2 or (len(value) < 6 and not any(c.isalpha() for c in value)):
            return  # "1" or "416" everywhere would garble the bundle; the element still goes
        escaped = html.escape(value, quote=False)
        spellings = {
            value,
            escaped,
            escaped.replace("'", "&apos;").replace('"', "&quot;"),
            html.escape(value),
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
        }
        for spelling in spellings:
            self._variants.setdefault(spelling, placeholder)
        self._net = None

    def _pattern(self) -> re.Pattern[str] | None:
        # Case-insensitive from 4 characters; shorter ones ("Li", "ON") only as spelled.
        if self._net is None and self._variants:
            ordered = sorted(self._variants, key=len, reverse=True)
            long = "|".join(re.escape(v) for v in ordered if len(v) >= 4)
            short = "|".join(re.escape(v) for v in ordered if len(v) < 4)
            values = "|".join(filter(None, [f"(?i:{long})" if long else "", short]))
            self._net = re.compile(f"(?P<markup>{_MARKUP})|(?<!\\w)(?:{values})(?!\\w)")
        return self._net

    def _variant(self, found: str) -> str:
        if found in self._variants:
            return self._variants[found]
        lower = found.lower()
        return next((p for v, p in self._variants.items() if v.lower() == lower), "[personal]")

    @property
    def summary(self) -> str:
        return f"{len(self._placeholders)} distinct values masked"


# -- calls and the HAR --------------------------------------------------------------------------


def _calls(store: Store, rid: str, timeline: pd.DataFrame) -> list[dict[str, Any]]:
    """The calls about ``rid`` (token calls excluded), oldest first, with ``_listing`` set on
    the list calls that show it appearing or vanishing."""
    listing = {int(c) for c in timeline.loc[timeline["kind"].isin(_LIST_KINDS), "call_id"].dropna()}
    linked = set(listing)
    for table in ("outbox", "acknowledgments"):
        rows = store.table(table, where="request_id = ? AND call_id IS NOT NULL", params=[rid])
        linked |= {int(c) for c in rows["call_id"]}
    marks = ", ".join("?" * len(linked))
    where = f"request_id = ? OR id IN ({marks})" if linked else "request_id = ?"
    frame = store.table("calls", where=where, params=[rid, *sorted(linked)])
    calls = []
    for row in _records(frame):
        if row["operation"] == "token" or "/connect/token" in str(row["url"] or ""):
            continue
        row["_listing"] = row["id"] in listing and row["request_id"] != rid
        calls.append(row)
    return sorted(calls, key=lambda c: (c["started_at"], c["id"]))


def _har(calls: list[dict[str, Any]], rid: str, red: _Redaction) -> dict[str, Any]:
    from workbench import __version__

    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "workbench", "version": __version__},
            "comment": f"Recorded calls about {rid}, redacted.",
            "entries": [_entry(call, rid, red) for call in calls],
        }
    }


def _entry(call: dict[str, Any], rid: str, red: _Redaction) -> dict[str, Any]:
    request_headers = _headers(call["request_headers"])
    response_headers = _headers(call["response_headers"])
    request_type = _header(request_headers, "content-type")
    response_type = _header(response_headers, "content-type") or ""
    request_body = red.body(call["request_body"], request_type)
    response_text, comment = call["response_body"] or "", str(call["operation"] or "")
    if call["_listing"]:
        response_text, comment = _listed_items(response_text, rid, comment)
    response_body = red.body(response_text, response_type)
    url = red.url(str(call["url"] or ""))
    time_ms = round(max(float(call["duration_s"] or 0.0), 0.0) * 1000, 3)
    status = int(call["status"]) if call["status"] is not None else 0
    request: dict[str, Any] = {
        "method": str(call["method"] or "GET"),
        "url": url,
        "httpVersion": "HTTP/1.1",
        "headers": red.headers(request_headers),
        "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(url).query)],
        "cookies": [],
        "headersSize": -1,
        "bodySize": len(request_body.encode()),
    }
    if request_body:
        request["postData"] = {"mimeType": request_type or "", "text": request_body}
    entry: dict[str, Any] = {
        "startedDateTime": _iso(call["started_at"]),
        "time": time_ms,
        "request": request,
        "response": {
            "status": status,
            "statusText": _status_text(status),
            "httpVersion": "HTTP/1.1",
            "headers": red.headers(response_headers),
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


# -- documents ----------------------------------------------------------------------------------


@dataclass
class _Document:
    """One distinct document, where it was seen, and its pretty text and validation."""

    text: str
    kind: str
    message_type: str
    parsed: pesc.PescDocument | None
    sources: list[dict[str, Any]] = field(default_factory=list)

    def file_name(self, number: int) -> str:
        kind = re.sub(r"[^A-Za-z0-9_.]+", "_", self.message_type)
        return f"{number:02d}-{self.kind}-{kind}.xml"


def _documents(
    store: Store, rid: str, calls: list[dict[str, Any]], stored: str | None
) -> list[_Document]:
    seen: list[tuple[str, str, str, dict[str, Any]]] = []  # (xml, at, kind, source)
    for call in calls:
        at, cid, op = _iso(call["started_at"]), call["id"], call["operation"]
        for xml in _pescxml_values(call["request_body"]):
            seen.append((xml, at, "sent", {"at": at, "call_id": cid, "in": f"{op} request"}))
        for xml in _pescxml_values(call["response_body"]):
            seen.append((xml, at, "received", {"at": at, "call_id": cid, "in": f"{op} response"}))
    for row in _rows(store, "outbox", rid):
        at = _iso(row["created_at"])
        where = {"at": at, "outbox_id": row["id"], "in": f"outbox {row['operation']} payload"}
        seen += [(xml, at, "sent", where) for xml in _pescxml_values(row["payload"])]
        where = {**where, "in": f"outbox {row['operation']} answer"}
        seen += [(xml, at, "received", where) for xml in _pescxml_values(row["response_body"])]
    for row in _rows(store, "responses", rid):
        at = _iso(row["sent_at"])
        seen += [(x, at, "sent", {"at": at, "in": "responses"}) for x in _pescxml_values(row)]
    for row in _rows(store, "acknowledgments", rid):
        at, kind = _iso(row["recorded_at"]), str(row["direction"])
        seen += [(x, at, kind, {"at": at, "in": "acknowledgments"}) for x in _pescxml_values(row)]
    if stored:
        seen.append((stored, "~", "received", {"at": None, "in": "stored detail"}))

    unique: dict[str, _Document] = {}
    # Oldest first; sorted() is stable, so a call's request body comes before its answer.
    for xml, _at, kind, source in sorted(seen, key=lambda s: s[1]):
        text, parsed = _pretty(xml)
        document = unique.setdefault(
            text, _Document(text, kind, parsed.message_type if parsed else "unparsed", parsed)
        )
        document.sources.append(source)
    return list(unique.values())


def _rows(store: Store, table: str, rid: str) -> list[dict[str, Any]]:
    return _records(store.table(table, where="request_id = ?", params=[rid]))


def _pescxml_values(value: Any) -> list[str]:
    """The PESC XML in a body, an outbox payload or a row: ``PESCXML`` fields (any key case),
    or the text itself when it is XML."""
    if isinstance(value, Mapping):
        return [
            v for k, v in value.items() if str(k).lower() == "pescxml" and v and isinstance(v, str)
        ]
    text = str(value or "").strip()
    if text.startswith(("<", "&lt;")):
        return [text]
    if not text.startswith(("{", "[")):
        return []
    try:
        payload = json.loads(text)
    except ValueError:
        return []
    found: list[str] = []
    stack = [payload]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if str(key).lower() == "pescxml" and isinstance(inner, str) and inner:
                    found.append(inner)
                elif isinstance(inner, dict | list):
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def _pretty(xml: str) -> tuple[str, pesc.PescDocument | None]:
    """The document unescaped and indented, with an XML declaration; as stored (unescaped once)
    when it does not parse."""
    try:
        document = pesc.parse(xml)
    except PescError:
        text = xml.strip()
        return (html.unescape(text) if text.startswith("&lt;") else text) + "\n", None
    root = copy.deepcopy(document.root)  # indent() changes the tree it is given
    etree.indent(root, space="  ")
    return _XML_DECLARATION + etree.tostring(root, encoding="unicode") + "\n", document


def _validation(
    found: list[_Document], files: list[tuple[str, str]], schemas_dir: Any
) -> dict[str, Any]:
    """Each document's validation, run on its bundled text so that lines point into the file
    (personal masking, done afterwards, changes no line)."""
    documents = []
    for document, (name, _text) in zip(found, files, strict=True):
        result = pesc.validate(document.text, schemas_dir=schemas_dir)
        parsed = document.parsed
        documents.append(
            {
                "file": name,
                "kind": document.kind,
                "message_type": document.message_type,
                "version": parsed.version if parsed else None,
                "namespace": parsed.namespace if parsed else None,
                "status": result.status,
                "schema": result.schema,
                "note": result.note,
                "errors": [{"line": e.line, "message": e.message} for e in result.errors],
                "seen_in": document.sources,
            }
        )
    return {"documents": documents}


# -- timeline, README, the zip ------------------------------------------------------------------


def _timeline_csv(timeline: pd.DataFrame) -> str:
    frame = timeline.copy()
    frame["at"] = [_iso(t) for t in frame["at"]]
    return frame.to_csv(index=False, lineterminator="\n")


def _readme(
    rid: str,
    made: datetime,
    calls: list[dict[str, Any]],
    files: list[tuple[str, str]],
    red: _Redaction,
) -> str:
    from workbench import __version__

    listed = sum(1 for c in calls if c["_listing"])
    secrets = (
        "Secrets: access tokens, client secrets, passwords and subscription keys are replaced "
        f"by [REDACTED]: headers ({', '.join(sorted(SENSITIVE_HEADERS))}) and fields "
        f"({', '.join(sorted(SENSITIVE_FIELDS))}) by name; {red.secret_count} configured "
        "secret values wherever they appear; anything shaped like a JWT or a Bearer-scheme "
        "token. Token requests are left out."
    )
    if red.personal is None:
        personal = (
            "Personal data: NOT masked. Make the bundle with --redact-personal to mask student "
            "names, birth dates, agency ids, addresses, emails and phones."
        )
    else:
        personal = (
            "Personal data: masked with stable placeholders such as [LastName-1] (the same "
            f"value, the same placeholder, in every file; {red.personal.summary}): the content "
            "of these elements wherever they appear, and each of their values wherever else "
            "it shows (notes, tracking ids, messages): "
            + "; ".join(f"{k}: {', '.join(v)}" for k, v in PERSONAL_ELEMENTS.items())
            + "."
        )
    wrap = textwrap.TextWrapper(
        width=92, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False
    )
    return f"""Support bundle for request {rid}
Made {_iso(made)} by workbench {__version__}.

Contents
  calls.har        {len(calls)} recorded HTTP calls about this id, as a HAR 1.2 log; open it in
                   a browser's developer tools (Network tab, import HAR). {listed} of them
                   are list calls in which the id appeared or vanished, their bodies cut down
                   to this id's items.
  documents/       {len(files)} PESC XML documents, unescaped and pretty-printed, in the order
                   first seen: 'sent' by us, 'received' from the partner.
  validation.json  each document's validation against the PESC schemas: status, schema,
                   note, errors (lines are lines of the bundled file), where it was seen.
  timeline.csv     everything that happened to this id, in time order.

Redactions applied
{wrap.fill(secrets)}
{wrap.fill(personal)}
"""


def _write_zip(out_dir: Path, rid: str, made: datetime, members: dict[str, str]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{re.sub(r'[^A-Za-z0-9._-]+', '_', rid)[:100]}-{made:%Y%m%dT%H%M%SZ}"
    path, n = out_dir / f"{stem}.zip", 1
    while path.exists():
        n += 1
        path = out_dir / f"{stem}-{n}.zip"
    buffer = io.BytesIO()
    stamp = made.timetuple()[:6]
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            info = zipfile.ZipInfo(name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, text.encode("utf-8"))
    part = path.with_name(path.name + ".part")
    part.write_bytes(buffer.getvalue())
    os.replace(part, path)
    return path


def _iso(moment: Any) -> str:
    """ISO 8601 UTC with milliseconds and a ``Z`` (what HAR readers parse)."""
    if _missing(moment):
        return ""
    when = pd.Timestamp(moment)
    when = when.tz_localize(UTC) if when.tzinfo is None else when.tz_convert(UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, list | dict | str) and bool(pd.isna(value)))


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts of plain Python values (None for missing), ready for JSON."""
    return [{k: _plain(v) for k, v in record.items()} for record in frame.to_dict("records")]


def _plain(value: Any) -> Any:
    if _missing(value):
        return None
    return value.item() if isinstance(value, np.generic) else value
