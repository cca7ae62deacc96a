"""Masking keeps ids, links and JSON intact, and catches secrets in their escaped forms."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

import workbench as wb
from tests.pull.hostile import HostilePartner, body
from tests.store.helpers import exchange
from workbench import spec
from workbench.errors import StoreError
from workbench.ids import request_path
from workbench.redact import MASK, Redactor
from workbench.sandbox.generator import transcript_request_xml
from workbench.store import Store

DETAIL = {"PESCXML": "<CollegeTranscript/>"}


def test_a_secret_inside_an_item_id_keeps_the_id_and_its_links(tmp_path: Path) -> None:
    secret = "2024-0001"  # e.g. a password that is also part of a document number
    store = Store(tmp_path / "wb.db", secrets=[secret])
    for _ in range(2):  # a re-fetched document replaces its child records
        store.upsert_transcript(
            "T-2024-0001",
            detail=DETAIL,
            flat={"school_name": f"Demo {secret}"},
            children={
                "courses": [{"title": f"Course {secret}"}, {"title": "Calculus"}],
                "sessions": [{"session_name": f"Fall {secret}"}],
            },
        )
    store.upsert_request(
        "R-2024-0001", detail=DETAIL, flat={}, children={"recipients": [{"name": secret}]}
    )
    transcript = store.table("transcripts_received").iloc[0]
    assert transcript["transcript_id"] == "T-2024-0001"
    assert transcript["school_name"] == f"Demo {MASK}"
    courses = store.table("courses")
    assert courses["transcript_id"].tolist() == ["T-2024-0001"] * 2
    assert courses["title"].tolist() == [f"Course {MASK}", "Calculus"]
    records = store.table("document_records")
    assert records["parent_id"].tolist() == ["T-2024-0001"]
    assert records["record_json"].tolist() == [json.dumps({"session_name": f"Fall {MASK}"})]
    assert store.table("transcript_requests")["request_id"].tolist() == ["R-2024-0001"]
    recipients = store.table("recipients")
    assert recipients[["request_id", "name"]].values.tolist() == [["R-2024-0001", MASK]]
    store.close()


def _escaped(secret: str) -> set[str]:
    """The forms a stored JSON or XML text may hold ``secret`` in."""
    xml = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    forms = {secret, xml, xml.replace('"', "&quot;")}
    return forms | {json.dumps(f, ensure_ascii=a)[1:-1] for f in set(forms) for a in (True, False)}


@pytest.mark.parametrize(
    "secret",
    ['pa"ss-2024', "back\\slash-99", "sécret-ünï", "R&D-s3cret<x>"],
    ids=["quote", "backslash", "non-ascii", "ampersand"],
)
def test_no_escaped_form_of_a_secret_reaches_the_file(tmp_path: Path, secret: str) -> None:
    forms = _escaped(secret)
    assert len(forms) > 1  # each case has an escaped form to catch
    store = Store(tmp_path / "wb.db", secrets=[secret])
    text = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    xml = f'<X a="{text.replace(chr(34), "&quot;")}">{text}</X>'
    for ascii_only in (True, False):
        body = json.dumps(
            [{"RequestID": "R-1", "Q": secret, "PESCXML": xml}], ensure_ascii=ascii_only
        )
        store.record_call(exchange(response_body=body, request_body=body, error=body))
    store.record_snapshot(None, "supplier_requests", [{"RequestID": "R-2", "Note": secret}])
    store.upsert_transcript(
        "T-1",
        detail={"PESCXML": xml, "Note": secret},
        flat={"student_last_name": secret, "school_name": "Demo"},
        children={
            "courses": [{"Title X": secret, "title": "ok"}, {"grade": [secret]}],
            "sessions": [{"session_name": secret}],
        },
        validation=[f"bad {secret}"],
        parse_error=f"line 1: {xml}",
    )
    assert store.table("courses")["title"].tolist()[0] == "ok"
    store.close()
    data = b"".join(f.read_bytes() for f in tmp_path.iterdir())
    for form in forms:
        assert form.encode() not in data, f"{form!r} found"


@pytest.mark.parametrize("secret", ["true", "null", "1234"])
def test_a_secret_that_looks_like_json_syntax_leaves_valid_json(
    tmp_path: Path, secret: str
) -> None:
    store = Store(tmp_path / "wb.db", secrets=[secret])
    values = {"release_authorized": True, "note": None, "request_count": 1234, "x": f"a {secret} b"}
    store.upsert_request(
        "R-1",
        detail={"PESCXML": "<X/>", **values},
        flat=values,
        children={"recipients": [values], "holds": [values]},
        validation=values,
    )
    store.record_snapshot(None, "supplier_requests", [{"RequestID": "R-1", **values}])
    row = store.current_documents("supplier_requests", ("pesc_json", "detail_json", "validation"))
    texts = row.iloc[0].tolist()
    texts += store.table("document_records")["record_json"].tolist()
    texts += store.table("snapshot_items")["item_json"].tolist()
    for text in texts:
        decoded = json.loads(text)
        assert decoded["release_authorized"] is True and decoded["note"] is None
        if secret == "1234":
            assert decoded["request_count"] == MASK
        else:
            assert decoded["request_count"] == 1234 and decoded["x"] == f"a {MASK} b"
    assert store.table("recipients")["release_authorized"].tolist() == [1]
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
    # A later write of the group fails (a child row whose parent does not exist): all of it,
    # the first detail's ALTER TABLE included, is rolled back.
    orphans = [
        dataclasses.replace(kid, rows=[("NO-SUCH-PARENT", *row[1:]) for row in kid.rows])
        for kid in second.kids or []
    ]
    with pytest.raises(StoreError, match="FOREIGN KEY"):
        store.write_details([first, dataclasses.replace(second, kids=orphans)])
    store.write_details([first])
    assert store.table("courses")["new_col"].tolist() == ["v"]
    store.close()


def test_data_masks_value_by_value() -> None:
    scrub = Redactor(["1234", "true"])
    value = {"pin": 1234, "ok": True, "password": "x", "n": [1, "a true b"], "e": None}
    assert scrub.data(value) == {
        "pin": MASK,
        "ok": True,
        "password": MASK,
        "n": [1, f"a {MASK} b"],
        "e": None,
    }
    clean = {"n": 1}
    assert scrub.data(clean) is clean


def test_a_document_is_stored_as_received_but_for_a_secret_the_partner_echoed_in_it(
    tmp_path: Path,
) -> None:
    # Secrets too short or common to mask are refused at load, so a configured secret found in
    # a document is a real echo: masked there too, and every other byte (ids, dates) is kept.
    request_id = "R-2026-0001"
    xml = transcript_request_xml(
        7, 1, request_id=request_id, created=datetime(2026, 2, 20, 9, tzinfo=UTC)
    )
    with HostilePartner() as partner:
        secret = partner.env["WORKBENCH_SUBSCRIPTION_KEY"]
        echoed = re.sub(r"</[\w:]*TranscriptRequest>\s*$", f"<!-- {secret} -->\\g<0>", xml)
        assert echoed != xml
        item = {"RequestID": request_id, "RequestDate": "2026-02-20T09:00:00Z"}
        partner.answer("GET", spec.SUPPLIER_PENDING_PATH, body([item]))
        detail = request_path(spec.SUPPLIER_REQUEST_PATH, request_id)
        partner.answer("GET", detail, body([{**item, "PESCXML": echoed}]))
        with wb.connect(env=partner.env, db=tmp_path / "wb.db") as w:
            w.pull(progress=False)
            stored = w.store.document(request_id)
            row = w.store.table("transcript_requests").iloc[0]
    assert stored == echoed.replace(secret, MASK) and "2026-02-20" in stored
    assert row["request_id"] == request_id and "2026-02-20" in str(row["request_date"])
    data = b"".join(f.read_bytes() for f in tmp_path.glob("wb.db*"))
    assert secret.encode() not in data
