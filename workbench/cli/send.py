"""``workbench send response|transcript|ack``: one document to the partner, through the outbox."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.output import (
    Config,
    Db,
    Profile,
    Yes,
    announce_partner,
    clean_errors,
    say,
    warn,
)
from workbench.cli.send_plan import SendRequest, check_options, plan_send, send_planned
from workbench.errors import ConfigError, InvalidParameter, InvalidValue

app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Send a response, a transcript or an acknowledgment to the partner, through the outbox.",
)
Id = Annotated[
    str,
    typer.Argument(
        metavar="ID",
        help="The RequestID; a GUID pasted with dashes or in upper case is matched to the "
        "partner's spelling.",
    ),
]
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
            help="With --status Hold: Financial, TranscriptFee, RequestedAction or Other (the "
            "default with --release).",
        ),
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
    transcript, sent again, is a re-issue: a new DocumentID and TransmissionType Reissue.
    """
    _send(SendRequest("transcript", **locals()))


def ack(
    request_id: Id,
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
    """Plan, show, ask, send: every refusal before the question."""
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
            send_planned(w, plan)
