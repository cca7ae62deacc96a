"""``sla_days`` must be a finite number of days, 0 or more: NaN would hide every overdue item,
infinity would fail later, deep in the age buckets."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench import reconcile

NOW = pd.Timestamp("2026-03-10T09:00Z")


@pytest.mark.parametrize("sla_days", [math.nan, math.inf, -math.inf, -3, -0.5])
def test_sla_days_that_are_not_finite_or_are_negative_are_refused(sla_days):
    with pytest.raises(ValueError, match="sla_days must be a finite number of days, 0 or more"):
        reconcile.reconcile(reconcile.empty_tables(), now=NOW, sla_days=sla_days)


@pytest.mark.parametrize("sla_days", [0, 0.5, 5, 365])
def test_finite_sla_days_of_0_or_more_are_accepted(sla_days):
    rec = reconcile.reconcile(reconcile.empty_tables(), now=NOW, sla_days=sla_days)
    assert rec.sla_days == sla_days and rec.headline["open_requests"] == 0
