"""One definition of ageing: the headline's buckets end at the SLA, as the report's do; ages
in exception texts show one decimal, and their dates say UTC."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.reconcile.builders import NOW
from workbench import reconcile


def _ago(days: float) -> pd.Timestamp:
    return pd.Timestamp(NOW) - pd.Timedelta(days=days)


@pytest.mark.parametrize("sla", [0, 5, 7, 4.5])
def test_the_headline_buckets_end_at_the_sla(sla: float) -> None:
    tables = reconcile.empty_tables()
    ages = [-0.3, 0, 1.9, 2, 4.4, 4.5, 4.6, 5, 6.9, 7, 7.1, 10, 10.1, 30]
    tables["requests"] = pd.DataFrame(
        {"request_id": [f"R{i}" for i in range(len(ages))], "on_list": True,
         "request_date": [_ago(a) for a in ages]}
    )  # fmt: skip
    tables["transcripts"] = pd.DataFrame(
        {"transcript_id": ["T1", "T2"], "on_list": True, "request_date": [_ago(1), _ago(9)]}
    )
    rec = reconcile.reconcile(tables, now=NOW, sla_days=sla)
    h = rec.headline
    labels = list(reconcile.age_labels(sla))
    assert list(h["open_by_age"]) == list(h["awaiting_ack_by_age"]) == labels
    # at the SLA is within it: the buckets after the one ending at the SLA are those over it
    within = next(i for i, b in enumerate(labels) if b.split("-")[-1] == f"{sla:g}")
    over = sum(h["open_by_age"][b] for b in labels[within + 1 :])
    assert over == h["open_over_sla"] == sum(a > sla for a in ages)
    assert sum(h["open_by_age"].values()) == h["open_requests"] == len(ages)
    assert rec.requests["age_bucket"].astype(str).tolist() == (
        reconcile.age_buckets(rec.requests["age_days"], sla).astype(str).tolist()
    )


def test_exception_texts_show_days_with_one_decimal_and_dates_in_utc() -> None:
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame(
        {"request_id": ["R-HOLD", "R-GONE"], "on_list": [True, False],
         "left_reason": [None, "elsewhere"], "left_at": [None, _ago(1)],
         "request_date": [_ago(3), _ago(3)]}
    )  # fmt: skip
    tables["outbox"] = pd.DataFrame(
        {"outbox_id": [1], "operation": ["send_response"], "request_id": ["R-HOLD"],
         "state": ["sent"], "created_at": [_ago(3)]}
    )  # fmt: skip
    tables["responses"] = pd.DataFrame(
        {"outbox_id": [1], "request_id": ["R-HOLD"], "sent_at": [_ago(3)],
         "response_status": ["Hold"], "planned_release_date": ["2026-03-08"]}
    )  # fmt: skip
    detail = reconcile.reconcile(tables, now=NOW).exceptions.set_index("id")["detail"]
    # planned release 2026-03-08 (midnight UTC), NOW 2026-03-10 09:00 UTC: 2.4 days ago
    assert "planned release 2026-03-08, 2.4 days ago" in detail["R-HOLD"]
    assert "Left the partner's list at 2026-03-09 09:00 UTC with no send" in detail["R-GONE"]
