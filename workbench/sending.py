"""Sending from the command line: plan a send (its document, validated), confirm, send it.

``workbench send`` calls :func:`run_send`; in Python, ``plan_send`` then ``send_planned``:

>>> with wb.connect() as w:  # doctest: +SKIP
...     plan = plan_send(w, SendRequest("response", "7c1d0b52...", status="Hold",
...                                     hold_reason="Financial"))
...     print(plan.summary())
...     refuse(plan)  # invalid, or already in the outbox: raises
...     outcome = send_planned(w, plan)

Every send goes through the outbox (``Supplier.send_response``, ``send_transcript``,
``Consumer.send_acknowledgment``): recorded before it leaves, never sent twice. Checked before
anything is asked (``run_send``): the profile may send, the document passes the send's own
checks (:func:`workbench.api.send_checks.check_send`: its type, its DocumentProcessCode, the
request it answers, a transcript's student), it validates against ``WORKBENCH_PESC_SCHEMAS``
when set, and the outbox holds no earlier send of it (a re-issue, or a response to a
cancellation, is a send of its own, and the summary says so). Ids pasted with dashes or in
upper case are matched to the partner's spelling when they are hex GUIDs (:func:`resolve_id`).
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import (
    ConfigError,
    DocumentMismatch,
    DuplicateSend,
    InvalidParameter,
    InvalidValue,
    PescError,
)
from workbench.http.answers import guid_key, resolve_id

if TYPE_CHECKING:
    from workbench.client import Workbench
    from workbench.pesc import Validation
    from workbench.store import Store

# kind (the command's word) -> the outbox's operation (workbench.api.send_checks.SENDS)
KINDS = {"response": "send_response", "transcript": "send_transcript", "ack": "send_acknowledgment"}
# How the send summary introduces the earlier send a renewal follows.
_RENEWALS = {
    "re-issue": "re-issue of",
    "answer to a cancellation": "answer to the request's cancellation, after",
}
# The store's list and entity table of what each role's sends answer.
_STORED = {
    "supplier": ("supplier_requests", "transcript_requests", "request_id"),
    "consumer": ("consumer_transcripts", "transcripts_received", "transcript_id"),
}


@dataclass(frozen=True)
class SendRequest:
    """What to send: ``kind`` (response, transcript or ack), the id, and its options."""

    kind: str
    request_id: str
    file: Path | None = None  # the document to send (required for a transcript)
    status: str | None = None  # a response's ResponseStatus
    hold_reason: str | None = None
    release: str | None = None  # a hold's PlannedReleaseDate, YYYY-MM-DD
    note: str | None = None
    check: bool = True  # False: a FILE's tracking id and student are not checked (by hand)


@dataclass(frozen=True)
class PlannedSend:
    """A document ready to send, and what was checked about it."""

    kind: str
    operation: str  # the outbox's: send_response, send_transcript, send_acknowledgment
    request_id: str  # as the partner spells it
    typed_id: str  # as given
    document: str
    message_type: str
    document_id: str | None
    tracking_id: str | None
    response_status: str | None
    source: str  # where the document comes from
    validation: Validation
    earlier: DuplicateSend | None  # the outbox's earlier send of it, if any
    check: bool = True  # whether its tracking id and student were checked (see SendRequest)
    renewal: str | None = None  # a send of its own beside an earlier one: "re-issue", ...
    renews: dict[str, Any] | None = None  # the outbox entry it renews (Outbox.last_sent)

    @property
    def size(self) -> int:
        return len(self.document.encode("utf-8"))

    def summary(self) -> str:
        """A few lines: operation, id, status, size, validation. Never the student's data."""
        renamed = f" (given as {self.typed_id})" if self.typed_id != self.request_id else ""
        lines = [
            f"Operation:  {self.operation} ({self.message_type})",
            f"Id:         {self.request_id}{renamed}",
        ]
        if self.response_status:
            lines.append(f"Status:     {self.response_status}")
        lines += [
            f"Document:   {self.size:,} bytes, {self.source}",
            f"Keys:       DocumentID {self.document_id}, RequestTrackingID {self.tracking_id}",
            f"Validation: {self.validation}",
        ]
        if self.renewal is not None:
            lines.append(f"New send:   {self.renewal_text()}")
        if self.earlier is not None:
            lines.append(f"Outbox:     {self.earlier}")
        return "\n".join(lines)

    def renewal_text(self) -> str:
        """What makes this a send of its own beside an earlier one, e.g. "re-issue of the
        transcript of outbox entry 3 (sent 2026-03-02T09:00:00+00:00, DocumentID ...)"."""
        what = _RENEWALS.get(self.renewal or "", f"{self.renewal} of")
        document = self.operation.split("_", 1)[1]
        before = self.renews
        if before is None:
            return f"{what} no {document} in the outbox"
        return (
            f"{what} the {document} of outbox entry {before['id']} ({before['state']} "
            f"{before['updated_at']}, DocumentID {before['document_id'] or 'not recorded'})"
        )


@dataclass(frozen=True)
class SendOutcome:
    """What :func:`run_send` did: ``sent``, or not (a dry run, or declined at the prompt)."""

    plan: PlannedSend
    sent: bool = False
    declined: bool = False
    outbox_id: int | None = None
    reply: str | None = None  # what the partner's answer says, briefly
    note: str | None = None  # an odd answer the send was still recorded for


def run_send(
    request: SendRequest,
    *,
    profile: str | None = None,
    db: str | None = None,
    config_path: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    allow_invalid: bool = False,
    confirm: Callable[[PlannedSend], bool] = lambda plan: True,
) -> SendOutcome:
    """Plan ``request`` on a profile, then (unless ``dry_run``) ask ``confirm`` and send it.

    Refused before anything is asked: a read-only profile (``ConfigError``), a document that
    does not parse, is of the wrong type or (unless ``allow_invalid``) fails validation, and
    an earlier send in the outbox (``DuplicateSend``, unless ``force``).
    """
    from workbench.client import connect

    _check_options(request)
    given = _read_file(request.file) if request.file is not None else None
    # A dry run records its reads only in a store that exists: it creates no database.
    with connect(profile, db=db, config_path=config_path, record=not dry_run) as w:
        if not dry_run:
            _require_writable(w)
        plan = plan_send(w, request, document=given, reading=dry_run)
        if dry_run:
            return SendOutcome(plan)
        refuse(plan, force=force, allow_invalid=allow_invalid)
        if not confirm(plan):
            return SendOutcome(plan, declined=True)
        return send_planned(w, plan, force=force)


def plan_send(
    w: Workbench,
    request: SendRequest,
    *,
    document: str | bytes | None = None,
    reading: bool = False,
) -> PlannedSend:
    """The document ``request`` would send (``document``, else built from what it answers),
    parsed, validated and checked against the outbox; nothing is sent. ``reading``: use the
    store only if it exists (a dry run creates no database)."""
    from workbench import pesc
    from workbench.api.sends import SENDS, check_send, document_fields

    kind = SENDS[KINDS[request.kind]]
    operation, role, noun = kind.name, kind.role, kind.noun
    store = _store(w, reading=reading)
    request_id = _partner_id(w, store, role, request.request_id.strip())
    if document is None and request.file is not None:
        document = _read_file(request.file)
    label = str(request.file.absolute()) if request.file is not None else "the document"
    code = w.profile.environment.upper() if w.profile.environment else None
    answered = None
    if document is not None:
        source = f"from {label}"
    elif request.kind == "transcript":
        raise InvalidParameter("A transcript is sent from a FILE.", parameter="file")
    else:
        answered, source = _answered(w, store, role, noun, request_id, required=True)
        assert answered is not None
        try:
            if request.kind == "response":
                document = pesc.build_response(
                    answered,
                    status=request.status or "TranscriptRequestReceived",
                    hold_reason=request.hold_reason,
                    planned_release_date=request.release,
                    note=request.note,
                    process_code=code,
                )
            else:
                document = pesc.build_acknowledgment(answered, note=request.note, process_code=code)
        except PescError as exc:
            raise InvalidValue(
                f"Cannot build the {operation.split('_', 1)[1]} from the {noun} {request_id!r}: "
                f"{exc}. Give the document as FILE instead."
            ) from None
        source = f"built from {source}"
    given = source.startswith("from ")
    try:
        doc = pesc.parse(document)
    except PescError as exc:
        raise InvalidParameter(
            f"{label} is not a usable PESC document: {exc}", parameter="file"
        ) from None
    try:
        document_fields(kind, doc.text)
    except InvalidValue as exc:  # of the wrong type
        raise InvalidParameter(f"{label}: {exc}", parameter="file") from None
    if given:
        answered, _ = _answered(w, store, role, noun, request_id, required=False)
    try:
        checked = check_send(
            kind, request_id, doc.text, answered=answered, environment=w.profile.environment,
            check=request.check,
        )  # fmt: skip
    except DocumentMismatch as exc:
        if given:  # the FILE is wrong (a built one: the profile's environment is)
            raise InvalidParameter(f"{label}: {exc}", parameter="file") from None
        raise
    flat = checked.flat
    renews = checked.renewal is not None
    return PlannedSend(
        kind=request.kind,
        operation=operation,
        request_id=request_id,
        typed_id=request.request_id,
        document=doc.text,  # unescaped, decoded: what the send would make of it anyway
        message_type=doc.message_type,
        document_id=checked.document_id,
        tracking_id=flat.get("request_tracking_id"),
        response_status=request.status if request.kind == "response" else None,
        source=source,
        validation=pesc.validate(doc),
        earlier=_earlier(store, operation, request_id, checked.document_id, renews=renews),
        check=request.check,
        renewal=checked.renewal,
        renews=store.outbox.last_sent(operation, request_id) if store and renews else None,
    )


def refuse(plan: PlannedSend, *, force: bool = False, allow_invalid: bool = False) -> None:
    """Raise why ``plan`` must not be sent: its document fails validation (a FILE:
    ``InvalidParameter``), or the outbox holds it already (``DuplicateSend``)."""
    if plan.validation.status == "invalid" and not allow_invalid:
        errors = "; ".join(str(e) for e in plan.validation.errors[:3])
        message = (
            f"The document fails validation ({plan.validation}: {errors}). Nothing was "
            "sent. Fix it, or pass --allow-invalid to send it anyway."
        )
        if plan.source.startswith("from "):
            raise InvalidParameter(message, parameter="file")
        raise InvalidValue(message)
    if plan.earlier is not None and not force:
        raise plan.earlier


def send_planned(w: Workbench, plan: PlannedSend, *, force: bool = False) -> SendOutcome:
    """Send ``plan``'s document through the outbox; what the partner answered."""
    options = {"force": force, "check": plan.check}
    if plan.kind == "response":
        df = w.supplier.send_response(plan.request_id, plan.document, **options)
    elif plan.kind == "transcript":
        df = w.supplier.send_transcript(plan.request_id, plan.document, **options)
    else:
        df = w.consumer.send_acknowledgment(plan.request_id, plan.document, **options)
    reply = None
    if plan.kind == "transcript" and not df.empty and "course_total" in df.columns:
        row = df.iloc[0]
        reply = (
            f"the partner acknowledged {row['course_total']} course(s) and "
            f"{row.get('academic_award_total')} award(s)"
        )
    return SendOutcome(
        plan,
        sent=True,
        outbox_id=df.attrs.get("outbox_id"),
        reply=reply,
        note=df.attrs.get("reply_note"),
    )


def _check_options(request: SendRequest) -> None:
    """Refuse unusable options before connecting (``InvalidParameter`` naming the option)."""
    from workbench.pesc.builders import HOLD_REASONS, RESPONSE_STATUSES

    if request.kind not in KINDS:
        raise InvalidParameter(
            f"Unknown kind {request.kind!r}; one of {', '.join(KINDS)}.", parameter="kind"
        )
    if request.kind != "response":
        return
    if request.status not in RESPONSE_STATUSES:
        raise InvalidParameter(
            f"{request.status!r} is no ResponseStatus; one of {', '.join(RESPONSE_STATUSES)}.",
            parameter="status",
        )
    if request.hold_reason is not None and request.hold_reason not in HOLD_REASONS:
        raise InvalidParameter(
            f"{request.hold_reason!r} is no HoldReason; one of {', '.join(HOLD_REASONS)}.",
            parameter="hold_reason",
        )
    if request.release is not None:
        try:
            date.fromisoformat(request.release)
        except ValueError:
            raise InvalidParameter(
                f"{request.release!r} is not a date; write it YYYY-MM-DD.", parameter="release"
            ) from None
    if request.status != "Hold" and (request.hold_reason or request.release):
        raise InvalidParameter(
            "--hold-reason and --release go with --status Hold.", parameter="status"
        )


def _read_file(path: Path) -> bytes:
    """The bytes of the regular file ``path``, refused (before reading) when it is anything
    else (a FIFO would block for ever) or larger than a PESC document may be."""
    from workbench.pesc.document import max_bytes

    limit = max_bytes()
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise InvalidParameter(
                f"{path} is not a regular file; give the path of a PESC XML file.",
                parameter="file",
            )
        if info.st_size > limit:
            raise InvalidParameter(_too_large(path, info.st_size, limit), parameter="file")
        with path.open("rb") as f:
            data = f.read(limit + 1)  # it may have grown since
    except OSError as exc:
        raise InvalidParameter(f"Cannot read {path}: {exc.strerror}.", parameter="file") from None
    if len(data) > limit:
        raise InvalidParameter(_too_large(path, len(data), limit), parameter="file")
    return data


def _too_large(path: Path, size: int, limit: int) -> str:
    from workbench.pesc.document import MAX_BYTES_VARIABLE

    return (
        f"{path} is {size:,} bytes, over the {limit:,}-byte limit of a PESC document. Check "
        f"the file; raise {MAX_BYTES_VARIABLE} if such documents are expected."
    )


def _require_writable(w: Workbench) -> None:
    profile = w.profile
    if profile.read_only:
        raise ConfigError(
            f"Profile {profile.name!r} is read-only, so nothing was sent. Use a profile without "
            "read_only (or WORKBENCH_READ_ONLY=0) to send; --dry-run shows the document."
        )


def _store(w: Workbench, *, reading: bool) -> Store | None:
    """The store to read from: for a send, the writable one (refusing another partner's
    before anything is asked); for a dry run, the existing one, if any."""
    if not reading:
        return w.writable_store()
    return w.store if Path(w.db).exists() else None


def _partner_id(w: Workbench, store: Store | None, role: str, typed: str) -> str:
    """``typed`` as the store, else the partner's pending list, spells it."""
    if guid_key(typed) is None:
        return typed
    list_name, table, column = _STORED[role]
    if store is not None:
        found = store.spelling_of(typed, lists=(list_name,))
        if found != typed or not store.table(table, where=f"{column} = ?", params=[typed]).empty:
            return found
    if role == "supplier":
        pending = w.supplier.pending_requests()
    else:
        pending = w.consumer.pending_transcripts()
    return resolve_id(typed, pending["request_id"].dropna().astype(str))


def _answered(
    w: Workbench, store: Store | None, role: str, noun: str, request_id: str, *, required: bool
) -> tuple[str | None, str]:
    """The XML of what a document answers (the stored current version, else fetched), and
    where it came from. Unreadable: ``InvalidValue`` when ``required`` (a document is built
    from it), else None (the checks say what that means for a FILE)."""
    from workbench.api.frames import PARSE_ERROR, PESCXML

    list_name = _STORED[role][0]
    xml = store.document(request_id, list_name=list_name) if store is not None else None
    if xml:
        return xml, f"the stored {noun}"
    fetch = w.supplier.request if role == "supplier" else w.consumer.transcript
    row = fetch(request_id).iloc[0]
    error = row.get(PARSE_ERROR)
    if (isinstance(error, str) and error) or not isinstance(row.get(PESCXML), str):
        if not required:
            return None, f"the {noun} fetched from the partner"
        raise InvalidValue(
            f"The {noun} {request_id!r} has no readable document ({error or 'none'}); give "
            "the document to send as FILE."
        )
    return str(row[PESCXML]), f"the {noun} fetched from the partner"


def _earlier(
    store: Store | None, operation: str, request_id: str, document_id: str | None, *, renews: bool
) -> DuplicateSend | None:
    """The outbox's earlier send of this document (for an acknowledgment or a send that
    renews an earlier one, of this DocumentID), as the refusal the send itself would raise;
    None when there is none."""
    if store is None:
        return None
    return store.outbox.duplicate_of(
        operation, request_id, document_id=document_id, renews=renews, hint="pass --force"
    )
