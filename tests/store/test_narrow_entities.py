"""Narrow entity rows (schema v4): a document's XML, flattened JSON, validation and detail item
live in its ``documents`` row, never inline; a detail without XML keeps its item in
``document_records``; what is given without a detail amends the current document."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.store.helpers import at, store_detail
from workbench.errors import StoreError
from workbench.sandbox import Sandbox
from workbench.store import Store

MOVED = {"pescxml", "pesc_json", "validation", "detail_json"}
VALID = {"status": "valid", "errors": []}


def test_a_pull_stores_narrow_rows_and_every_document_with_its_texts(
    sandbox_factory: Callable[..., Sandbox], connect_to: Callable[..., Any], tmp_path: Path
) -> None:
    sb = sandbox_factory(initial_requests=4, initial_transcripts=3)
    w = connect_to(sb, db=tmp_path / "wb.db")
    assert w.pull(progress=False).status == "ok"
    for list_name, table, count in (
        ("supplier_requests", "transcript_requests", 4),
        ("consumer_transcripts", "transcripts_received", 3),
    ):
        rows = w.store.table(table)
        assert len(rows) == count and not MOVED & set(rows.columns)
        current = w.store.current_documents(list_name, tuple(sorted(MOVED)))
        assert len(current) == count
        for item_id, document in current.iterrows():
            assert document["pescxml"] == w.store.document(str(item_id))
            assert json.loads(document["detail_json"])["RequestID"] == item_id
            assert json.loads(document["pesc_json"])["document_id"]
            assert json.loads(document["validation"])["status"]


def test_a_detail_without_xml_keeps_its_item_until_a_document_comes(store: Store) -> None:
    store_detail(
        store,
        "supplier_requests",
        "R-1",
        seen_at=at(0),
        detail={"RequestID": "R-1", "Note": "no XML"},
        parse_error="no PESCXML in the answer",
    )
    records = store.table("document_records")
    assert records["record_type"].tolist() == ["detail"]
    assert json.loads(records["record_json"].iloc[0]) == {"RequestID": "R-1", "Note": "no XML"}
    assert store.versions("R-1").empty

    store_detail(
        store,
        "supplier_requests",
        "R-1",
        seen_at=at(1),
        detail={"RequestID": "R-1", "PESCXML": "<TR/>"},
        validation=VALID,
    )
    assert store.table("document_records").empty  # its document holds the item now
    document = store.current_documents("supplier_requests", ("detail_json", "validation"))
    assert json.loads(document.loc["R-1", "detail_json"]) == {"RequestID": "R-1"}
    assert json.loads(document.loc["R-1", "validation"]) == VALID


def test_a_refetched_document_keeps_its_version_and_takes_the_latest_texts(store: Store) -> None:
    detail = {"RequestID": "R-1", "RequestDate": "2026-03-01", "PESCXML": "<TR/>"}
    store_detail(
        store, "supplier_requests", "R-1", seen_at=at(0), detail=detail, flat={"document_id": "D-1"}
    )
    later = {**detail, "RequestDate": "2026-03-05"}  # the same document, listed again
    store_detail(
        store,
        "supplier_requests",
        "R-1",
        seen_at=at(9),
        detail=later,
        flat={"document_id": "D-1"},
        validation=VALID,
    )
    versions = store.versions("R-1")
    assert versions["version"].tolist() == [1]
    assert str(versions["first_seen_at"].iloc[0]) == str(at(0))
    assert json.loads(versions["detail_json"].iloc[0])["RequestDate"] == "2026-03-05"
    assert json.loads(versions["validation"].iloc[0]) == VALID
    # Fetched once more without schemas: the validation of the same content stays.
    store_detail(
        store, "supplier_requests", "R-1", seen_at=at(12), detail=later, flat={"document_id": "D-1"}
    )
    assert json.loads(store.versions("R-1")["validation"].iloc[0]) == VALID


def test_validation_or_fields_given_without_a_detail_amend_the_current_document(
    store: Store,
) -> None:
    store_detail(store, "supplier_requests", "R-1", seen_at=at(0), detail={"PESCXML": "<TR>1</TR>"})
    store_detail(store, "supplier_requests", "R-1", seen_at=at(1), detail={"PESCXML": "<TR>2</TR>"})
    store_detail(store, "supplier_requests", "R-1", validation=VALID)
    store_detail(store, "supplier_requests", "R-1", flat={"document_id": "D-2", "extra": 1})
    versions = store.versions("R-1").set_index("version")
    assert json.loads(versions.loc[2, "validation"]) == VALID
    assert json.loads(versions.loc[2, "pesc_json"]) == {"document_id": "D-2", "extra": 1}
    assert pd.isna(versions.loc[1, "validation"])  # an earlier version is left as it was
    assert store.table("transcript_requests")["document_id"].tolist() == ["D-2"]


def test_current_documents_refuses_a_column_it_lacks_as_a_store_error(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no such column: d\.xml"):
        store.current_documents("supplier_requests", ("xml",))
    assert store.current_documents("consumer_transcripts").empty
