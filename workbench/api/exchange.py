"""Transcript exchange (spec §4.4): the supplier and consumer roles.

Sends are checked (:mod:`workbench.api.sends`), then go through the outbox: recorded before
they leave, marked after, never resent. A 404 or 405 tries the other spelling of the send
routes once; the store remembers the one that took it (meta ``send_routes_learned``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd

from workbench import pesc, spec
from workbench.api.frames import (
    CALL_ID,
    ERROR,
    PARSE_ERROR,
    PESCXML,
    Rows,
    document_row,
    fetch_all,
    frame,
    ids_of,
    text_of,
)
from workbench.api.sends import (
    SENDS,
    CheckedSend,
    accepted,
    check_send,
    document_fields,
    reply_rows,
    settle_failure,
)
from workbench.errors import (
    ConfigError,
    InvalidValue,
    NotFound,
    PartnerError,
    TransportError,
    WorkbenchError,
)
from workbench.http.answers import (
    answer_items,
    check_request_id,
    detail_items,
    list_items,
    request_path,
    said,
)
from workbench.http.session import Session
from workbench.pesc.fields import KEYS
from workbench.store.frames import is_missing

if TYPE_CHECKING:
    from workbench.store import Store

SUMMARY_COLUMNS = ("request_id", "request_date")
TAIL = (PESCXML, PARSE_ERROR)
SEND_ROUTES_META = "send_routes_learned"  # store meta: the spelling that last took a send
NO_ROUTE = (404, 405)  # a send answered so reached no operation: the partner took nothing
Ids: TypeAlias = Iterable[Any] | pd.DataFrame | pd.Series
logger = logging.getLogger(__name__)


class Role:
    """One role's operations, and where its pending list and details are (the pull reads them)."""

    role = noun = ""  # noun: what one id names, in messages
    list_path = empty = detail_path = ""  # empty: what the partner says of an empty list
    detail_columns: Sequence[str] = SUMMARY_COLUMNS
    list_name = table = id_column = ""  # what its sends answer, in the store

    def __init__(self, session: Session, *, store: Callable[[], Store] | None = None) -> None:
        # store: opens the store whose outbox and documents sends use; None: the partner's.
        self._session, self._store = session, store

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of profile {self._session.profile.name!r}>"

    def _list(self, *, operation: str) -> pd.DataFrame:
        answer = self._session.call(
            self.role, "GET", self.list_path, operation=operation, empty=(self.empty,)
        )
        listed = [] if answer.value is None else list_items(answer.value, operation=operation)
        items = answer_items(listed, operation=operation)
        return frame(items, columns=SUMMARY_COLUMNS, operation=operation, call_id=answer.call_id)

    def _detail_rows(self, request_id: Any, *, operation: str) -> tuple[Rows, Any]:
        path = request_path(self.detail_path, request_id)
        subject = f"{self.noun} {request_id!r}"
        answer = self._session.call(self.role, "GET", path, operation=operation, subject=subject)
        try:
            items = detail_items(answer.value, request_id, operation=operation, subject=subject)
        except WorkbenchError as exc:  # an answer of the wrong shape: its call is recorded
            exc.call_id = answer.call_id
            raise
        return [document_row(item) for item in items], answer.call_id

    def _detail(self, request_id: Any, *, operation: str) -> pd.DataFrame:
        rows, call_id = self._detail_rows(request_id, operation=operation)
        columns = self.detail_columns
        return frame(rows, columns=columns, tail=TAIL, operation=operation, call_id=call_id)

    def _details(self, ids: Ids, *, operation: str, progress: bool | None) -> pd.DataFrame:
        """One row per id (an ``error`` row when it failed) with its ``call_id``; all in
        ``attrs["call_ids"]``."""
        self._session.ensure_open()  # a closed workbench raises, not one error row per id

        def fetch(request_id: Any) -> Rows:
            rows, call_id = self._detail_rows(request_id, operation=operation)
            return [{**row, CALL_ID: call_id} for row in rows]

        concurrency = self._session.profile.concurrency
        rows = fetch_all(
            ids_of(ids), fetch, concurrency=concurrency, progress=progress, desc=operation
        )
        tail = (*TAIL, ERROR, CALL_ID)
        df = frame(rows, columns=self.detail_columns, tail=tail, operation=operation)
        df.attrs["call_ids"] = [int(c) for c in df[CALL_ID].dropna().unique()]
        return df

    def answered(self, request_id: Any, *, operation: str) -> tuple[dict[str, Any], bool]:
        """The row (fields, ``pescxml``) of what a send to ``request_id`` answers, from the
        store, else fetched; and whether it came from the store."""
        check_request_id(request_id)  # a hostile id goes neither to the store nor the partner
        if self._store is not None:
            store = self._store()
            xml = store.document(str(request_id), list_name=self.list_name)
            found = store.table(self.table, where=f"{self.id_column} = ?", params=[str(request_id)])
            if xml is not None and not found.empty:
                row = {k: None if is_missing(v) else v for k, v in found.iloc[0].items()}
                return {**row, PESCXML: xml}, True
        rows, _ = self._detail_rows(request_id, operation=operation)
        return rows[0], False

    def check_send(
        self,
        operation: str,
        request_id: Any,
        pescxml: Any,
        *,
        check: bool = True,
        answered: str | None = None,
    ) -> CheckedSend:
        """Every check a send makes (:func:`workbench.api.sends.check_send`), sending nothing;
        what it answers unreadable refuses it, unless ``check=False``."""
        kind = SENDS[operation]
        check_request_id(request_id)
        xml = text_of(pescxml)
        _, flat = document_fields(kind, xml)  # a bad document is refused before any read
        name = f"{self.role}.{operation}"
        if answered is None:
            try:
                row, _ = self.answered(request_id, operation=name)
                answered = row.get(PESCXML) or None
            except (PartnerError, TransportError) as exc:
                if check and isinstance(exc, NotFound | InvalidValue):
                    raise  # an id refused before any call, or by the partner: it says why
                if check:
                    raise _unchecked(exc, request_id, operation=name, noun=self.noun) from exc
        environment = self._session.profile.environment
        return check_send(
            kind, request_id, xml, flat, answered=answered, environment=environment, check=check
        )

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
        """POST a checked document through the outbox."""
        operation = f"{self.role}.{kind}"
        self._require_writable(operation)
        checked = self.check_send(kind, request_id, pescxml, check=check, answered=answered)
        outbox = self._store().outbox if self._store is not None else None
        renews = checked.renewal is not None
        entry = outbox and outbox.begin(
            kind, str(request_id), checked.xml, force=force, flat=checked.flat, renews=renews
        )
        unread: PartnerError | None = None
        try:
            answer = self._post(kind, request_id, checked.xml, operation=operation)
            payload, call_id = answer.value, answer.call_id
        except BaseException as exc:
            if not accepted(exc):
                if outbox and entry:
                    settle_failure(outbox, entry, exc)
                raise
            payload, call_id, unread = None, exc.call_id, exc  # a 2xx: the partner took it
        rows, note = reply_rows(payload, unread, operation)
        if outbox and entry:
            body = unread.body if unread else json.dumps(payload, ensure_ascii=False)
            reply = {k: v for k, v in rows[0].items() if k not in TAIL} if rows else None
            status = unread.status if unread else 200
            outbox.mark_sent(entry, status=status, response_body=body, call_id=call_id,
                             reply_flat=reply)  # fmt: skip
        df = frame(rows, columns=("request_id",), tail=TAIL, operation=operation, call_id=call_id)
        df.attrs["outbox_id"] = entry
        if note:
            df.attrs["reply_note"] = note
            logger.warning("%s", note)
        return df

    def _require_writable(self, operation: str) -> None:
        profile = self._session.profile
        if profile.read_only:
            raise ConfigError(
                f"{operation}: profile {profile.name!r} is read-only, so nothing was sent. "
                "Use a profile without read_only (or set WORKBENCH_READ_ONLY=0) to send."
            )

    def _post(self, kind: str, request_id: Any, xml: str, *, operation: str) -> Any:
        """POST ``xml`` at the route of ``kind`` as remembered, else the profile's spelling;
        a 404 or 405 reached no operation: the other spelling is tried once."""
        store = self._store() if self._store is not None else None
        if kind == "send_acknowledgment":
            spellings = [""]
        else:
            remembered = store.meta(SEND_ROUTES_META) if store is not None else None
            first = (
                remembered if remembered in spec.SEND_ROUTES else self._session.profile.send_routes
            )
            spellings = [first, *(s for s in spec.SEND_ROUTES if s != first)]
        refusals: list[PartnerError] = []
        for spelling in spellings:
            route = (
                spec.SEND_ROUTES[spelling][kind] if spelling else spec.CONSUMER_ACKNOWLEDGMENT_PATH
            )
            try:
                answer = self._session.call(
                    self.role,
                    "POST",
                    request_path(route, request_id),
                    operation=operation,
                    json={spec.PESCXML_FIELD: xml},
                    subject=f"{self.noun} {request_id!r}",
                )
            except PartnerError as exc:
                if accepted(exc):  # a 2xx the session could not read: taken at this spelling
                    self._remember(store, spelling)
                elif exc.status in NO_ROUTE and spelling != spellings[-1]:
                    refusals.append(exc)
                    continue
                elif exc.status in NO_ROUTE and refusals:
                    raise _no_route(exc, refusals[0], operation, spellings) from exc
                raise
            self._remember(store, spelling)
            return answer
        raise AssertionError("unreachable: the last spelling returns or raises")

    @staticmethod
    def _remember(store: Store | None, spelling: str) -> None:
        if spelling and store is not None and store.meta(SEND_ROUTES_META) != spelling:
            store.set_meta(SEND_ROUTES_META, spelling)


class Supplier(Role):
    """Supplier role: requests in; responses and transcripts out; acknowledgments back."""

    role, noun = "supplier", "transcript request"
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
        """Details of many requests, fetched concurrently; failures in the ``error`` column.

        >>> w.supplier.requests(w.supplier.pending_requests())  # doctest: +SKIP
        """
        return self._details(ids, operation="supplier.requests", progress=progress)

    def send_response(
        self, request_id: str, pescxml: Any, *, force: bool = False, check: bool = True
    ) -> pd.DataFrame:
        """Send a TranscriptResponse (checked: :mod:`workbench.api.sends`); the echo, parsed.

        A second response is a ``DuplicateSend`` unless ``force=True``, or it answers the
        request's cancellation with another DocumentID."""
        return self._send("send_response", request_id, pescxml, force=force, check=check)

    def send_transcript(
        self, request_id: str, pescxml: Any, *, force: bool = False, check: bool = True
    ) -> pd.DataFrame:
        """Send the transcript for a request (checked as :meth:`send_response`, and its
        student); the partner's acknowledgment, parsed. A second one is a ``DuplicateSend``
        unless ``force=True``, or a re-issue (TransmissionType Reissue) of another DocumentID."""
        return self._send("send_transcript", request_id, pescxml, force=force, check=check)


class Consumer(Role):
    """Consumer role: transcripts in; acknowledgments out."""

    role, noun = "consumer", "transcript"
    list_path, empty = spec.CONSUMER_PENDING_PATH, spec.NO_TRANSCRIPTS_FOUND
    detail_path = spec.CONSUMER_TRANSCRIPT_PATH
    detail_columns = ("request_id", *KEYS["transcript"])  # spec §4.4: no RequestDate
    list_name, table, id_column = "consumer_transcripts", "transcripts_received", "transcript_id"

    def pending_transcripts(self) -> pd.DataFrame:
        """Transcripts without a response: request_id, request_date."""
        return self._list(operation="consumer.pending_transcripts")

    def transcript(self, request_id: str) -> pd.DataFrame:
        """One transcript: the parsed CollegeTranscript fields and ``pescxml``."""
        return self._detail(request_id, operation="consumer.transcript")

    def transcripts(self, ids: Ids, *, progress: bool | None = None) -> pd.DataFrame:
        """Details of many transcripts, fetched concurrently; failures in ``error``."""
        return self._details(ids, operation="consumer.transcripts", progress=progress)

    def send_acknowledgment(
        self, request_id: str, pescxml: Any = None, *, force: bool = False, check: bool = True
    ) -> pd.DataFrame:
        """Acknowledge a transcript (``pescxml=None``: built from its current version); a second
        one of the same version is a ``DuplicateSend`` unless ``force=True``.

        >>> w.consumer.send_acknowledgment("6f1c...")  # doctest: +SKIP
        """
        operation = "consumer.send_acknowledgment"
        self._require_writable(operation)
        answered = None
        if pescxml is None:
            transcript, _ = self.answered(request_id, operation=operation)
            answered = transcript[PESCXML]
            if transcript.get(PARSE_ERROR) or not answered:
                raise InvalidValue(
                    f"{operation}: cannot build an acknowledgment, the transcript {request_id!r} "
                    f"does not parse ({transcript.get(PARSE_ERROR) or 'no document'}); pass "
                    "pescxml= explicitly."
                )
            code = self._session.profile.environment
            pescxml = pesc.build_acknowledgment(answered, process_code=code and code.upper())
        return self._send(
            "send_acknowledgment", request_id, pescxml, force=force, check=check, answered=answered
        )


def _unchecked(
    exc: PartnerError | TransportError, request_id: Any, *, operation: str, noun: str
) -> WorkbenchError:
    """The refusal of a send whose check could not read what it answers, of the same kind."""
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
    """The refusal of a send neither spelling of its route took, with what the partner said."""
    words = (said(last.body) or (last.body or "").strip())[:200] or "no message"
    refusal = PartnerError(
        f"{operation}: the partner took this send at neither spelling of its route: the "
        f"{spellings[0]} one answered {first.status}, the {spellings[1]} one {last.status} "
        f"({words}). Nothing was received, so sending again is allowed. If the partner does not "
        "know the request, pull to see whether it is still listed; if the route is spelled "
        "otherwise, set send_routes in the profile (WORKBENCH_SEND_ROUTES: plural for "
        "/responses and /transcripts, singular for /response and /transcript).",
        status=last.status,
        body=last.body,
    )
    refusal.call_id = last.call_id
    return refusal
