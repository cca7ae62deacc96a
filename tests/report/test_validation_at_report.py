"""Validation at report time: documents pulled while no schema folder was set are validated by
the next report (``--no-pull`` included), and the results are kept in the store."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.report.conftest import figures
from workbench import pesc
from workbench.cli import app
from workbench.pesc.schemas import SCHEMAS_VARIABLE
from workbench.report.validation import validate_stored
from workbench.store import Store

PROJECT = Path(__file__).resolve().parents[2]
CURRENT = (
    "SELECT d.entity, d.item_id, d.pescxml, d.parse_error, d.validation FROM documents d "
    "JOIN {entity} e ON e.{id} = d.item_id AND e.current_version = d.version "
    "WHERE d.entity = '{entity}'"
)
ENTITIES = {"transcript_requests": "request_id", "transcripts_received": "transcript_id"}


@pytest.fixture(scope="module")
def unvalidated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store pulled from a fresh sandbox with no schema folder configured."""
    db = tmp_path_factory.mktemp("unvalidated") / "workbench.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(SCHEMAS_VARIABLE, raising=False)
        with wb.connect("sandbox", db=db) as w:
            w.pull(progress=False)
    return db


@pytest.fixture
def db(unvalidated_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of ``unvalidated_db``; no WORKBENCH_* setting, cwd in tmp."""
    target = tmp_path / "workbench.db"
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{unvalidated_db}{suffix}").exists():
            shutil.copy2(f"{unvalidated_db}{suffix}", f"{target}{suffix}")
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("WORKBENCH_")]:
        monkeypatch.delenv(name)
    return target


def current_documents(path: Path) -> list[tuple[str, str, str, str | None, dict]]:
    """Every entity's current document: entity, id, XML, parse error, stored validation."""
    with Store(path, read_only=True) as store:
        rows = [
            row
            for entity, id_column in ENTITIES.items()
            for row in store.db.execute(CURRENT.format(entity=entity, id=id_column)).fetchall()
        ]
    return [(e, i, x, p, json.loads(v) if v else {}) for e, i, x, p, v in rows]


def document_statuses(path: Path) -> list[str | None]:
    """The status kept for every row of ``documents``."""
    with Store(path, read_only=True) as store:
        found = [r[0] for r in store.db.execute("SELECT validation FROM documents").fetchall()]
    return [json.loads(v).get("status") if v else None for v in found]


def statuses(path: Path) -> list[str | None]:
    """The status kept for every document in ``documents`` (entity rows keep none: the
    reconciliation reads their current version's)."""
    return document_statuses(path)


def report(db: Path, out: Path) -> tuple[str, str]:
    """``workbench report --no-pull`` on the project's notebook: its stdout and HTML."""
    result = CliRunner().invoke(
        app, ["report", "--no-pull", "--db", str(db), "--output-dir", str(out)]
    )
    assert result.exit_code == 0, result.output
    html = Path(result.stdout.strip().splitlines()[-1])
    return result.stdout, html.read_text(encoding="utf-8")


def expected_problems(path: Path, xsd_dir: Path) -> int:
    """Current documents that fail to parse or validate, counted here with pesc.validate."""
    return sum(
        1
        for _, _, xml, parse_error, _ in current_documents(path)
        if parse_error is not None or pesc.validate(xml, schemas_dir=xsd_dir).status == "invalid"
    )


@pytest.mark.slow
def test_a_report_validates_what_the_pull_did_not(
    db: Path, tmp_path: Path, xsd_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(PROJECT / "notebooks"))
    documents = current_documents(db)
    unparsed = sum(1 for d in documents if d[3] is not None)
    stored = document_statuses(db).count("not validated")
    assert len(documents) > unparsed and stored >= len(documents) - unparsed
    assert {d[4].get("status") for d in documents if d[3] is None} == {"not validated"}

    stdout, html = report(db, tmp_path / "first")
    found = figures(html)
    assert found["documents_not_validated"] == str(len(documents) - unparsed)
    assert found["document_problems"] == str(unparsed)
    advice = f"set {SCHEMAS_VARIABLE} to a folder of PESC XSDs and report again"
    assert advice in re.sub(r"<wbr/?>", "", html)  # wraps where a word starts
    assert "Validated" not in stdout
    assert set(statuses(db)) <= {"not validated", "invalid"}  # nothing written without schemas

    monkeypatch.setenv(SCHEMAS_VARIABLE, str(xsd_dir))
    stdout, html = report(db, tmp_path / "second")
    found = figures(html)
    assert f"Validated {stored} stored documents against {xsd_dir.resolve()}" in stdout
    assert found["documents_not_validated"] == "0"
    assert found["document_problems"] == str(expected_problems(db, xsd_dir))
    assert "not validated" not in statuses(db)  # kept in documents
    for _, _, _, parse_error, kept in current_documents(db):
        if parse_error is None:
            assert kept["status"] in {"valid", "invalid"} and kept["schema"].endswith(".xsd")

    with Store(db) as store:  # a second report has nothing left to validate
        again = validate_stored(store)
    assert (again.checked, again.not_validated) == (0, 0)
    assert str(again) == "Every stored document was validated already."


def test_without_a_folder_nothing_is_written_and_the_way_is_said(db: Path) -> None:
    before = statuses(db)
    with Store(db) as store:
        outcome = validate_stored(store)
    assert outcome.folder is None and outcome.checked == 0
    assert outcome.not_validated == document_statuses(db).count("not validated") > 0
    assert f"set {SCHEMAS_VARIABLE} to a folder of PESC XSDs" in str(outcome)
    assert statuses(db) == before


def test_a_missing_folder_is_named_and_changes_nothing(db: Path, tmp_path: Path) -> None:
    before = statuses(db)
    with Store(db) as store:
        outcome = validate_stored(store, schemas_dir=tmp_path / "nowhere")
    assert outcome.checked == 0 and outcome.not_validated > 0
    assert f"{tmp_path / 'nowhere'} does not exist (check {SCHEMAS_VARIABLE})" in str(outcome)
    assert statuses(db) == before


def test_a_folder_without_their_schema_is_tried_once_then_again_when_it_changes(
    db: Path, tmp_path: Path, xsd_dir: Path
) -> None:
    empty = tmp_path / "no-schemas"
    empty.mkdir()
    with Store(db) as store:
        first = validate_stored(store, schemas_dir=empty)
        second = validate_stored(store, schemas_dir=empty)
        third = validate_stored(store, schemas_dir=xsd_dir)
    assert first.checked == 0 and first.not_validated > 0
    assert "no schema for" in str(first)
    assert (second.checked, second.not_validated) == (0, first.not_validated)
    assert third.checked == first.not_validated and third.not_validated == 0
    assert third.valid + third.invalid == third.checked


def test_a_read_only_store_is_refused_with_a_store_error(db: Path, xsd_dir: Path) -> None:
    with Store(db, read_only=True) as store, pytest.raises(wb.StoreError):
        validate_stored(store, schemas_dir=xsd_dir)
