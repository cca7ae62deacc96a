"""The one send check, for the API and the CLI (:func:`check_send`), and what a send's answer
or failure means (:func:`reply_rows`, :func:`settle_failure`).

Always: the message type, and a DocumentProcessCode that is what it answers' and the profile's
``environment``'s (TEST and PRODUCTION never cross). With ``check``: the RequestTrackingID and,
for a transcript, the student (messages name fields, never values).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

from workbench import pesc
from workbench.api.frames import Rows, document_row, parse_pescxml
from workbench.errors import AuthError, DocumentMismatch, InvalidValue, PartnerError, TransportError
from workbench.http.answers import answer_items
from workbench.pesc import fields
from workbench.pesc.builders import ID_LENGTH


@dataclass(frozen=True)
class SendKind:
    """One of the three sends: its outbox name, what its id names, its message types."""

    name: str
    noun: str
    expects: tuple[str, ...]


SENDS = {
    kind.name: kind
    for kind in (
        SendKind("send_response", "transcript request", ("TranscriptResponse",)),
        SendKind("send_transcript", "transcript request",
                 ("CollegeTranscript", "HighSchoolTranscript")),
        SendKind("send_acknowledgment", "transcript",
                 ("Acknowledgment", "TranscriptAcknowledgment")),
    )
}  # fmt: skip
UNCHECKED = (
    "Pass check=False (on the command line, --no-check) once you have checked by hand that "
    "the document answers it."
)


@dataclass(frozen=True)
class CheckedSend:
    """A document that passed :func:`check_send`; ``renewal``: why it is a new send, if so."""

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
    """The parsed document and its fields (``InvalidValue``: empty or of the wrong type)."""
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
    flat: dict[str, Any],
    *,
    answered: str | None,
    environment: str | None,
    check: bool = True,
) -> CheckedSend:
    """Check ``xml`` (its fields ``flat``, :func:`document_fields`) against ``answered`` (the
    XML it answers; None: unreadable)."""
    parsed = parse_pescxml(answered).document
    theirs = pesc.flatten(parsed) if parsed is not None else None
    what = f"the {kind.noun} {str(request_id)!r}"
    _check_process_code(kind, what, process_code(flat), process_code(theirs or {}), environment)
    if check:
        _check_tracking(kind, str(request_id), flat, theirs)
        if kind.name == "send_transcript":
            _check_student(kind, what, flat, theirs)
    renewal = None
    if kind.name == "send_transcript" and flat.get("transmission_type") == "Reissue":
        renewal = "re-issue"
    elif (
        kind.name == "send_response"
        and parsed
        and fields.transmission_kind(parsed) == "Cancellation"
    ):
        renewal = "answer to a cancellation"  # OCAS answers one, even with TranscriptSent
    return CheckedSend(kind, str(request_id), xml, flat, renewal)


def process_code(flat: dict[str, Any]) -> str | None:
    """A document's DocumentProcessCode, upper-cased (None when it states none)."""
    return str(flat.get("process_code") or "").strip().upper() or None


def _check_process_code(
    kind: SendKind, what: str, ours: str | None, answered: str | None, environment: str | None
) -> None:
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


def _check_tracking(kind: SendKind, rid: str, flat: dict[str, Any], theirs: dict | None) -> None:
    """The RequestTrackingID is the answered one's; unknown, the API id stands for it when it
    could be a tracking id (a partner may key its API by a GUID), else the send is refused."""
    tracking = flat.get("request_tracking_id")
    if not tracking or tracking == rid:  # the API id names this very item under either scheme
        return
    expected = theirs.get("request_tracking_id") if theirs else None
    if expected and tracking != expected:
        raise DocumentMismatch(
            f"{kind.name}: the document's RequestTrackingID {tracking!r} is not the one of the "
            f"{kind.noun} {rid!r} ({expected!r}); it belongs to another request. Nothing was "
            f"sent. Build the document from that {kind.noun}, or send it to the id it answers."
        )
    if expected:
        return
    differs = (
        f"cannot be checked against the {kind.noun} {rid!r}, whose API id is no tracking id"
        if len(rid) > ID_LENGTH
        else f"is not the {kind.noun}'s API id {rid!r}"
    )
    raise InvalidValue(
        f"{kind.name}: the document's RequestTrackingID {tracking!r} {differs}, and the "
        f"{kind.noun}'s own document gives none (it could not be read, or lacks one): it may "
        f"belong to another request. Nothing was sent. {UNCHECKED}"
    )


def _check_student(kind: SendKind, what: str, flat: dict[str, Any], theirs: dict | None) -> None:
    """A transcript of the request's student (:func:`workbench.pesc.fields.differing_fields`)."""
    what = f"the student of {what}"
    if theirs is None or all(fields.comparable(theirs.get(f), f) is None for f in fields.IDENTITY):
        raise InvalidValue(
            f"{kind.name}: the transcript's student cannot be checked against {what}: its "
            f"document names none (it could not be read). Nothing was sent. {UNCHECKED}"
        )
    differ = fields.differing_fields(theirs, flat)
    if differ:
        raise DocumentMismatch(
            f"{kind.name}: the transcript's student differs from {what} on "
            f"{fields.described(differ)}: it may be another student's transcript. Nothing was "
            "sent. Build it from the request's student, or pass check=False (on the command "
            "line, --no-check) if you have checked by hand."
        )


def accepted(exc: BaseException) -> TypeGuard[PartnerError]:
    """A 2xx answer that raised (its body is not the JSON expected): the partner took it."""
    return isinstance(exc, PartnerError) and exc.status is not None and 200 <= exc.status < 300


def reply_rows(
    payload: Any, unread: PartnerError | None, operation: str
) -> tuple[Rows, str | None]:
    """The rows of an accepted send's answer, and a note when it is not the echoed document."""
    if unread is None:
        try:
            items = answer_items(payload, operation=operation)
        except PartnerError:
            items = []
        if items:
            return [document_row(item) for item in items], None
    status = unread.status if unread is not None else 200
    what = (
        "a body that cannot be read as JSON"
        if unread
        else json.dumps(payload, ensure_ascii=False)[:80]
    )
    return [], (
        f"{operation}: the partner answered {status}, so it took the send, but its answer is "
        f"not the document it echoes ({what}); nothing was parsed from it. The send is "
        "recorded as sent and the answer kept in the outbox (response_body): do not send it "
        "again."
    )


def settle_failure(outbox: Any, entry: int, exc: BaseException) -> None:
    """Mark a send that raised ``failed`` when it provably did not take effect, else
    ``uncertain`` (the next pull settles it from the lists, never by resending)."""
    error, call_id = str(exc), getattr(exc, "call_id", None)
    if isinstance(exc, TransportError) and not exc.may_have_reached:
        outbox.mark(entry, "failed", error=error, call_id=call_id)
    elif isinstance(exc, AuthError):  # refused at the door: a 401 is never processed
        outbox.mark(entry, "failed", error=error, status=401, call_id=call_id)
    elif isinstance(exc, PartnerError) and exc.status is not None and 300 <= exc.status < 500:
        outbox.mark(entry, "failed", error=error, status=exc.status, call_id=call_id)
    elif isinstance(exc, TransportError):
        outbox.mark(entry, "uncertain", error=error, call_id=call_id)
    else:  # a 5xx, an unexpected 2xx, or an interruption (Ctrl-C): it may have been processed
        outbox.mark(entry, "uncertain", error=f"{type(exc).__name__}: {exc}", call_id=call_id)
