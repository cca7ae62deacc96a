"""``workbench send response|transcript|ack``: one document to the partner, through the outbox.

Each command calls :func:`workbench.sending.run_send`, which plans the send (the document,
validated, checked against the outbox), asks through ``confirm`` and sends.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from workbench.cli.help import Command, Group
from workbench.cli.options import Config, Db, Profile
from workbench.cli.output import announce_partner, clean_errors, say, warn

if TYPE_CHECKING:
    from workbench.sending import PlannedSend, SendOutcome, SendRequest

app = typer.Typer(
    cls=Group,
    help="Send a response, a transcript or an acknowledgment to the partner, through the outbox.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

Yes = Annotated[bool, typer.Option("--yes", "-y", help="Send without asking for confirmation.")]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run", help="Print the document and its validation; send nothing (exit 0 when it "
        "would be sent, else the exit code the send would end with)."
    ),
]  # fmt: skip
Show = Annotated[
    bool, typer.Option("--show", help="Print the document (it holds student data) before asking.")
]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Send even though the outbox holds an earlier send of it (a re-issue, or a "
        "response to a cancellation, is a send of its own and needs none).",
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
Note = Annotated[
    str | None, typer.Option(metavar="TEXT", help="A NoteMessage to add (80-character pieces).")
]
Id = Annotated[
    str,
    typer.Argument(
        metavar="ID",
        help="The RequestID; a GUID pasted with dashes or in upper case is matched to the "
        "partner's spelling.",
    ),
]

EXITS = (
    "Exit 0 sent (or, with --dry-run, would be sent); 1 declined at the prompt, refused (already "
    "in the outbox, an invalid built document) or failed; 2 on a usage or configuration error (a "
    "read-only profile, an unusable FILE or option, a document whose DocumentProcessCode is not "
    "the request's or the profile's environment's)."
)


def response(
    request_id: Id,
    status: Annotated[
        str,
        typer.Option(
            metavar="STATUS",
            help="The ResponseStatus: TranscriptRequestReceived, Hold, NoRecord, MultipleMatch, "
            "Canceled, Deceased, ... (an unknown one lists them all).",
        ),
    ],
    hold_reason: Annotated[
        str | None,
        typer.Option(
            metavar="REASON",
            help="With --status Hold: Financial, TranscriptFee, "
            "RequestedAction or Other (the default with --release).",
        ),
    ] = None,
    release: Annotated[
        str | None,
        typer.Option(metavar="YYYY-MM-DD", help="With --status Hold: the planned release date."),
    ] = None,
    note: Note = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    show: Show = False,
    force: Force = False,
    allow_invalid: AllowInvalid = False,
    profile: Profile = None,
    db: Db = None,
    config: Config = None,
) -> None:
    """Answer a transcript request with a TranscriptResponse built from the request.

    The request's document is the stored one, else fetched. Shows what will be sent and asks
    before sending, unless --yes.
    """
    from workbench.sending import SendRequest

    request = SendRequest(
        "response", request_id, status=status, hold_reason=hold_reason, release=release, note=note
    )
    _send(request, yes, dry_run, show, force, allow_invalid, profile, db, config)


def transcript(
    request_id: Id,
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
    transcript, sent again, is a re-issue: a new DocumentID and TransmissionType Reissue. Shows
    what will be sent and asks before sending, unless --yes.
    """
    from workbench.sending import SendRequest

    _send(
        SendRequest("transcript", request_id, file=file, check=not no_check),
        yes, dry_run, show, force, allow_invalid, profile, db, config,
    )  # fmt: skip


def ack(
    request_id: Id,
    file: Annotated[
        Path | None,
        typer.Argument(
            metavar="FILE",
            help="The Acknowledgment XML to send (default: built from the transcript).",
        ),
    ] = None,
    note: Note = None,
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
    and awards. Shows what will be sent and asks before sending, unless --yes.
    """
    from workbench.sending import SendRequest

    if file is not None and note is not None:
        raise typer.BadParameter("--note goes with a built acknowledgment, not FILE.")
    _send(
        SendRequest("ack", request_id, file=file, note=note, check=not no_check),
        yes, dry_run, show, force, allow_invalid, profile, db, config,
    )  # fmt: skip


for _command in (response, transcript, ack):
    _command.__doc__ = f"{inspect.cleandoc(_command.__doc__ or '')}\n\n{EXITS}"
    app.command(cls=Command)(_command)


def _send(
    request: SendRequest,
    yes: bool,
    dry_run: bool,
    show: bool,
    force: bool,
    allow_invalid: bool,
    profile: str | None,
    db: str | None,
    config: str | None,
) -> None:
    """Run the send, printing the plan; the prompt's answer no exits 1."""
    from workbench.errors import DocumentMismatch, DuplicateSend, InvalidParameter
    from workbench.sending import refuse, run_send

    def confirm(plan: PlannedSend) -> bool:
        warn(plan.summary())
        if show:
            say(plan.document, wrap=False)
        return yes or typer.confirm("Send it?", default=False, err=True)

    with clean_errors():
        announce_partner(profile, db, config)
        try:
            outcome = run_send(
                request, profile=profile, db=db, config_path=config, dry_run=dry_run,
                force=force, allow_invalid=allow_invalid, confirm=confirm,
            )  # fmt: skip
            if dry_run:
                _print_dry_run(outcome)
                refuse(outcome.plan, force=force, allow_invalid=allow_invalid)
        except InvalidParameter as exc:
            if exc.parameter != "file":
                raise
            # printed by us, not click, so that a long refusal wraps at COLUMNS
            say(f"Error: Invalid value for FILE: {exc}", err=True)
            raise typer.Exit(2) from None
        except DuplicateSend as exc:
            hint = "" if "--force" in str(exc) else " On the command line: --force."
            say(f"Error (DuplicateSend): {exc}{hint}", err=True)
            raise typer.Exit(1) from None
        except DocumentMismatch as exc:  # a built document for another environment
            say(f"Error (DocumentMismatch): {exc}", err=True)
            raise typer.Exit(2) from None
    _report(outcome)


def _print_dry_run(outcome: SendOutcome) -> None:
    plan = outcome.plan
    say(plan.document, wrap=False)
    warn(plan.summary())
    for issue in plan.validation.errors:
        warn(f"  {issue}")
    warn("Dry run: nothing was sent.")


def _report(outcome: SendOutcome) -> None:
    plan = outcome.plan
    if outcome.declined:
        warn(f"Nothing sent: {plan.operation} for {plan.request_id} was not confirmed.")
        raise typer.Exit(1)
    if not outcome.sent:
        return
    say(f"Sent {plan.operation} for {plan.request_id} (outbox entry {outcome.outbox_id}).")
    if outcome.reply:
        say(f"Reply: {outcome.reply}.")
    if outcome.note:
        warn(f"Note: {outcome.note}")
