"""``workbench send response|transcript|ack``: one document to the partner, through the outbox.

Every refusal comes before the question: :func:`plan_send` reads or builds the document, checks
and validates it; :func:`_send` asks, then sends it.
"""

from __future__ import annotations

import inspect
import stat
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.output import (
    Config,
    Db,
    Profile,
    RequestId,
    Yes,
    announce_partner,
    clean_errors,
    say,
    warn,
)
from workbench.errors import (
    ConfigError,
    DocumentMismatch,
    DuplicateSend,
    InvalidParameter,
    InvalidValue,
    PescError,
)
from workbench.spec import HoldReason, ResponseStatus

if TYPE_CHECKING:
    from workbench.client import Workbench
    from workbench.pesc import Validation

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Send a response, a transcript or an acknowledgment to the partner, through the outbox.",
)
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the document and its validation; send nothing (exit 0 when it would be sent, "
        "else the exit code the send would end with).",
    ),
]
Show = Annotated[
    bool, typer.Option("--show", help="Print the document (it holds student data) before asking.")
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Send even though the outbox holds an earlier send of it (a re-issue, or a response "
        "to a cancellation, is a send of its own and needs none).",
    ),
]
AllowInvalid = Annotated[
    bool,
    typer.Option(
        "--allow-invalid", help="Send a document that fails validation against the schemas."
    ),
]
NoCheck = Annotated[
    bool,
    typer.Option(
        "--no-check",
        help="Do not check FILE's RequestTrackingID and student against what it answers (once "
        "you have checked by hand); its DocumentProcessCode is checked in any case.",
    ),
]
EXITS = (
    "Shows what will be sent and asks before sending, unless --yes. Exit 0 sent (or, with "
    "--dry-run, would be sent); 1 declined at the prompt, refused (already in the outbox, an "
    "invalid built document) or failed; 2 on a usage or configuration error (a read-only profile, "
    "an unusable FILE or option, a document whose DocumentProcessCode is not the request's or the "
    "profile's environment's)."
)


def response(
    request_id: RequestId,
    status: Annotated[ResponseStatus, typer.Option(help="The ResponseStatus.")],
    hold_reason: Annotated[
        HoldReason | None,
        typer.Option(help="With --status Hold (Other by default with --release)."),
    ] = None,
    release: Annotated[
        str | None,
        typer.Option(metavar="YYYY-MM-DD", help="With --status Hold: the planned release date."),
    ] = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    show: Show = False,
    force: Force = False,
    allow_invalid: AllowInvalid = False,
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
) -> None:
    """Answer a transcript request with a TranscriptResponse built from the request (the stored
    document, else fetched)."""
    _send(SendRequest("response", **locals()))


def transcript(
    request_id: RequestId,
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="The CollegeTranscript (or HighSchoolTranscript) XML to send."
        ),
    ],
    yes: Yes = False,
    dry_run: DryRun = False,
    show: Show = False,
    force: Force = False,
    allow_invalid: AllowInvalid = False,
    no_check: NoCheck = False,
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
) -> None:
    """Send the transcript in FILE for a transcript request.

    Its RequestTrackingID must be the request's, its student the request's (names, birth
    date, ids), and its DocumentProcessCode (TEST or PRODUCTION) the request's. A corrected
    transcript, sent again, is a re-issue: a new DocumentID and TransmissionType Reissue.
    """
    _send(SendRequest("transcript", **locals()))


def ack(
    request_id: RequestId,
    file: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE",
            help="The Acknowledgment XML to send (default: built from the transcript).",
        ),
    ] = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    show: Show = False,
    force: Force = False,
    allow_invalid: AllowInvalid = False,
    no_check: NoCheck = False,
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
) -> None:
    """Acknowledge a received transcript, with FILE or an Acknowledgment built from it.

    Built from the stored transcript's current version (else fetched), it counts its courses
    and awards.
    """
    _send(SendRequest("ack", **locals()))


for _command in (response, transcript, ack):
    _command.__doc__ = f"{inspect.cleandoc(_command.__doc__ or '')}\n\n{EXITS}"
    app.command()(_command)


def _send(request: SendRequest) -> None:
    """Plan, show, ask, send, and say what the partner answered."""
    from workbench.client import connect

    with clean_errors():
        announce_partner(request.profile, request.db, request.config)
        check_options(request)
        dry_run = request.dry_run  # it records its reads only in a store that exists
        with connect(
            request.profile, db=request.db, config_path=request.config, record=not dry_run
        ) as w:
            if w.profile.read_only and not dry_run:
                raise ConfigError(
                    f"Profile {w.profile.name!r} is read-only, so nothing was sent. Use a "
                    "profile without read_only (or WORKBENCH_READ_ONLY=0) to send; --dry-run "
                    "shows the document."
                )
            plan = plan_send(w, request, reading=dry_run)
            if dry_run or request.show:
                say(plan.document, wrap=False)
            warn(plan.summary)
            for issue in plan.validation.errors:
                warn(f"  {issue}")
            if dry_run:
                warn("Dry run: nothing was sent.")
            if plan.validation.status == "invalid" and not request.allow_invalid:
                errors = "; ".join(str(e) for e in plan.validation.errors[:3])
                refusal = (
                    f"The document fails validation ({plan.validation}: {errors}). Nothing was "
                    "sent. Fix it, or pass --allow-invalid to send it anyway."
                )
                if request.file is not None:
                    raise InvalidParameter(refusal, parameter="file")
                raise InvalidValue(refusal)
            if plan.earlier is not None and not request.force:
                raise plan.earlier
            if dry_run:
                return
            if not (request.yes or typer.confirm("Send it?", default=False, err=True)):
                warn(f"Nothing sent: {plan.operation} for {plan.request_id} was not confirmed.")
                raise typer.Exit(1)
            role = w.consumer if request.kind == "ack" else w.supplier
            df = getattr(role, plan.operation)(
                plan.request_id, plan.document, force=request.force, check=not request.no_check
            )
    say(f"Sent {plan.operation} for {plan.request_id} (outbox entry {df.attrs.get('outbox_id')}).")
    if request.kind == "transcript" and not df.empty and "course_total" in df.columns:
        row = df.iloc[0]
        say(
            f"Reply: the partner acknowledged {row['course_total']} course(s) and "
            f"{row.get('academic_award_total')} award(s)."
        )
    if df.attrs.get("reply_note"):
        warn(f"Note: {df.attrs['reply_note']}")


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
    operation = "send_acknowledgment" if request.kind == "ack" else f"send_{request.kind}"
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
    return PlannedSend(operation, request_id, parsed.text, validation, earlier, "\n".join(lines))


def check_options(request: SendRequest) -> None:
    """Refuse a hold's options on another status, or a release that is no date, before
    connecting (``InvalidParameter`` naming the option)."""
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

    try:
        info, limit = path.stat(), size_limit()
        if not stat.S_ISREG(info.st_mode):
            raise InvalidParameter(
                f"{path} is not a regular file; give the path of a PESC XML file.", parameter="file"
            )
        with path.open("rb") as f:  # bounded: a file may grow, or say 0 bytes, after stat
            data = f.read(limit + 1)
        if len(data) > limit:
            raise InvalidParameter(
                f"{path} is {max(info.st_size, len(data)):,} bytes, over the {limit:,}-byte limit "
                f"of a PESC document. Check the file; raise {MAX_BYTES_VARIABLE} if such "
                "documents are expected.",
                parameter="file",
            )
        return data
    except OSError as exc:
        raise InvalidParameter(f"Cannot read {path}: {exc.strerror}.", parameter="file") from None
