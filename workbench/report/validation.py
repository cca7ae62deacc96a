"""Validation at report time: stored documents never validated are validated against the schema
folder and the results kept; a folder without their schema is not tried again until it changes."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from workbench import pesc
from workbench.pesc.schemas import INVALID, NOT_VALIDATED, SCHEMAS_VARIABLE, VALID
from workbench.store import Store


@dataclass(frozen=True)
class StoredValidation:
    """What :func:`validate_stored` did: folder, valid, invalid, not validated."""

    folder: Path | None
    valid: int = 0
    invalid: int = 0
    not_validated: int = 0
    note: str | None = None

    @property
    def checked(self) -> int:
        """Documents validated now, with a result (valid or invalid)."""
        return self.valid + self.invalid

    def __str__(self) -> str:
        said = []
        if self.checked:
            said.append(f"Validated {self.checked} stored documents against {self.folder}: "
                        f"{self.valid} valid, {self.invalid} invalid.")  # fmt: skip
        if self.not_validated:
            said.append(f"{self.not_validated} stored documents are not validated: {self.note}.")
        return " ".join(said) or "Every stored document was validated already."


def validate_stored(
    store: Store, *, schemas_dir: str | os.PathLike[str] | None = None
) -> StoredValidation:
    """Validate the documents never validated and keep the results in ``store``."""
    directory = schemas_dir if schemas_dir is not None else os.environ.get(SCHEMAS_VARIABLE)
    pending = store.db.execute(
        "SELECT entity, item_id, version, pescxml, validation FROM documents WHERE pescxml IS "
        "NOT NULL AND parse_error IS NULL AND (validation IS NULL OR json_extract(validation, "
        "'$.status') = ?) ORDER BY entity, item_id, version", [NOT_VALIDATED],
    ).fetchall()  # fmt: skip
    if not directory:
        why = f"set {SCHEMAS_VARIABLE} to a folder of PESC XSDs and report again (--no-pull is "
        return StoredValidation(None, not_validated=len(pending), note=why + "enough)")
    folder = Path(directory).expanduser().resolve()
    if not folder.is_dir():
        why = f"the schema folder {folder} does not exist (check {SCHEMAS_VARIABLE})"
        return StoredValidation(folder, not_validated=len(pending), note=why)
    counts, notes, updates = {VALID: 0, INVALID: 0, NOT_VALIDATED: 0}, set(), []
    for entity, item_id, version, xml, stored in pending:
        kept = json.loads(stored) if stored else {}
        if isinstance(kept, dict) and kept.get("schemas") == str(folder):  # tried: no schema
            counts[NOT_VALIDATED] += 1
            notes.add(str(kept.get("note")))
            continue
        result = pesc.validate(xml, schemas_dir=folder)
        record = result.as_record()
        if result.status == NOT_VALIDATED:
            record["schemas"] = str(folder)  # tried here: not again until the folder changes
            notes.add(str(result.note))
        counts[result.status] += 1
        updates.append((json.dumps(record, ensure_ascii=False), entity, item_id, version))
    with store.batch():  # one transaction
        store.db.conn.executemany(
            "UPDATE documents SET validation = ? WHERE entity = ? AND item_id = ? AND version = ?",
            updates,
        )
    note = "; ".join(sorted(notes)) or None
    return StoredValidation(folder, counts[VALID], counts[INVALID], counts[NOT_VALIDATED], note)
