"""Transcript exchange (spec §4.4): the supplier and consumer roles.

>>> w.supplier.pending_requests()                  # doctest: +SKIP
>>> w.supplier.requests(w.supplier.pending_requests())  # every detail, 8 at a time
>>> w.consumer.send_acknowledgment(request_id)     # built from the transcript

Sends are checked first (:mod:`workbench.api.send_checks`), go through the outbox, and reach
the partner at its spelling of the send routes (``send_routes``; a 404 or 405 there tries the
other spelling once, and the store remembers, in meta ``send_routes_learned``, the one that
took the send).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

import pandas as pd

from workbench import pesc, spec
from workbench.api import send_checks
from workbench.api.batch import ERROR, Rows, fetch_all, ids_of
from workbench.api.documents import PARSE_ERROR, PESCXML, parse_pescxml, split_pescxml, text_of
from workbench.api.frames import CALL_ID, frame, snake_keys
from workbench.api.send_checks import SENDS, CheckedSend, document_fields
from workbench.errors import (
    AuthError,
    ConfigError,
    InvalidValue,
    NotFound,
    PartnerError,
    TransportError,
    WorkbenchError,
)
from workbench.ids import check_request_id, request_path
from workbench.partner_json import answer_items, detail_items, list_items, unexpected
from workbench.pesc.fields import KEYS
from workbench.session import Session
from workbench.store.frames import is_missing

if TYPE_CHECKING:
    from workbench.store import Store
    from workbench.store.outbox import Outbox

SUMMARY_COLUMNS = ("request_id", "request_date")
TAIL = (PESCXML, PARSE_ERROR)
# Store meta: the spelling of the send routes (spec.SEND_ROUTES) this partner last took a send at.
SEND_ROUTES_META = "send_routes_learned"
NO_ROUTE = (404, 405)  # a send answered so reached no operation: the partner took nothing
Ids: TypeAlias = Iterable[Any] | pd.DataFrame | pd.Series
Expects: TypeAlias = tuple[str, ...]
logger = logging.getLogger(__name__)


class Role:
    """One role's operations, and where its pending list and details are (the pull reads them)."""

    role = ""
    noun = ""  # what one id names, in messages: "transcript request", "transcript"
    list_path = empty = ""  # the pending list, and what the partner says when it is empty
    detail_path = ""
    detail_columns: Sequence[str] = SUMMARY_COLUMNS  # and the parsed fields, declared
    # What this role's sends answer, in the store: its list, entity table and id column.
    list_name = table = id_column = ""

    def __init__(self, session: Session, *, store: Callable[[], Store] | None = None) -> None:
        self._session = session
        # Gives the store (opening it on first use): sends go through its outbox and are
        # checked against its documents. None: sends unrecorded, checked against the partner.
        self._store = store

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of profile {self._session.profile.name!r}>"

    def _list(self, *, operation: str) -> pd.DataFrame:
        answer = self._session.call(
            self.role, "GET", self.list_path, operation=operation, empty=(self.empty,)
        )
        listed = [] if answer.value is None else list_items(answer.value, operation=operation)
        items = _items(listed, operation)  # every item an object
        return frame(items, columns=SUMMARY_COLUMNS, operation=operation, call_id=answer.call_id)

    def _detail_rows(self, request_id: Any, *, operation: str) -> tuple[Rows, Any]:
        """The rows of one detail, and its call id."""
        path = request_path(self.detail_path, request_id)
        subject = f"{self.noun} {request_id!r}"
        answer = self._session.call(self.role, "GET", path, operation=operation, subject=subject)
        try:
            items = detail_items(answer.value, request_id, operation=operation, subject=subject)
        except WorkbenchError as exc:  # an answer of the wrong shape: its call is recorded
            exc.call_id = answer.call_id
            raise
        return [_document_row(item) for item in items], answer.call_id

    def _detail(self, request_id: Any, *, operation: str) -> pd.DataFrame:
        rows, call_id = self._detail_rows(request_id, operation=operation)
        return frame(
            rows, columns=self.detail_columns, tail=TAIL, operation=operation, call_id=call_id
        )

    def _details(self, ids: Ids, *, operation: str, progress: bool | None) -> pd.DataFrame:
        """One row per id (an ``error`` row when it failed), each naming its ``call_id``;
        ``attrs["call_id"]`` is None (many calls), ``attrs["call_ids"]`` lists them."""

        self._session.ensure_open()  # a closed workbench raises, not one error row per id

        def fetch(request_id: Any) -> Rows:
            rows, call_id = self._detail_rows(request_id, operation=operation)
            return [{**row, CALL_ID: call_id} for row in rows]

        rows = fetch_all(
            ids_of(ids),
            fetch,
            concurrency=self._session.profile.concurrency,
            progress=progress,
            desc=operation,
        )
        df = frame(
            rows, columns=self.detail_columns, tail=(*TAIL, ERROR, CALL_ID), operation=operation
        )
        df.attrs["call_ids"] = [int(c) for c in df[CALL_ID].dropna().unique()]
        return df

    def _require_writable(self, operation: str) -> None:
        profile = self._session.profile
        if profile.read_only:
            raise ConfigError(
                f"{operation}: profile {profile.name!r} is read-only, so nothing was sent. "
                "Use a profile without read_only (or set WORKBENCH_READ_ONLY=0) to send."
            )

    def _answered(self, request_id: Any, *, operation: str) -> dict[str, Any]:
        """What a send to ``request_id`` answers (the request, or the transcript): the fields
        and ``pescxml`` of its current version in the store, else of its detail, fetched."""
        check_request_id(request_id)  # a hostile id goes neither to the store nor the partner
        if self._store is not None:
            store = self._store()
            xml = store.document(str(request_id), list_name=self.list_name)
            found = store.table(self.table, where=f"{self.id_column} = ?", params=[str(request_id)])
            if xml is not None and not found.empty:
                row = {k: None if is_missing(v) else v for k, v in found.iloc[0].items()}
                return {**row, PESCXML: xml}
        rows, _ = self._detail_rows(request_id, operation=operation)
        return rows[0]

    def _answered_xml(self, request_id: Any, *, operation: str) -> str | None:
        """The XML of what a send to ``request_id`` answers (:meth:`_answered`), to check the
        send against. A failure to read it (a 5xx, an unreadable answer, the network) refuses
        the send, which never goes unchecked: nothing is sent. ``NotFound`` and
        ``InvalidValue`` are raised as they are."""
        try:
            row = self._answered(request_id, operation=operation)
        except (NotFound, InvalidValue):
            raise  # an id refused before any call, or by the partner: it says why
        except (PartnerError, TransportError) as exc:
            raise _unchecked(exc, request_id, operation=operation, noun=self.noun) from exc
        xml = row.get(PESCXML)
        return xml if isinstance(xml, str) and xml else None

    def check_send(
        self,
        operation: str,
        request_id: Any,
        pescxml: Any,
        *,
        check: bool = True,
        answered: str | None = None,
    ) -> CheckedSend:
        """Every check a send makes before anything leaves (:mod:`workbench.api.send_checks`),
        sending nothing: ``operation`` is send_response, send_transcript or
        send_acknowledgment. ``answered``: the XML of what it answers, else the store's
        current version, else fetched; a failure to fetch it refuses the send, unless
        ``check=False`` (then its DocumentProcessCode is checked against the profile's
        environment only). Raises why it would be refused."""
        kind = SENDS[operation]
        check_request_id(request_id)  # a hostile id goes neither to the store nor the partner
        xml = text_of(pescxml)
        name = f"{self.role}.{operation}"
        document_fields(kind, xml)  # a bad document is refused before anything is read
        if answered is None:
            try:
                answered = self._answered_xml(request_id, operation=name)
            except (PartnerError, TransportError):
                if check:
                    raise
                # checked by hand: the partner's own answer to the send says what it knows
        return send_checks.check_send(
            kind,
            request_id,
            xml,
            answered=answered,
            environment=self._environment,
            check=check,
        )

    @property
    def _environment(self) -> str | None:
        """The profile's environment: test, production, or None (undeclared)."""
        return self._session.profile.environment

    def _send(
        self,
        kind: str,
        request_id: Any,
        pescxml: Any,
        *,
        force: bool = False,
        check: bool = True,
        answered: str | None = None,
    ) -> pd.DataFrame:
        """POST a document through the outbox: recorded before it leaves, marked after.

        First :meth:`check_send` (``answered``: given, else read). Never resent: a failure after
        the bytes may have left is ``uncertain`` in the outbox, and the next pull settles it
        from the partner's lists.
        """
        operation = f"{self.role}.{kind}"
        self._require_writable(operation)
        checked = self.check_send(kind, request_id, pescxml, check=check, answered=answered)
        entry = None
        if self._store is not None:
            outbox = self._store().outbox
            entry_id = outbox.begin(
                kind,
                str(request_id),
                checked.xml,
                force=force,
                flat=checked.flat,
                renews=checked.renewal is not None,
            )
            entry = _Entry(outbox, entry_id)
        unread: PartnerError | None = None
        try:
            answer = self._post(kind, request_id, checked.xml, operation=operation)
            payload, call_id = answer.value, answer.call_id
        except BaseException as exc:
            if not _accepted(exc):
                if entry is not None:
                    _settle_failure(entry, exc)
                raise
            payload, call_id, unread = None, exc.call_id, exc
        rows, note = _reply_rows(payload, unread, operation)
        if entry is not None:  # a 2xx: the partner took it
            reply = {k: v for k, v in rows[0].items() if k not in TAIL} if rows else None
            entry.outbox.mark_sent(
                entry.id,
                status=unread.status if unread is not None else 200,
                response_body=unread.body if unread is not None else _json_text(payload),
                call_id=call_id,
                reply_flat=reply,
            )
        df = frame(rows, columns=("request_id",), tail=TAIL, operation=operation, call_id=call_id)
        df.attrs["outbox_id"] = entry.id if entry is not None else None
        if note:
            df.attrs["reply_note"] = note
            logger.warning("%s", note)
        return df

    def _post(self, kind: str, request_id: Any, xml: str, *, operation: str) -> Any:
        """POST ``xml`` to the route of ``kind``, as this partner spells it (the spelling
        remembered, else the profile's ``send_routes``). A 404 or 405 there reached no
        operation, so the partner took nothing: the other spelling is tried once, and the one
        that takes the send is remembered."""
        spellings = self._spellings() if kind in spec.SEND_ROUTES["plural"] else [""]
        refusals: list[PartnerError] = []
        for spelling in spellings:
            template = spec.SEND_ROUTES[spelling][kind] if spelling else _ROUTES[kind]
            try:
                answer = self._session.call(
                    self.role,
                    "POST",
                    request_path(template, request_id),
                    operation=operation,
                    json={spec.PESCXML_FIELD: xml},
                    subject=f"{self.noun} {request_id!r}",
                )
            except PartnerError as exc:
                if _accepted(exc):
                    self._remember(spelling, refusals)
                elif exc.status in NO_ROUTE and spelling and spelling != spellings[-1]:
                    refusals.append(exc)
                    continue
                elif exc.status in NO_ROUTE and refusals:
                    raise _no_route(exc, refusals[0], operation, spellings) from exc
                raise
            self._remember(spelling, refusals)
            return answer
        raise AssertionError("unreachable: the last spelling returns or raises")

    def _spellings(self) -> list[str]:
        """The send routes' spellings, the one to try first first: remembered, else the
        profile's."""
        remembered = self._store().meta(SEND_ROUTES_META) if self._store is not None else None
        first = remembered if remembered in spec.SEND_ROUTES else self._session.profile.send_routes
        return [first, *(s for s in spec.SEND_ROUTES if s != first)]

    def _remember(self, spelling: str, refusals: list[PartnerError]) -> None:
        """Keep the spelling the partner took a send at, when it is news to the store."""
        if not spelling or self._store is None:
            return
        store = self._store()
        if store.meta(SEND_ROUTES_META) != spelling:
            store.set_meta(SEND_ROUTES_META, spelling)
        if refusals:
            logger.warning(
                "The partner took the send at its %s send route, after a %s at the other; "
                "the store remembers it. Set send_routes = %r in the profile "
                "(WORKBENCH_SEND_ROUTES) to start there.",
                spelling,
                refusals[0].status,
                spelling,
            )


class Supplier(Role):
    """Supplier role: requests in; responses and transcripts out; acknowledgments back."""

    role = "supplier"
    noun = "transcript request"
    list_path, empty = spec.SUPPLIER_PENDING_PATH, spec.NO_REQUESTS_FOUND
    detail_path = spec.SUPPLIER_REQUEST_PATH
    detail_columns = (*SUMMARY_COLUMNS, *KEYS["request"])
    list_name, table, id_column = "supplier_requests", "transcript_requests", "request_id"

    def pending_requests(self) -> pd.DataFrame:
        """Transcript requests without a response: request_id, request_date."""
        return self._list(operation="supplier.pending_requests")

    def request(self, request_id: str) -> pd.DataFrame:
        """One request: its fields, the parsed TranscriptRequest fields, and ``pescxml``."""
        return self._detail(request_id, operation="supplier.request")

    def requests(self, ids: Ids, *, progress: bool | None = None) -> pd.DataFrame:
        """Details of many requests, fetched concurrently; failures go to the ``error`` column.

        >>> w.supplier.requests(w.supplier.pending_requests())  # doctest: +SKIP
        """
        return self._details(ids, operation="supplier.requests", progress=progress)

    def send_response(
        self, request_id: str, pescxml: Any, *, force: bool = False, check: bool = True
    ) -> pd.DataFrame:
        """Send a TranscriptResponse; returns the echoed response, parsed.

        Goes through the outbox: a second response to the same request is refused
        (``DuplicateSend``) unless ``force=True``, except one of another DocumentID answering
        the request's cancellation (a new send). Checked first
        (:mod:`workbench.api.send_checks`): its DocumentProcessCode is the request's and the
        profile's environment's (``DocumentMismatch``), and its RequestTrackingID the
        request's (``DocumentMismatch``); ``check=False`` skips the latter only, for a request
        whose own document cannot be read, once you have checked it by hand. The route is
        the partner's spelling (:attr:`Profile.send_routes`; a 404 or 405 tries the other
        once, and the store remembers the one that took it).
        """
        return self._send("send_response", request_id, pescxml, force=force, check=check)

    def send_transcript(
        self, request_id: str, pescxml: Any, *, force: bool = False, check: bool = True
    ) -> pd.DataFrame:
        """Send the transcript for a request; returns the partner's acknowledgment, parsed.

        Goes through the outbox: a second transcript for the same request is refused
        (``DuplicateSend``) unless ``force=True``, except a re-issue (TransmissionType
        Reissue) of another DocumentID, a new send. ``check``: as in :meth:`send_response`;
        it also refuses (``DocumentMismatch``) a transcript whose student differs from the
        request's on a name, the birth date or an id
        (:func:`workbench.pesc.student.differing_fields`), or (``InvalidValue``) whose request
        names no student (its document unreadable). A failure to read the request (a 5xx,
        the network) refuses the send too: nothing is sent unchecked.
        """
        return self._send("send_transcript", request_id, pescxml, force=force, check=check)


class Consumer(Role):
    """Consumer role: transcripts in; acknowledgments out."""

    role = "consumer"
    noun = "transcript"
    list_path, empty = spec.CONSUMER_PENDING_PATH, spec.NO_TRANSCRIPTS_FOUND
    detail_path = spec.CONSUMER_TRANSCRIPT_PATH
    # spec §4.4: the transcript detail has no RequestDate
    detail_columns = ("request_id", *KEYS["transcript"])
    list_name, table, id_column = "consumer_transcripts", "transcripts_received", "transcript_id"

    def pending_transcripts(self) -> pd.DataFrame:
        """Transcripts without a response: request_id, request_date."""
        return self._list(operation="consumer.pending_transcripts")

    def transcript(self, request_id: str) -> pd.DataFrame:
        """One transcript: the parsed CollegeTranscript fields and ``pescxml``."""
        return self._detail(request_id, operation="consumer.transcript")

    def transcripts(self, ids: Ids, *, progress: bool | None = None) -> pd.DataFrame:
        """Details of many transcripts, fetched concurrently; failures go to ``error``."""
        return self._details(ids, operation="consumer.transcripts", progress=progress)

    def send_acknowledgment(
        self, request_id: str, pescxml: Any = None, *, force: bool = False, check: bool = True
    ) -> pd.DataFrame:
        """Acknowledge a transcript; with ``pescxml=None`` the acknowledgment is built from
        its current version (the store's, else fetched), and so acknowledges that version.
        Goes through the outbox: a second acknowledgment of the same version is refused
        (``DuplicateSend``) unless ``force=True``; one of a version re-issued since is not.
        ``check``: as in :meth:`Supplier.send_response` (the DocumentProcessCode is the
        transcript's).

        >>> w.consumer.send_acknowledgment("6f1c...")  # doctest: +SKIP
        """
        operation = "consumer.send_acknowledgment"
        self._require_writable(operation)
        answered = None
        if pescxml is None:
            transcript = self._answered(request_id, operation=operation)
            pescxml = _build_acknowledgment(
                transcript, request_id, operation=operation, environment=self._environment
            )
            answered = transcript[PESCXML]
        return self._send(
            "send_acknowledgment",
            request_id,
            pescxml,
            force=force,
            check=check,
            answered=answered,
        )


def _build_acknowledgment(
    transcript: dict[str, Any], request_id: Any, *, operation: str, environment: str | None
) -> str:
    if transcript.get(PARSE_ERROR) or not transcript.get(PESCXML):
        raise InvalidValue(
            f"{operation}: cannot build an acknowledgment, the transcript {request_id!r} "
            f"does not parse ({transcript.get(PARSE_ERROR) or 'no document'}); pass pescxml= "
            "explicitly."
        )
    code = environment.upper() if environment else None
    return pesc.build_acknowledgment(transcript[PESCXML], process_code=code)


def _document_row(item: dict[str, Any]) -> dict[str, Any]:
    """An answer item as a row: its fields, the parsed document's fields, ``pescxml`` last."""
    value, rest = split_pescxml(item)
    xml, document, error = parse_pescxml(value)
    row = snake_keys(rest)
    fields = pesc.flatten(document) if document is not None else {}
    for key, value in {**fields, PARSE_ERROR: error}.items():
        row[key if key not in row else f"pesc_{key}"] = value
    row[PESCXML] = xml
    return row


def _unchecked(
    exc: PartnerError | TransportError, request_id: Any, *, operation: str, noun: str
) -> WorkbenchError:
    """The refusal of a send whose check could not read what it answers (``exc``): of the
    same kind, saying that nothing was sent (a ``TransportError`` that never may have)."""
    message = (
        f"{operation}: the {noun} {str(request_id)!r} could not be read to check the document "
        f"against ({exc}). Nothing was sent: try again, or pass check=False once you have "
        "checked by hand."
    )
    refusal: WorkbenchError
    if isinstance(exc, TransportError):
        refusal = TransportError(message, may_have_reached=False)
    else:
        refusal = PartnerError(message, status=exc.status, body=exc.body)
    refusal.call_id = exc.call_id
    return refusal


def _no_route(
    last: PartnerError, first: PartnerError, operation: str, spellings: list[str]
) -> PartnerError:
    """The refusal of a send that neither spelling of its route took (both a 404 or 405),
    with what the partner said (a 404 may mean "no such request" rather than "no such
    route")."""
    said = _partner_words(last.body)
    refusal = PartnerError(
        f"{operation}: the partner took this send at neither spelling of its route: the "
        f"{spellings[0]} one answered {first.status}, the {spellings[1]} one {last.status} "
        f"({said}). Nothing was received, so sending again is allowed. If the partner does not "
        "know the request, pull to see whether it is still listed; if the route is spelled "
        "otherwise, set send_routes in the profile (WORKBENCH_SEND_ROUTES: plural for "
        "/responses and /transcripts, singular for /response and /transcript).",
        status=last.status,
        body=last.body,
    )
    refusal.call_id = last.call_id
    return refusal


def _partner_words(body: str | None) -> str:
    """What an error answer's body says: its ``Message`` (spec §7), else its text, short."""
    try:
        decoded = json.loads(body or "")
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("Message"), str):
        return decoded["Message"][:200]
    return (body or "no message").strip()[:200] or "no message"


def _items(payload: Any, operation: str) -> list[dict[str, Any]]:
    """The items of an exchange answer: an array of objects, or one object."""
    return answer_items(payload, operation=operation)


def _accepted(exc: BaseException) -> TypeGuard[PartnerError]:
    """A 2xx answer that raised (its body is not the JSON expected): the partner took it."""
    return isinstance(exc, PartnerError) and exc.status is not None and 200 <= exc.status < 300


def _reply_rows(
    payload: Any, unread: PartnerError | None, operation: str
) -> tuple[list[dict[str, Any]], str | None]:
    """The rows of an accepted send's answer, and a note when it is not the echoed document."""
    status = unread.status if unread is not None else 200
    if unread is None:
        try:
            items = _items(payload, operation)
        except PartnerError:
            items = []
        if items:
            return [_document_row(item) for item in items], None
    what = "a body that cannot be read as JSON" if unread else _json_text(payload)[:80]
    return [], (
        f"{operation}: the partner answered {status}, so it took the send, but its answer is "
        f"not the document it echoes ({what}); nothing was parsed from it. The send is "
        "recorded as sent and the answer kept in the outbox (response_body): do not send it "
        "again."
    )


# The routes of the sends that have one spelling only.
_ROUTES = {"send_acknowledgment": spec.CONSUMER_ACKNOWLEDGMENT_PATH}


@dataclass(frozen=True)
class _Entry:
    """A send's outbox entry: the outbox and the entry's id."""

    outbox: Outbox
    id: int


def _settle_failure(entry: _Entry, exc: BaseException) -> None:
    """Mark a send that raised: ``failed`` when it provably did not take effect, else
    ``uncertain`` (for the next pull to settle from the lists, never by resending)."""
    outbox, error = entry.outbox, str(exc)
    if isinstance(exc, TransportError):
        if exc.may_have_reached:
            outbox.mark_uncertain(entry.id, error=error, call_id=exc.call_id)
        else:
            outbox.mark_failed(entry.id, error=error, call_id=exc.call_id)
    elif isinstance(exc, AuthError):  # refused at the door: a 401 is never processed
        outbox.mark_failed(entry.id, error=error, status=401, call_id=exc.call_id)
    elif isinstance(exc, PartnerError) and exc.status is not None and 300 <= exc.status < 500:
        outbox.mark_failed(entry.id, error=error, status=exc.status, call_id=exc.call_id)
    else:  # a 5xx, an unexpected 2xx, or an interruption (Ctrl-C): it may have been processed
        outbox.mark_uncertain(
            entry.id, error=f"{type(exc).__name__}: {exc}", call_id=getattr(exc, "call_id", None)
        )


def _json_text(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False)


def _shape(operation: str, payload: Any) -> PartnerError:
    return unexpected(operation, payload, "where an answer item was expected")
