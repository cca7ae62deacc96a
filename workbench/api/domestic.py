"""Domestic on-demand interface (spec §4.3): peek at events.

>>> w.peek_events(count=5)  # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd

from workbench.api.frames import events_frame
from workbench.errors import InvalidValue
from workbench.http.session import Session
from workbench.spec import PEEK_EVENTS_PATH

ROLE = "domestic"


def peek_events(session: Session, count: int | None = 10) -> pd.DataFrame:
    """Up to ``count`` events without removing them (``None``: the partner's default count)."""
    operation = "peek_events"
    params = None
    if count is not None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidValue(f"{operation}: count must be a positive integer, got {count!r}.")
        params = {"Count": count}
    answer = session.call(ROLE, "GET", PEEK_EVENTS_PATH, operation=operation, params=params)
    return events_frame(
        answer.value,
        operation=operation,
        call_id=answer.call_id,
        paths=session.profile.event_fields,
    )
