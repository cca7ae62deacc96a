"""The bundle itself: gather the parts, write the README and the zip."""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
import zipfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._version import __version__
from workbench.bundle.documents import find_documents, validations
from workbench.bundle.har import calls_about, har_log
from workbench.bundle.plain import iso
from workbench.bundle.redaction import DEFAULT_OUT_DIR, PERSONAL_ELEMENTS, Personal, Redaction
from workbench.errors import ConfigError, StoreError
from workbench.folders import create_private
from workbench.pesc.fields import environment_of
from workbench.redact import SENSITIVE_FIELDS, SENSITIVE_HEADERS
from workbench.store import Store
from workbench.store.identity import SANDBOX_TITLE


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

    ``StoreError`` when the store knows nothing about the id; ``ConfigError`` when ``out_dir``
    cannot be written in. ``schemas_dir``: the PESC XSDs to validate against (default:
    ``WORKBENCH_PESC_SCHEMAS``).
    """
    rid = store.spelling_of(str(request_id))
    timeline = store.timeline(rid)
    stored = store.document(rid)
    if timeline.empty and stored is None:
        raise StoreError(
            f"The store at {store.path} holds nothing about {rid!r}: no call, list entry, "
            "outbox entry or document. Check the id, or pull first (workbench pull)."
        )
    made = datetime.now(UTC)
    calls = calls_about(store, rid, timeline)
    found = find_documents(store, rid, calls, stored)
    personal = Personal() if redact_personal else None
    if personal is not None:  # learn every value first, so each member masks all of them
        for document in found:
            personal.learn(document.text)
        for call in calls:
            personal.learn(call.get("request_body") or "")
            personal.learn(call.get("response_body") or "")
    red = Redaction(list(secrets), personal)

    files = [(f"documents/{d.file_name(n)}", d.text) for n, d in enumerate(found, start=1)]
    environment = environment_of(store.process_codes(rid))
    sandbox = store.holds_sandbox_data()
    # The HAR is masked entry by entry, by the recording's rule (har.py). The rest is made of
    # what the store holds, masked when it was written: kept as written here (a short key
    # must not turn the dates of a timeline into [REDACTED]-11-27), tokens and JWTs aside.
    readme = _readme(rid, made, calls, files, red, environment, sandbox_data=sandbox)
    checked = json.dumps(validations(found, files, schemas_dir), indent=2, ensure_ascii=False)
    members = {
        "README.txt": red.stored(readme),
        "calls.har": json.dumps(har_log(calls, rid, red), indent=2, ensure_ascii=False),
        "timeline.csv": red.stored(_timeline_csv(timeline)),
        "validation.json": red.stored(checked),
        **{name: red.text(text, document=True) for name, text in files},
    }
    stem = f"sandbox-{rid}" if sandbox else rid
    return _write_zip(Path(out_dir), stem, made, members)


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
    with Store(path, secrets=secrets, read_only=True) as store:
        return make_bundle(
            store,
            request_id,
            out_dir=out_dir,
            secrets=secrets,
            schemas_dir=schemas_dir,
            redact_personal=redact_personal,
        )


def _timeline_csv(timeline: pd.DataFrame) -> str:
    frame = timeline.copy()
    frame["at"] = [iso(t) for t in frame["at"]]
    return frame.to_csv(index=False, lineterminator="\n")


def _readme(
    rid: str,
    made: datetime,
    calls: list[dict[str, Any]],
    files: list[tuple[str, str]],
    red: Redaction,
    environment: str,
    *,
    sandbox_data: bool,
) -> str:
    listed = sum(1 for c in calls if c["_listing"])
    secrets = (
        "Secrets: access tokens, client secrets, passwords and subscription keys are replaced "
        f"by [REDACTED]: headers ({', '.join(sorted(SENSITIVE_HEADERS))}) and fields "
        f"({', '.join(sorted(SENSITIVE_FIELDS))}) by name; {red.secret_count} configured "
        "secret values, and anything shaped like a JWT or a Bearer-scheme token, in error "
        "answers and in our own texts. Documents (the partner's answers, and ours) are as "
        "they were sent, but for an echo of an access token. Token requests are left out."
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
    sandbox = f"{SANDBOX_TITLE}: " if sandbox_data else ""
    return f"""{sandbox}Support bundle for request {rid}
Made {iso(made)} by workbench {__version__}.
Environment: {environment} (the DocumentProcessCode of its documents, received and sent).

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
    try:
        return _write_zip_in(out_dir, rid, made, members)
    except OSError as exc:
        raise ConfigError(
            f"Cannot write the bundle in {out_dir} ({exc.strerror or exc}): pick a folder you "
            "can write in (--out, or out_dir=)."
        ) from None


def _write_zip_in(out_dir: Path, rid: str, made: datetime, members: dict[str, str]) -> Path:
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
    part.unlink(missing_ok=True)  # left by a run that died: this one starts it again
    create_private(part)  # 0600: the bundle is for the partner's support, not for every reader
    part.write_bytes(buffer.getvalue())
    os.replace(part, path)
    return path
