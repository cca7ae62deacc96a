"""Support bundles: a zip of ``calls.har`` (the calls about a request, token calls left out,
list calls cut to its items), ``documents/NN-<sent|received>-<root>.xml``, ``validation.json``
and ``timeline.csv``, masked by ``http.masking`` (and ``redaction``, for personal data).

>>> make_bundle(store, "7c1d0b52...", secrets=profile.secrets())  # doctest: +SKIP
PosixPath('data/bundles/7c1d0b52...-20260302T090000Z.zip')
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from workbench.bundle.documents import find_documents, validations
from workbench.bundle.har import calls_about, har_log, iso
from workbench.bundle.redaction import Personal
from workbench.errors import ConfigError, StoreError
from workbench.folders import create_private
from workbench.http.masking import Redactor
from workbench.pesc.fields import environment_of
from workbench.store import Store
from workbench.store.identity import SANDBOX_TITLE

__all__ = ["DEFAULT_OUT_DIR", "make_bundle", "make_bundle_from_profile"]

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
    found = find_documents(store, rid, calls, store.document(rid))
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
    checked = json.dumps(validations(found, schemas_dir), indent=2, ensure_ascii=False)
    har = har_log(calls, rid, about, redactor, mask)
    # What the store holds was masked when written: kept as written, tokens and JWTs aside (a
    # short key must not turn the timeline's dates into [REDACTED]-11-27).
    members = {
        "calls.har": json.dumps(har, indent=2, ensure_ascii=False),
        "timeline.csv": mask(redactor.stored(timeline.to_csv(index=False, lineterminator="\n"))),
        "validation.json": mask(redactor.stored(checked)),
        **{
            f"documents/{d.file_name(n)}": mask(redactor.document(d.text))
            for n, d in enumerate(found, start=1)
        },
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
    if not path.is_file():  # opening a Store would create an empty database
        raise StoreError(f"There is no database at {path}: run `workbench pull` first.")
    secrets = resolved.secrets()
    with Store(path, secrets=secrets, read_only=True) as store:
        return make_bundle(
            store, request_id, out_dir=out_dir, secrets=secrets, redact_personal=redact_personal
        )
