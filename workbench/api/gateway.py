"""The gateway's interfaces (spec §4.2, §4.3): international diagnostics and pending placement
events, the domestic peek.

>>> w.diagnostics()  # doctest: +SKIP
                     name customer_code roles
0  Demo College (sandbox)        DEMO01   SIS
"""

from __future__ import annotations

import pandas as pd

from workbench.api.frames import events_frame, frame
from workbench.errors import InvalidValue, PartnerError
from workbench.http.session import Session
from workbench.spec import DIAGNOSTICS_PATH, PEEK_EVENTS_PATH, PENDING_PLACEMENT_EVENTS_PATH


def diagnostics(session: Session) -> pd.DataFrame:
    """Who the partner thinks we are: one row of name, customer_code, roles (and any extras)."""
    answer = session.call("international", "GET", DIAGNOSTICS_PATH, operation="diagnostics")
    if not isinstance(answer.value, dict):
        raise PartnerError(
            f"diagnostics: expected a JSON object, got {type(answer.value).__name__}.",
            status=200,
            body=str(answer.value)[:2000],
        )
    columns = ("name", "customer_code", "roles")
    return frame([answer.value], columns=columns, operation="diagnostics", call_id=answer.call_id)


def pending_placement_events(session: Session) -> pd.DataFrame:
    """Pending placement events, flattened; ``raw`` keeps each event's JSON."""
    operation = "pending_placement_events"
    path = PENDING_PLACEMENT_EVENTS_PATH
    answer = session.call("international", "GET", path, operation=operation)
    paths = session.profile.event_fields
    return events_frame(answer.value, operation=operation, call_id=answer.call_id, paths=paths)


def peek_events(session: Session, count: int | None = 10) -> pd.DataFrame:
    """Up to ``count`` events without removing them (``None``: the partner's default count)."""
    operation = "peek_events"
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise InvalidValue(f"{operation}: count must be a positive integer, got {count!r}.")
    params = None if count is None else {"Count": count}
    answer = session.call("domestic", "GET", PEEK_EVENTS_PATH, operation=operation, params=params)
    paths = session.profile.event_fields
    return events_frame(answer.value, operation=operation, call_id=answer.call_id, paths=paths)
