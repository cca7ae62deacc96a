"""The gateway's interfaces (spec §4.2, §4.3): diagnostics, placement events, the domestic peek.

>>> w.diagnostics()  # doctest: +SKIP
                     name customer_code roles
0  Demo College (sandbox)        DEMO01   SIS
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.api.frames import events_frame, frame
from workbench.errors import InvalidValue, PartnerError, WorkbenchError
from workbench.http.answers import answer_items
from workbench.http.session import Session
from workbench.spec import DIAGNOSTICS_PATH, PEEK_EVENTS_PATH, PENDING_PLACEMENT_EVENTS_PATH


def diagnostics(session: Session) -> pd.DataFrame:
    """Who the partner thinks we are: one row of name, customer_code, roles (and any extras)."""
    answer = session.call("international", "GET", DIAGNOSTICS_PATH, operation="diagnostics")
    items = answer_items(answer.value, operation="diagnostics")
    if len(items) != 1:  # a list of one is the object; none, or several, say nothing
        raise PartnerError(
            f"diagnostics: expected one JSON object (who we are), got {len(items)}.",
            status=200,
            body=str(answer.value)[:2000],
        )
    columns = ("name", "customer_code", "roles")
    return frame(items, columns=columns, operation="diagnostics", call_id=answer.call_id)


def pending_placement_events(session: Session) -> pd.DataFrame:
    """Pending placement events, flattened; ``raw`` keeps each event's JSON."""
    return _events(
        session, "international", PENDING_PLACEMENT_EVENTS_PATH, "pending_placement_events"
    )


def peek_events(session: Session, count: int | None = 10) -> pd.DataFrame:
    """Up to ``count`` events without removing them (``None``: the partner's default count)."""
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise InvalidValue(f"peek_events: count must be a positive integer, got {count!r}.")
    params = None if count is None else {"Count": count}
    return _events(session, "domestic", PEEK_EVENTS_PATH, "peek_events", params=params)


def _events(session: Session, role: str, path: str, operation: str, **kwargs: Any) -> pd.DataFrame:
    answer = session.call(role, "GET", path, operation=operation, **kwargs)
    paths = session.profile.event_fields
    return events_frame(answer.value, operation=operation, call_id=answer.call_id, paths=paths)


def peek_within_cap(
    session: Session, count: int, wanted: int, handed: list[Any]
) -> tuple[pd.DataFrame, int]:
    """Peek ``count`` events (``wanted``, or a cap learned): (frame, the count accepted).

    A 400 halves the count until accepted (1 refused: raised), then a full answer bisects up to
    the refused count; a full answer under ``wanted`` asks ``wanted`` once more. Every frame
    answered goes to ``handed``."""
    refusal: PartnerError | None = None
    refused = count
    while True:
        try:
            frame = peek_events(session, count)
            break
        except PartnerError as exc:
            if exc.status != 400 or count == 1:
                raise refusal or exc from None
            refusal, refused, count = refusal or exc, count, count // 2
    handed.append(frame)
    while refusal is not None and len(frame) == count and refused - count > 1:
        probe = (count + refused) // 2
        try:
            frame, count = peek_events(session, probe), probe
            handed.append(frame)
        except WorkbenchError as exc:
            if not (isinstance(exc, PartnerError) and exc.status == 400):
                break  # failed: what was handed out is kept, read at the count that held
            refused = probe
    if refusal is None and count < wanted and len(frame) == count:
        try:
            more = peek_events(session, wanted)
        except WorkbenchError:  # refused, or failed: the feed was read at the cap
            return frame, count
        handed.append(more)
        return more, wanted
    return frame, count
