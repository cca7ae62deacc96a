"""What a send must pass before anything leaves: one rule each, for the API and the CLI alike.

:func:`check_send` takes the document to send and the XML of what it answers (the request, or
the transcript, for an acknowledgment), and refuses:

- a document that is not XML, or not of the operation's message type (``InvalidValue``);
- always, ``check=False`` included: a DocumentProcessCode other than what it answers says, or
  (when the profile declares its ``environment``) other than the profile's; TEST and
  PRODUCTION never cross (``DocumentMismatch``, naming both codes);
- with ``check``: a RequestTrackingID of another request, and a transcript of another student
  (``DocumentMismatch``, naming fields, never values); a document that cannot be checked,
  what it answers being unreadable (``InvalidValue``).

It also says whether the send is a new version of an earlier one (``CheckedSend.renewal``): a
re-issued transcript (TransmissionType Reissue), or a response to a request's cancellation.
The outbox lets such a send through beside the earlier one, unless it carries the same
DocumentID.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench import pesc
from workbench.errors import DocumentMismatch, InvalidValue, PescError
from workbench.pesc import student
from workbench.pesc.builders import ID_LENGTH
from workbench.pesc.fields import transmission_kind


@dataclass(frozen=True)
class SendKind:
    """One of the three sends: the outbox's name for it, its role, what its id names, and the
    message types it sends."""

    name: str  # send_response, send_transcript, send_acknowledgment
    role: str
    noun: str  # what its id names, in messages
    expects: tuple[str, ...]


SENDS = {
    kind.name: kind
    for kind in (
        SendKind("send_response", "supplier", "transcript request", ("TranscriptResponse",)),
        SendKind(
            "send_transcript",
            "supplier",
            "transcript request",
            ("CollegeTranscript", "HighSchoolTranscript"),
        ),
        SendKind(
            "send_acknowledgment",
            "consumer",
            "transcript",
            ("Acknowledgment", "TranscriptAcknowledgment"),
        ),
    )
}
REISSUE = "Reissue"  # the TransmissionType of a transcript sent again, corrected
UNCHECKED = (
    "Pass check=False (on the command line, --no-check) once you have checked by hand that "
    "the document answers it."
)


@dataclass(frozen=True)
class CheckedSend:
    """A document that passed :func:`check_send`: its text, its flattened fields, and what
    makes it a new send beside an earlier one (``renewal``), if anything."""

    kind: SendKind
    request_id: str
    xml: str
    flat: dict[str, Any]
    renewal: str | None = None  # "re-issue", "answer to a cancellation"

    @property
    def document_id(self) -> str | None:
        value = self.flat.get("document_id")
        return str(value) if value else None


def document_fields(kind: SendKind, xml: str) -> tuple[pesc.PescDocument, dict[str, Any]]:
    """The parsed document and its flattened fields; ``InvalidValue`` for an empty document
    or one of the wrong type, ``PescError`` for one that is not usable XML."""
    if not xml.strip():
        raise InvalidValue(f"{kind.name}: pescxml is empty.")
    document = pesc.parse(xml)
    if document.message_type not in kind.expects:
        raise InvalidValue(
            f"{kind.name}: expected a {' or '.join(kind.expects)} document, got "
            f"{document.message_type}."
        )
    return document, pesc.flatten(document)


def check_send(
    kind: SendKind,
    request_id: Any,
    xml: str,
    *,
    answered: str | None,
    environment: str | None,
    check: bool = True,
) -> CheckedSend:
    """Check ``xml``, to be sent to ``request_id``, against ``answered`` (the XML of what it
    answers; None when it could not be read) and ``environment`` (``test``, ``production``
    or None); see the module docstring."""
    _, flat = document_fields(kind, xml)
    theirs = _answered_fields(answered)
    _check_process_code(kind, request_id, flat, theirs, environment)
    if check:
        _check_tracking(kind, request_id, flat, theirs)
        if kind.name == "send_transcript":
            _check_student(kind, request_id, flat, theirs)
    return CheckedSend(kind, str(request_id), xml, flat, _renewal(kind, flat, answered))


def process_code(flat: dict[str, Any]) -> str | None:
    """A document's DocumentProcessCode, upper-cased (None when it states none)."""
    code = str(flat.get("process_code") or "").strip().upper()
    return code or None


def _answered_fields(answered: str | None) -> dict[str, Any] | None:
    """The flattened fields of what a send answers; None when unknown or unreadable."""
    if not answered:
        return None
    try:
        return pesc.flatten(answered)
    except PescError:
        return None


def _check_process_code(
    kind: SendKind,
    request_id: Any,
    flat: dict[str, Any],
    theirs: dict[str, Any] | None,
    environment: str | None,
) -> None:
    """TEST and PRODUCTION never cross: the document's code is the one of what it answers,
    and the profile's environment's when it declares one."""
    ours = process_code(flat)
    answered = process_code(theirs) if theirs else None
    what = f"the {kind.noun} {str(request_id)!r}"
    # A document stating no code answers a PRODUCTION one (PESC's default); a TEST one wants it
    # said, as OCAS' UAT does.
    if answered and ours != answered and (ours or answered == "TEST"):
        stated = f"is {ours}" if ours else "is not stated"
        raise DocumentMismatch(
            f"{kind.name}: the document's DocumentProcessCode {stated}, but {what} says "
            f"{answered}: only a {answered} document answers it. Nothing was sent. Give it "
            f"DocumentProcessCode {answered}"
            + (f", or send it to the {ours} partner." if ours else ".")
        )
    if environment is None:
        return
    wanted = environment.upper()
    declared = (
        f"the profile's environment is {environment} (environment in the profile, "
        "WORKBENCH_ENVIRONMENT)"
    )
    if answered and answered != wanted:
        raise DocumentMismatch(
            f"{kind.name}: {what} says DocumentProcessCode {answered}, but {declared}: is this "
            "profile pointed at the right partner? Nothing was sent."
        )
    if ours != wanted:
        stated = f"is {ours}" if ours else "states none"
        raise DocumentMismatch(
            f"{kind.name}: the document's DocumentProcessCode {stated}, but {declared}, so "
            f"every document sent says {wanted}. Nothing was sent."
        )


def _check_tracking(
    kind: SendKind, request_id: Any, flat: dict[str, Any], theirs: dict[str, Any] | None
) -> None:
    """Refuse a document for another request: its RequestTrackingID (not the API id) must be
    the one of what it answers (a partner may key its API by a GUID). When that one is unknown
    (unreadable), the API id stands for it if it could be a tracking id; else the document
    cannot be checked, and is refused."""
    tracking = flat.get("request_tracking_id")
    rid = str(request_id)
    if not tracking or tracking == rid:  # the API id names this very item under either scheme
        return
    expected = theirs.get("request_tracking_id") if theirs else None
    if expected:
        if tracking != expected:
            raise DocumentMismatch(
                f"{kind.name}: the document's RequestTrackingID {tracking!r} is not the one of "
                f"the {kind.noun} {rid!r} ({expected!r}); it belongs to another request. "
                f"Nothing was sent. Build the document from that {kind.noun}, or send it to the "
                "id it answers."
            )
        return
    unread = f"the {kind.noun}'s own document gives none (it could not be read, or lacks one)"
    if len(rid) <= ID_LENGTH:  # a dashed GUID (36 characters) never fits
        raise InvalidValue(
            f"{kind.name}: the document's RequestTrackingID {tracking!r} is not the "
            f"{kind.noun}'s API id {rid!r}, and {unread}: it may belong to another request. "
            f"Nothing was sent. {UNCHECKED}"
        )
    raise InvalidValue(
        f"{kind.name}: the document (RequestTrackingID {tracking!r}) cannot be checked against "
        f"the {kind.noun} {rid!r}: its API id is no tracking id, and {unread}. Nothing was "
        f"sent. {UNCHECKED}"
    )


def _check_student(
    kind: SendKind, request_id: Any, flat: dict[str, Any], theirs: dict[str, Any] | None
) -> None:
    """Refuse a transcript whose student differs from the request's on an identity field
    (:func:`workbench.pesc.student.differing_fields`); the message names fields, never values."""
    what = f"the student of the {kind.noun} {str(request_id)!r}"
    if theirs is None or all(
        student.comparable(theirs.get(f), f) is None for f in student.IDENTITY
    ):
        raise InvalidValue(
            f"{kind.name}: the transcript's student cannot be checked against {what}: its "
            "document names none (it could not be read). Nothing was sent. Pass check=False "
            "(on the command line, --no-check) once you have checked by hand that the "
            "transcript is of the student it asks for."
        )
    differ = student.differing_fields(theirs, flat)
    if differ:
        raise DocumentMismatch(
            f"{kind.name}: the transcript's student differs from {what} on "
            f"{student.described(differ)}: it may be another student's transcript. Nothing was "
            "sent. Build it from the request's student, or pass check=False (on the command "
            "line, --no-check) if you have checked by hand."
        )


def _renewal(kind: SendKind, flat: dict[str, Any], answered: str | None) -> str | None:
    """What makes a send new beside an earlier one of the same operation: a re-issued
    transcript, or a response to a request now cancelled (OCAS answers a cancellation, even
    with TranscriptSent to refuse it). None: a first send, or a duplicate."""
    if kind.name == "send_transcript" and (flat.get("transmission_type") or "") == REISSUE:
        return "re-issue"
    if kind.name == "send_response" and answered:
        try:
            if transmission_kind(answered) == "Cancellation":
                return "answer to a cancellation"
        except PescError:
            return None
    return None
