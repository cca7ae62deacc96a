"""What ``workbench send`` sends: :func:`plan_send` reads or builds, checks and validates it;
:func:`send_planned` sends it."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.cli.output import say, warn
from workbench.errors import (
    ConfigError,
    DocumentMismatch,
    DuplicateSend,
    InvalidParameter,
    InvalidValue,
    PescError,
)

if TYPE_CHECKING:
    from workbench.client import Workbench
    from workbench.pesc import Validation

OPERATIONS = {
    "response": "send_response",
    "transcript": "send_transcript",
    "ack": "send_acknowledgment",
}


@dataclass(frozen=True)
class SendRequest:
    """A ``send`` command's arguments: ``kind`` (response, transcript or ack), the id as typed."""

    kind: str
    request_id: str
    file: Path | None = None  # the document to send (required for a transcript)
    status: str | None = None  # a response's ResponseStatus
    hold_reason: str | None = None
    release: str | None = None  # a hold's PlannedReleaseDate, YYYY-MM-DD
    no_check: bool = False  # its tracking id and student are not checked (done by hand)
    yes: bool = False
    dry_run: bool = False
    show: bool = False
    force: bool = False
    allow_invalid: bool = False
    profile: str | None = None
    db: str | None = None
    config: str | None = None


@dataclass(frozen=True)
class PlannedSend:
    """A document ready to send: ``summary`` says what was checked, never the student's data."""

    request: SendRequest
    operation: str
    request_id: str  # as the partner spells it
    document: str
    validation: Validation
    earlier: DuplicateSend | None  # the outbox's earlier send of it, if any
    summary: str


def plan_send(w: Workbench, request: SendRequest, *, reading: bool = False) -> PlannedSend:
    """The document ``request`` would send, checked; ``reading``: no store created (dry run)."""
    from workbench import pesc
    from workbench.api.exchange import Consumer, Supplier
    from workbench.api.frames import PARSE_ERROR, PESCXML
    from workbench.api.sends import SENDS, document_fields
    from workbench.http.answers import guid_key, resolve_id

    store = (w.store if Path(w.db).exists() else None) if reading else w.writable_store()
    role = (Consumer if request.kind == "ack" else Supplier)(
        w.session, store=None if store is None else lambda: store
    )
    operation = OPERATIONS[request.kind]
    request_id = typed = request.request_id.strip()
    if guid_key(typed) is not None:  # as the store, else the partner's pending list, spells it
        found = store.spelling_of(typed, lists=(role.list_name,)) if store is not None else typed
        stored = (
            store is not None
            and not store.table(role.table, where=f"{role.id_column} = ?", params=[typed]).empty
        )
        if found != typed or stored:
            request_id = found
        else:
            listed = (
                w.supplier.pending_requests()
                if role.role == "supplier"
                else w.consumer.pending_transcripts()
            )["request_id"]
            request_id = resolve_id(typed, listed.dropna().astype(str))
    label = str(request.file.absolute()) if request.file is not None else "the document"
    answered = None
    if request.file is not None:
        document: str | bytes = _read_file(request.file)
        source = f"from {label}"
    else:  # a transcript always has its FILE
        row, kept = role.answered(request_id, operation=f"{role.role}.{operation}")
        answered = row.get(PESCXML)
        if row.get(PARSE_ERROR) or not isinstance(answered, str):
            raise InvalidValue(
                f"The {role.noun} {request_id!r} has no readable document "
                f"({row.get(PARSE_ERROR) or 'none'}); give the document to send as FILE."
            )
        code = w.profile.environment.upper() if w.profile.environment else None
        try:
            document = (
                pesc.build_response(
                    answered,
                    status=request.status or "TranscriptRequestReceived",
                    hold_reason=request.hold_reason,
                    planned_release_date=request.release,
                    process_code=code,
                )
                if request.kind == "response"
                else pesc.build_acknowledgment(answered, process_code=code)
            )
        except PescError as exc:
            raise InvalidValue(
                f"Cannot build the {operation[5:]} from the {role.noun} {request_id!r}: {exc}. "
                "Give the document as FILE instead."
            ) from None
        source = f"built from the {'stored ' if kept else ''}{role.noun}"
        source += "" if kept else " fetched from the partner"
    try:
        parsed = pesc.parse(document)
        document_fields(SENDS[operation], parsed.text)
    except PescError as exc:
        raise InvalidParameter(
            f"{label} is not a usable PESC document: {exc}", parameter="file"
        ) from None
    except InvalidValue as exc:  # of the wrong type
        raise InvalidParameter(f"{label}: {exc}", parameter="file") from None
    try:
        checked = role.check_send(
            operation, request_id, parsed.text, check=not request.no_check, answered=answered
        )
    except DocumentMismatch as exc:  # a built one's: the profile's environment is wrong
        if request.file is None:
            raise ConfigError(str(exc)) from None
        raise InvalidParameter(f"{label}: {exc}", parameter="file") from None
    earlier = (
        store.outbox.duplicate_of(
            operation, request_id, document_id=checked.document_id,
            renews=checked.renewal is not None, hint="pass --force",
        )
        if store
        else None
    )  # fmt: skip
    validation = pesc.validate(parsed)
    renamed = f" (given as {typed})" if typed != request_id else ""
    lines = [
        f"Operation:  {operation} ({parsed.message_type})",
        f"Id:         {request_id}{renamed}",
        *([f"Status:     {request.status}"] if request.kind == "response" else []),
        f"Document:   {len(parsed.text.encode()):,} bytes, {source}",
        f"Validation: {validation}",
        *([f"New send:   {checked.renewal}"] if checked.renewal is not None else []),
    ]
    if earlier is not None:
        lines.append(f"Outbox:     {earlier}")
    return PlannedSend(
        request, operation, request_id, parsed.text, validation, earlier, "\n".join(lines)
    )


def send_planned(w: Workbench, plan: PlannedSend) -> None:
    """Send ``plan``'s document through the outbox, and say what the partner answered."""
    role = w.consumer if plan.request.kind == "ack" else w.supplier
    df = getattr(role, plan.operation)(
        plan.request_id, plan.document, force=plan.request.force, check=not plan.request.no_check
    )
    say(f"Sent {plan.operation} for {plan.request_id} (outbox entry {df.attrs.get('outbox_id')}).")
    if plan.request.kind == "transcript" and not df.empty and "course_total" in df.columns:
        row = df.iloc[0]
        say(
            f"Reply: the partner acknowledged {row['course_total']} course(s) and "
            f"{row.get('academic_award_total')} award(s)."
        )
    if df.attrs.get("reply_note"):
        warn(f"Note: {df.attrs['reply_note']}")


def check_options(request: SendRequest) -> None:
    """Refuse unusable options before connecting (``InvalidParameter`` naming the option)."""
    from workbench.pesc.builders import HOLD_REASONS, RESPONSE_STATUSES

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
    """The bytes of the regular file ``path`` (a FIFO would block for ever), size-limited."""
    from workbench.pesc.document import MAX_BYTES_VARIABLE, size_limit

    limit = size_limit()
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise InvalidParameter(
                f"{path} is not a regular file; give the path of a PESC XML file.", parameter="file"
            )
        with path.open("rb") as f:
            data = f.read(limit + 1)  # a larger file is never read whole
    except OSError as exc:
        raise InvalidParameter(f"Cannot read {path}: {exc.strerror}.", parameter="file") from None
    if len(data) > limit:
        raise InvalidParameter(
            f"{path} is {path.stat().st_size:,} bytes, over the {limit:,}-byte limit of a PESC "
            f"document. Check the file; raise {MAX_BYTES_VARIABLE} if such documents are expected.",
            parameter="file",
        )
    return data
