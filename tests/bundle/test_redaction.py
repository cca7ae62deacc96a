"""What never leaves in a bundle: secrets and tokens, always; personal data, on request."""

from __future__ import annotations

import html
import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from lxml import etree

from tests.watched import secrets_of
from workbench import pesc
from workbench.bundle import make_bundle
from workbench.sandbox import generator
from workbench.store import Store

from .conftest import Worked, exchange, members, plant

OPAQUE = ("opaque-access-token-0001", "opaque-refresh-token-0002")


def _spellings(value: str) -> set[str]:
    """How a value can be written in a member: as is, XML-escaped, inside a JSON string."""
    return {value, html.escape(value), json.dumps(value)[1:-1]}


def _leaks(files: dict[str, bytes], values: list[str], *, words: bool = False) -> list[str]:
    """``member: value`` for every value found in a decompressed member (``words``: whole)."""
    found = []
    for name, data in files.items():
        text = data.decode("utf-8")
        for value in values:
            for spelling in _spellings(value):
                pattern = rf"(?<!\w){re.escape(spelling)}(?!\w)" if words else re.escape(spelling)
                if re.search(pattern, text):
                    found.append(f"{name}: {value}")
    return found


def _leak_into_the_store(worked: Worked) -> list[str]:
    """Write secrets and tokens into the store past its scrubber; every value planted."""
    sb, rid = worked.sb, worked.request_id
    secret, password, key = (
        sb.credentials.supplier_client_secret,
        sb.credentials.intl_password,
        sb.credentials.subscription_key,
    )
    token = sb.issued_tokens[0]
    db = Path(worked.w.db)
    plant(
        db,
        rid,
        url=f"http://127.0.0.1:8765/exchange/api/transcriptrequests/{rid}"
        f"?access_token={OPAQUE[0]}&client_secret={secret}",
        request_headers=json.dumps(
            {"Authorization": f"Bearer {token}", "Subscription-Key": key, "X-Echo": secret}
        ),
        request_body=f"grant_type=password&password={password}&client_secret={secret}",
        response_headers=json.dumps({"content-type": "application/json", "set-cookie": "s=1"}),
        status=401,  # an error answer: masked by value, whatever it echoes
        response_body=json.dumps(
            {"refresh_token": OPAQUE[1], "Message": f"client {secret} refused", "jwt": token}
        ),
        error=f"refused for {password}",
    )
    plant(  # a token call, even one tied to the id, stays out
        db,
        rid,
        operation="token",
        method="POST",
        url="http://127.0.0.1:8765/identity/auth/connect/token",
        request_body=f"client_secret={secret}",
        response_body=json.dumps({"access_token": token}),
    )
    payload = worked.response_xml.replace("Financial", f"Financial {token}")
    with sqlite3.connect(db) as conn:  # a failed send whose document echoed our token
        conn.execute(
            "INSERT INTO outbox (operation, request_id, state, forced, payload, payload_sha256, "
            "created_at, updated_at) VALUES ('send_response', ?, 'failed', 1, ?, 'x', ?, ?)",
            (rid, payload, "2026-03-02T09:00:00.000000Z", "2026-03-02T09:00:00.000000Z"),
        )
    conn.close()
    return [*secrets_of(sb.credentials), *sb.issued_tokens, *OPAQUE]


@pytest.mark.parametrize("redact_personal", [False, True])
def test_no_secret_and_no_token_anywhere_even_if_the_store_held_them(
    worked, tmp_path, redact_personal
):
    planted = _leak_into_the_store(worked)
    path = make_bundle(
        worked.w.store,
        worked.request_id,
        out_dir=tmp_path,
        secrets=secrets_of(worked.sb.credentials),
        redact_personal=redact_personal,
    )
    files = members(path)
    assert _leaks(files, planted) == []
    assert not [v for v in planted if v.encode() in path.read_bytes()]
    har = json.loads(files["calls.har"])
    entries = har["log"]["entries"]
    assert not [e for e in entries if "/connect/token" in e["request"]["url"]]
    (leaky,) = [e for e in entries if "access_token=" in e["request"]["url"]]  # kept, masked
    assert leaky["request"]["url"].endswith("?access_token=[REDACTED]&client_secret=[REDACTED]")
    assert leaky["_error"] == "refused for [REDACTED]"
    assert "[REDACTED]" in files["calls.har"].decode()
    leaked_send = [n for n, v in files.items() if b"Financial [REDACTED]" in v]
    assert [n for n in leaked_send if n.startswith("documents/")]  # kept, masked, still XML
    for name in leaked_send:
        if name.startswith("documents/"):
            pesc.parse(files[name])


def test_a_document_in_a_bundle_is_the_partners_as_written(worked, tmp_path):
    """A secret a document spells (a short key spells dates) is kept there: the bundle shows
    the partner its own documents, never rewritten; the key is masked where it is one."""
    documents = [m for m in worked.documents if "2026" in m]
    assert documents
    path = make_bundle(
        worked.w.store, worked.request_id, out_dir=tmp_path, secrets=["2026"], redact_personal=False
    )
    files = members(path)
    kept = [v.decode() for n, v in files.items() if n.startswith("documents/")]
    kept.append(files["timeline.csv"].decode())  # made of dates
    assert kept and all("[REDACTED]" not in text for text in kept)
    assert "2026" in files["timeline.csv"].decode()
    har = json.loads(files["calls.har"])
    sent = [h for e in har["log"]["entries"] for h in e["request"]["headers"]]
    assert {"name": "authorization", "value": "[REDACTED]"} in sent


# -- personal data ------------------------------------------------------------------------------

PERSONAL = ("FirstName", "LastName", "BirthDate", "AgencyAssignedID", "SchoolAssignedPersonID",
            "EmailAddress")  # fmt: skip


def _values(xml: str, names: tuple[str, ...]) -> list[str]:
    root = pesc.parse(xml).root
    return sorted(
        {e.text.strip() for e in root.iter() if etree.QName(e).localname in names and e.text}
    )


def test_redact_personal_masks_the_students_in_every_member(worked, tmp_path):
    personal = sorted({v for xml in worked.documents for v in _values(xml, PERSONAL)})
    assert len(personal) > 10
    plain = members(make_bundle(worked.w.store, worked.request_id, out_dir=tmp_path / "a"))
    assert _leaks(plain, personal, words=True)  # without the option, they are there

    files = members(
        make_bundle(worked.w.store, worked.request_id, out_dir=tmp_path / "b", redact_personal=True)
    )
    assert _leaks(files, personal, words=True) == []
    documents = {n: v.decode() for n, v in files.items() if n.startswith("documents/")}
    assert documents
    for text in documents.values():
        pesc.parse(text)  # still XML
        assert "<GenderCode>" in text and "[FirstName-" in text
    assert "personal data masked" in json.loads(files["calls.har"])["log"]["comment"]
    # Stable: the request's student has one placeholder in its document and in the HAR.
    request = next(t for n, t in documents.items() if "TranscriptRequest" in n)
    first = re.search(r"<FirstName>(\[FirstName-\d+\])</FirstName>", request)
    assert first and first[1] in files["calls.har"].decode()
    assert request.count(first[1]) == 1


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> tuple[str, dict[str, bytes]]:
    """A request with an address, a phone and a note naming the student, stored XML-escaped
    (non-ASCII as JSON escapes), bundled with ``redact_personal``: (original XML, members)."""
    xml = generator.transcript_request_xml(
        7, 3, request_id="R-7", created=datetime(2026, 3, 2, tzinfo=UTC)
    )
    first, last = _values(xml, ("FirstName",))[0], _values(xml, ("LastName",))[0]
    xml = xml.replace(
        "<Contacts>",
        "<Contacts><Address><AddressLine>12 Elm Street</AddressLine><City>Sudbury</City>"
        "<StateProvinceCode>ON</StateProvinceCode><PostalCode>P3E 2C6</PostalCode></Address>"
        "<Phone><CountryPrefixCode>1</CountryPrefixCode><AreaCityCode>705</AreaCityCode>"
        "<PhoneNumber>5551234</PhoneNumber></Phone>",
    ).replace(
        "</TrnReq:Request>",
        f"<NoteMessage>Student {first} {last.upper()} asked twice</NoteMessage></TrnReq:Request>",
    )
    escaped = xml.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    folder = tmp_path_factory.mktemp("crafted")
    with Store(folder / "s.db") as store:
        store.record_call(exchange("R-7", json.dumps([{"RequestID": "R-7", "PESCXML": escaped}])))
        path = make_bundle(store, "R-7", out_dir=folder, redact_personal=True)
    return xml, members(path)


@pytest.mark.parametrize(
    ("element", "masked"),
    [
        ("FirstName", True),
        ("LastName", True),
        ("BirthDate", True),
        ("AgencyAssignedID", True),
        ("SchoolAssignedPersonID", True),
        ("EmailAddress", True),
        ("AddressLine", True),
        ("City", True),
        ("StateProvinceCode", True),
        ("PostalCode", True),
        ("CountryPrefixCode", True),
        ("AreaCityCode", True),
        ("PhoneNumber", True),
        ("GenderCode", False),
        ("OrganizationName", False),
        ("AgencyName", False),
        ("RequestTrackingID", False),
        ("DocumentID", False),
        ("TranscriptPurpose", False),
    ],
)
def test_which_elements_are_masked(crafted, element, masked):
    xml, files = crafted
    (document,) = [v.decode() for n, v in files.items() if n.startswith("documents/")]
    values = _values(xml, (element,))
    assert values, f"the crafted request has no {element}"
    bundled = [html.unescape(v) for v in re.findall(rf"<{element}>([^<]*)</{element}>", document)]
    if masked:
        assert all(re.fullmatch(rf"\[{element}-\d+\]", v) for v in bundled), bundled
        netted = [v for v in values if len(v) >= 6 or (len(v) >= 2 and not v.isdigit())]
        assert _leaks(files, netted, words=True) == []
    else:
        assert sorted(set(bundled)) == values


def test_personal_values_are_masked_outside_their_elements_too(crafted):
    xml, files = crafted
    (document,) = [v.decode() for n, v in files.items() if n.startswith("documents/")]
    note = re.search(r"<NoteMessage>([^<]*)</NoteMessage>", document)
    assert note and re.fullmatch(r"Student \[FirstName-\d+\] \[LastName-\d+\] asked twice", note[1])
    application = _values(xml, ("AgencyAssignedID",))
    tracking = re.search(r"<RecipientTrackingID>([^<]*)</RecipientTrackingID>", document)
    assert tracking and not [a for a in application if a in tracking[1]]
    har = files["calls.har"].decode()
    assert "&lt;FirstName&gt;[FirstName-1]&lt;/FirstName&gt;" in har  # escaped, masked
