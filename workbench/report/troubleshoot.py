"""One request's documents for ``notebooks/troubleshoot.ipynb`` and the explorer: its versions
and their diffs, every document with its validation."""

from __future__ import annotations

import difflib
from itertools import pairwise

from IPython.display import HTML

from workbench.bundle import Document, pretty
from workbench.errors import StoreError
from workbench.report.markup import heading, page, paragraph, table, text
from workbench.store import Store

MAX_ERRORS_SHOWN = 20
VERSION_COLUMNS = {
    "list_name": "list", "version": "version", "transmission_type": "TransmissionType",
    "document_id": "DocumentID", "request_tracking_id": "RequestTrackingID",
    "request_date": "RequestDate", "created_at": "created", "first_seen_at": "first seen",
    "call_id": "call", "parse_error": "parse error",
}  # fmt: skip
SENT_COLUMNS = {
    "document": "document", "version": "version", "transmission_type": "TransmissionType",
    "response_status": "ResponseStatus", "document_id": "DocumentID", "sent_at": "sent",
    "inferred": "inferred", "outbox_id": "outbox entry",
}  # fmt: skip


def version_diff(
    store: Store, request_id: str, a: int, b: int, *, list_name: str | None = None
) -> str:
    """A unified diff of versions ``a`` and ``b``; ``StoreError`` for one not held."""
    versions = store.versions(request_id, list_name=list_name)
    texts = {}
    for number in (a, b):
        found = versions[versions["version"] == number]
        if found.empty:
            held = ", ".join(str(v) for v in versions["version"]) or "none"
            raise StoreError(
                f"{request_id!r} has no version {number} in the store (versions held: {held}); "
                "see store.versions(id), or pull to fetch newer ones."
            )
        texts[number] = pretty(str(found["pescxml"].iloc[0] or ""))[0]
    old, new = (texts[n].splitlines(keepends=True) for n in (a, b))
    name = f"{request_id} version"
    return "".join(difflib.unified_diff(old, new, f"{name} {a}", f"{name} {b}"))


def versions_section(
    store: Store, request_id: str, *, compare: tuple[int, int] | None = None,
    max_chars: int | None = None,
) -> HTML:  # fmt: skip
    """The versions received and sent, and diffs (``compare``: of those two)."""
    versions = store.versions(request_id)
    parts = [table(versions, VERSION_COLUMNS, empty="No document of this id is stored.")]
    sent = store.sent_versions(request_id)
    if not sent.empty:
        parts += [heading("Sent by us", 4), table(sent, SENT_COLUMNS)]
    numbers = [int(v) for v in versions["version"]]
    pairs = [compare] if compare else list(pairwise(numbers))
    if not compare and len(numbers) <= 1:
        parts.append(paragraph("One version only: nothing to compare.", "wb-empty"))
    for a, b in pairs:
        diff = version_diff(store, request_id, a, b)
        if max_chars is not None and len(diff) > max_chars:
            diff = diff[:max_chars] + "\n…"
        parts += [
            paragraph(f"Version {a} → version {b}"),
            f"<pre>{text(diff or 'no difference')}</pre>",
        ]
    return page(*parts)


def validation_html(document: Document) -> str:
    """A document's validation (``data-validation``), where seen, its first errors."""
    v = document.validation
    places = (f"{s.get('in')}" + (f" at {s['at']}" if s.get("at") else "")
              for s in document.seen_in)  # fmt: skip
    seen = "; ".join(dict.fromkeys(places))
    errors = "".join(f"<li>{text(e)}</li>" for e in v.errors[:MAX_ERRORS_SHOWN])
    more = len(v.errors) - MAX_ERRORS_SHOWN
    errors += f"<li>… and {more} more</li>" if more > 0 else ""
    return (
        f'<p class="wb-meta" data-validation="{text(v.status)}">Validation: '
        f"{text(v)}. Seen in: {text(seen)}.</p>" + (f"<ul>{errors}</ul>" if errors else "")
    )


def document_html(document: Document, *, max_chars: int | None = None) -> str:
    """One document: title, validation, escaped text (cut at ``max_chars``)."""
    body, cut = document.text, ""
    if max_chars is not None and len(body) > max_chars:
        body = body[:max_chars]
        cut = paragraph(f"… cut at {max_chars:,} of {len(document.text):,} characters.", "wb-more")
    return heading(document.title, 4) + validation_html(document) + f"<pre>{text(body)}</pre>" + cut


def documents_section(documents: list[Document], *, max_chars: int | None = None) -> HTML:
    """Each document pretty-printed with its validation and where it was seen."""
    if not documents:
        return page(paragraph("No PESC document about this id is stored.", "wb-empty"))
    return page(*(document_html(d, max_chars=max_chars) for d in documents))
