"""The grace window: an item is overdue only once it has waited longer than the SLA plus
``grace_hours`` (to the second), so what arrived minutes ago (with a short SLA) is not called
late. Without grace, the age as shown (to 0.1 day) decides, as the cards say it."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner
from workbench import reconcile

SLA_DAYS = 2.0
MINUTE = 1 / (24 * 60)


def waiting(partner: Partner, grace_hours: float) -> None:
    """A request and a transcript received, each just under and just over SLA + grace."""
    edge = SLA_DAYS + grace_hours / 24
    ages = {"under": edge - MINUTE, "over": edge + MINUTE}
    for name, days in ages.items():
        partner.request(f"R-{name}", days=days)
        partner.transcript(f"T-{name}", days=days)
    partner.list_requests(*(f"R-{n}" for n in ages))
    partner.list_transcripts(*(f"T-{n}" for n in ages))


def reconciled(partner: Partner, **grace: float) -> reconcile.Reconciliation:
    return reconcile.reconcile(
        reconcile.load(partner.store), now=pd.Timestamp(NOW), sla_days=SLA_DAYS, **grace
    )


def overdue(rec: reconcile.Reconciliation) -> dict[str, set[str]]:
    """Ids flagged over the SLA, and ids with an overdue exception, per side."""
    ex = rec.exceptions
    return {
        "requests": set(rec.requests.loc[rec.requests["sla_breached"], "request_id"]),
        "transcripts": set(rec.transcripts.loc[rec.transcripts["sla_breached"], "transcript_id"]),
        "response_overdue": set(ex.loc[ex["kind"] == "response_overdue", "id"]),
        "ack_overdue": set(ex.loc[ex["kind"] == "ack_overdue", "id"]),
    }


@pytest.mark.parametrize("grace_hours", [2.0, 3.5, 36.0])
def test_overdue_starts_one_minute_past_the_sla_plus_the_grace(
    partner: Partner, grace_hours: float
) -> None:
    waiting(partner, grace_hours)
    rec = reconciled(partner, grace_hours=grace_hours)
    assert overdue(rec) == {
        "requests": {"R-over"},
        "transcripts": {"T-over"},
        "response_overdue": {"R-over"},
        "ack_overdue": {"T-over"},
    }
    assert rec.headline["open_over_sla"] == 1 and rec.headline["awaiting_ack_over_sla"] == 1
    assert rec.grace_hours == grace_hours


def test_without_the_grace_both_are_overdue(partner: Partner) -> None:
    waiting(partner, 2.0)
    found = overdue(reconciled(partner))  # grace_hours defaults to 0
    assert found["requests"] == {"R-under", "R-over"}
    assert found["ack_overdue"] == {"T-under", "T-over"}


def test_without_grace_the_age_as_shown_decides(partner: Partner) -> None:
    """Ages show to 0.1 day: 2.0 days is not over an SLA of 2, 2.1 is."""
    for name, days in {"R-at": SLA_DAYS + 2 * MINUTE, "R-past": SLA_DAYS + 0.1}.items():
        partner.request(name, days=days)
    partner.list_requests("R-at", "R-past")
    rec = reconciled(partner)
    ages = dict(zip(rec.requests["request_id"], rec.requests["age_days"], strict=True))
    assert ages == {"R-at": 2.0, "R-past": 2.1}
    assert overdue(rec)["requests"] == overdue(rec)["response_overdue"] == {"R-past"}


def test_an_item_that_arrived_hours_ago_is_not_overdue_with_a_zero_sla_and_grace(
    partner: Partner,
) -> None:
    partner.request("R-new", days=3 / 24)
    partner.list_requests("R-new")
    loaded = reconcile.load(partner.store)
    strict = reconcile.reconcile(loaded, now=pd.Timestamp(NOW), sla_days=0)
    graced = reconcile.reconcile(loaded, now=pd.Timestamp(NOW), sla_days=0, grace_hours=4)
    assert strict.headline["open_over_sla"] == 1
    assert graced.headline["open_over_sla"] == 0
    assert "response_overdue" not in set(graced.exceptions["kind"])


@pytest.mark.parametrize("grace_hours", [math.nan, math.inf, -1, -0.5])
def test_a_grace_that_is_not_finite_or_is_negative_is_refused(grace_hours: float) -> None:
    with pytest.raises(ValueError, match="grace_hours must be a finite number of hours"):
        reconcile.reconcile(
            reconcile.empty_tables(), now=pd.Timestamp(NOW), sla_days=5, grace_hours=grace_hours
        )
