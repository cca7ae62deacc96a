"""Validation at report time: documents stored while no schema folder was configured (or
while it lacked their schema) are validated when a report runs, and the result is kept.

A pull validates each document it fetches against ``WORKBENCH_PESC_SCHEMAS`` when that is set.
Set it afterwards and the next report (``--no-pull`` included) validates what was never
validated; what it finds is written to the store (``documents.validation``, which the
reconciliation reads for each current version), so the report after that has nothing left to
do. A document already tried against the same folder without a result (no schema there for
its message) is not tried again until the folder changes.

>>> with Store("data/workbench.db") as store:  # doctest: +SKIP
...     print(validate_stored(store, schemas_dir="../shared/pesc/xsd"))
Validated 48 stored documents against ../shared/pesc/xsd: 40 valid, 8 invalid.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench import pesc
from workbench.pesc.schemas import INVALID, NOT_VALIDATED, SCHEMAS_VARIABLE, VALID
from workbench.store import Store

_PENDING = (
    "SELECT entity, item_id, version, pescxml, validation FROM documents "
    "WHERE pescxml IS NOT NULL AND parse_error IS NULL AND (validation IS NULL "
    "OR json_extract(validation, '$.status') = ?) ORDER BY entity, item_id, version"
)


@dataclass(frozen=True)
class StoredValidation:
    """What :func:`validate_stored` did: the folder it used (None: none configured), how many
    stored documents it validated and what became of them, and how many stay not validated."""

    folder: Path | None
    valid: int = 0
    invalid: int = 0
    not_validated: int = 0  # still without a result (no folder, or no schema for them there)
    note: str | None = None  # why they stay not validated

    @property
    def checked(self) -> int:
        """Documents validated now, with a result (valid or invalid)."""
        return self.valid + self.invalid

    def __str__(self) -> str:
        parts = []
        if self.checked:
            parts.append(
                f"Validated {self.checked} stored documents against {self.folder}: "
                f"{self.valid} valid, {self.invalid} invalid."
            )
        if self.not_validated:
            parts.append(f"{self.not_validated} stored documents are not validated: {self.note}.")
        return " ".join(parts) or "Every stored document was validated already."


def validate_stored(
    store: Store, *, schemas_dir: str | os.PathLike[str] | None = None
) -> StoredValidation:
    """Validate the stored documents that were never validated against the schema folder
    (``schemas_dir``, else ``WORKBENCH_PESC_SCHEMAS``) and keep the results in ``store``
    (opened for writing). Without a folder nothing is written: the outcome counts the
    documents not validated and says how to validate them."""
    directory = schemas_dir if schemas_dir is not None else os.environ.get(SCHEMAS_VARIABLE)
    pending = store.db.execute(_PENDING, [NOT_VALIDATED]).fetchall()
    if not directory:
        note = (
            f"set {SCHEMAS_VARIABLE} to a folder of PESC XSDs and report again "
            "(--no-pull is enough)"
        )
        return StoredValidation(None, not_validated=len(pending), note=note)
    folder = Path(directory).expanduser().resolve()
    if not folder.is_dir():
        note = f"the schema folder {folder} does not exist (check {SCHEMAS_VARIABLE})"
        return StoredValidation(folder, not_validated=len(pending), note=note)
    counts = {VALID: 0, INVALID: 0, NOT_VALIDATED: 0}
    updates: list[tuple[str, str, int, str]] = []
    notes: set[str] = set()
    for entity, item_id, version, xml, stored in pending:
        if _tried(stored, folder):
            counts[NOT_VALIDATED] += 1
            notes.add(str(_load(stored).get("note")))
            continue
        result = pesc.validate(xml, schemas_dir=folder)
        record: dict[str, Any] = result.as_record()
        if result.status == NOT_VALIDATED:
            record["schemas"] = str(folder)  # tried here: not again until the folder changes
            notes.add(str(result.note))
        counts[result.status] += 1
        updates.append((entity, item_id, version, json.dumps(record, ensure_ascii=False)))
    if updates:
        _write(store, updates)
    return StoredValidation(
        folder,
        counts[VALID],
        counts[INVALID],
        counts[NOT_VALIDATED],
        "; ".join(sorted(notes)) or None,
    )


def _write(store: Store, updates: list[tuple[str, str, int, str]]) -> None:
    """One transaction: each document's validation."""
    with store.batch():
        store.db.conn.executemany(
            "UPDATE documents SET validation = ?4 WHERE entity = ?1 AND item_id = ?2 "
            "AND version = ?3",
            updates,
        )


def _load(stored: str | None) -> dict[str, Any]:
    try:
        found = json.loads(stored) if stored else {}
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _tried(stored: str | None, folder: Path) -> bool:
    """Whether this folder was already tried on the document, without a result."""
    return _load(stored).get("schemas") == str(folder)
