"""International placement interface (spec §4.2): diagnostics and pending placement events.

>>> w.diagnostics()  # doctest: +SKIP
                     name customer_code roles
0  Demo College (sandbox)        DEMO01   SIS
"""

from __future__ import annotations

import pandas as pd

from workbench.api.frames import events_frame, frame
from workbench.errors import PartnerError
from workbench.http.session import Session
from workbench.spec import DIAGNOSTICS_PATH, PENDING_PLACEMENT_EVENTS_PATH

ROLE = "international"
DIAGNOSTICS_COLUMNS = ("name", "customer_code", "roles")


def diagnostics(session: Session) -> pd.DataFrame:
    """Who the partner thinks we are: one row of name, customer_code, roles (and any extras)."""
    operation = "diagnostics"
    answer = session.call(ROLE, "GET", DIAGNOSTICS_PATH, operation=operation)
    payload = answer.value
    if not isinstance(payload, dict):
        raise PartnerError(
            f"{operation}: expected a JSON object, got {type(payload).__name__}.",
            status=200,
            body=str(payload)[:2000],
        )
    return frame(
        [payload], columns=DIAGNOSTICS_COLUMNS, operation=operation, call_id=answer.call_id
    )


def pending_placement_events(session: Session) -> pd.DataFrame:
    """Pending placement events, flattened; ``raw`` keeps each event's JSON."""
    operation = "pending_placement_events"
    answer = session.call(ROLE, "GET", PENDING_PLACEMENT_EVENTS_PATH, operation=operation)
    return events_frame(
        answer.value,
        operation=operation,
        call_id=answer.call_id,
        paths=session.profile.event_fields,
    )
