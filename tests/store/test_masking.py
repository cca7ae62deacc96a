"""Masking keeps ids, links and JSON intact, and catches secrets in their escaped forms."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import workbench as wb
from tests.hostile.partner import HostilePartner, body
from tests.store.helpers import exchange, store_detail
from workbench import spec
from workbench.errors import StoreError
from workbench.http.answers import request_path
from workbench.http.masking import MASK, Redactor
from workbench.sandbox.generator import transcript_request_xml
from workbench.store import Store

DETAIL = {"PESCXML": "<CollegeTranscript/>"}


def test_documents_are_stored_as_written_whatever_a_secret_spells(tmp_path: Path) -> None:
    # Partners issue credentials of any length: a password "2024-0001" must not rewrite the
    # document numbers, names and links that spell it.
    secret = "2024-0001"
    store = Store(tmp_path / "wb.db", secrets=[secret])
    for _ in range(2):  # a re-fetched document replaces its child records
        store_detail(
            store,
            "consumer_transcripts",
            "T-2024-0001",
            detail=DETAIL,
            flat={"school_name": f"Demo {secret}"},
            children={
                "courses": [{"title": f"Course {secret}"}, {"title": "Calculus"}],
                "sessions": [{"session_name": f"Fall {secret}"}],
            },
        )
    store.record_snapshot(None, "supplier_requests", [{"RequestID": "R-1", "Note": secret}])
    transcript = store.table("transcripts_received").iloc[0]
    assert transcript["transcript_id"] == "T-2024-0001"
    assert transcript["school_name"] == f"Demo {secret}"
    courses = store.table("courses")
    assert courses["title"].tolist() == [f"Course {secret}", "Calculus"]
    records = store.table("document_records")
    assert records["record_json"].tolist() == [json.dumps({"session_name": f"Fall {secret}"})]
    assert secret in store.table("snapshot_items")["item_json"].iloc[0]
    store.close()


def _escaped(secret: str) -> set[str]:
    """The forms a stored JSON or XML text may hold ``secret`` in."""
    xml = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    forms = {secret, xml, xml.replace('"', "&quot;")}
    return forms | {json.dumps(f, ensure_ascii=a)[1:-1] for f in set(forms) for a in (True, False)}


@pytest.mark.parametrize(
    "secret",
    ['pa"ss-2024', "back\\slash-99", "sécret-ünï", "R&D-s3cret<x>", "7chars!"],
    ids=["quote", "backslash", "non-ascii", "ampersand", "short"],
)
def test_no_escaped_form_of_a_secret_in_a_login_or_an_error_reaches_the_file(
    tmp_path: Path, secret: str
) -> None:
    forms = _escaped(secret)
    store = Store(tmp_path / "wb.db", secrets=[secret])
    text = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    xml = f'<X a="{text.replace(chr(34), "&quot;")}">{text}</X>'
    for ascii_only in (True, False):
        body = json.dumps([{"Message": secret, "PESCXML": xml}], ensure_ascii=ascii_only)
        store.record_call(exchange(status=400, response_body=body, error=body))
        store.record_call(exchange(status=None, response_body="", error=f"dropped: {body}"))
        store.record_call(
            exchange(interface="identity", status=200, request_body=body, response_body=body)
        )
    store.record_detail_failure("supplier_requests", "R-1", error=f"refused: {xml}")
    store.close()
    data = b"".join(f.read_bytes() for f in tmp_path.iterdir())
    for form in forms:
        assert form.encode() not in data, f"{form!r} found"


@pytest.mark.parametrize("secret", ["true", "null", "12345678"])
def test_a_secret_that_looks_like_json_syntax_leaves_an_error_answer_valid_json(
    tmp_path: Path, secret: str
) -> None:
    store = Store(tmp_path / "wb.db", secrets=[secret])
    values = {"release_authorized": True, "note": None, "request_count": 12345678,
              "x": f"a {secret} b"}  # fmt: skip
    call_id = store.record_call(exchange(status=400, response_body=json.dumps(values)))
    stored = store.table("calls", where="id = ?", params=[call_id])["response_body"].iloc[0]
    decoded = json.loads(stored)
    assert decoded["release_authorized"] is True and decoded["note"] is None
    if secret == "12345678":
        assert decoded["request_count"] == MASK
    else:
        assert decoded["request_count"] == 12345678 and decoded["x"] == f"a {MASK} b"
    store.close()


def test_a_rolled_back_column_is_added_again(tmp_path: Path) -> None:
    store = Store(tmp_path / "wb.db", secrets=["zz-secret"])
    first = store.prepare_detail(
        "consumer_transcripts", "T-1", detail=DETAIL, request_date=None, seen_at=None,
        parse_error=None, validation=None, flat={}, children={"courses": [{"new_col": "v"}]},
    )  # fmt: skip
    second = store.prepare_detail(
        "consumer_transcripts", "T-2", detail=DETAIL, request_date=None, seen_at=None,
        parse_error=None, validation=None, flat={}, children={"courses": [{"title": "x"}]},
    )  # fmt: skip
    # A later write of the group fails (a row naming a call that does not exist): all of it,
    # the first detail's ALTER TABLE included, is rolled back.
    broken = dataclasses.replace(second, row={**second.row, "detail_call_id": 999})
    with pytest.raises(StoreError, match="FOREIGN KEY"):
        store.write_details([first, broken])
    store.write_details([first])
    assert store.table("courses")["new_col"].tolist() == ["v"]
    store.close()


def test_data_masks_value_by_value() -> None:
    scrub = Redactor(["12345678", "true", "25"])
    value = {"pin": 12345678, "ok": True, "password": "x", "n": [25, "a true b"], "e": None}
    assert scrub.data(value) == {
        "pin": MASK,
        "ok": True,
        "password": MASK,
        "n": [25, f"a {MASK} b"],  # a short number is a count far likelier than an echo
        "e": None,
    }
    clean = {"n": 1}
    assert scrub.data(clean) == clean


def test_a_document_is_stored_as_received_whatever_the_secrets_spell(tmp_path: Path) -> None:
    # A subscription key "2026" spells every date of the year; the partner's document is its
    # data, never rewritten, while the key is masked wherever it stands as a credential.
    request_id = "R-2026-0001"
    xml = transcript_request_xml(
        7, 1, request_id=request_id, created=datetime(2026, 2, 20, 9, tzinfo=UTC)
    )
    with HostilePartner() as partner:
        env = {**partner.env, "WORKBENCH_SUBSCRIPTION_KEY": "2026"}
        item = {"RequestID": request_id, "RequestDate": "2026-02-20T09:00:00Z"}
        partner.answer("GET", spec.SUPPLIER_PENDING_PATH, body([item]))
        detail = request_path(spec.SUPPLIER_REQUEST_PATH, request_id)
        partner.answer("GET", detail, body([{**item, "PESCXML": xml}]))
        with wb.connect(env=env, db=tmp_path / "wb.db") as w:
            w.pull(progress=False)
            stored = w.store.document(request_id)
            row = w.store.table("transcript_requests").iloc[0]
            calls = w.store.table("calls")
    assert stored == xml and "2026-02-20" in stored
    assert row["request_id"] == request_id and "2026-02-20" in str(row["request_date"])
    assert all("2026" not in h for h in calls["request_headers"].dropna())
    answers = [json.loads(b) for b in calls["response_body"].dropna() if "PESCXML" in b]
    assert [a[0]["PESCXML"] for a in answers] == [xml]  # the call keeps it as written too
