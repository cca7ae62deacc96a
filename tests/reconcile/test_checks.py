"""Cross-checks: every check, from a crafted store, with exactly the rows it should fail."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import pytest

from tests.reconcile.builders import NOW, Partner, ack_flat, request_flat, transcript_flat
from workbench import reconcile

COLUMNS = ["check", "side", "id", "subject", "field", "expected", "found"]
GUID_R, GUID_WRONG = "6f1c2a3e-0000-4000-8000-000000000001", "6f1c2a3e-0000-4000-8000-000000000002"
GUID_T, GUID_T2 = "6f1c2a3e-0000-4000-8000-000000000003", "6f1c2a3e-0000-4000-8000-000000000004"


@pytest.fixture(scope="module")
def checks(module_partner: Callable[[], Partner]) -> pd.DataFrame:
    p = module_partner()
    # the partner's documents under their API ids: never compared (either id scheme)
    p.request("R-TRK", flat=request_flat("R-TRK", request_tracking_id="C20150729002337"))
    p.request("R-NOTRK", flat=request_flat("R-NOTRK", request_tracking_id=None))
    p.transcript("T-TRK", flat=transcript_flat("T-TRK", request_tracking_id="T-OTHER"))
    p.transcript("T-UNSOLICITED", flat=transcript_flat("T-UNSOLICITED", request_tracking_id=None))
    # GUID-keyed items (the spec's scheme): ours agree with their documents, or contradict them
    p.request(GUID_R, flat=request_flat(GUID_R, request_tracking_id="C2026030200001"))
    p.respond(GUID_R, tracking="C2026030200001")
    p.send_transcript(GUID_R, request_tracking_id="C2026030200001",
                      ack_changes={"request_tracking_id": "C2026030200001"})  # fmt: skip
    p.request(GUID_WRONG, flat=request_flat(GUID_WRONG, request_tracking_id="C2026030200002"))
    p.respond(GUID_WRONG, tracking=GUID_WRONG)  # the API id is no tracking id
    p.transcript(GUID_T, flat=transcript_flat(GUID_T, request_tracking_id="C2026030200003"))
    p.acknowledge(GUID_T, tracking="C2026030200003")
    p.transcript(GUID_T2, flat=transcript_flat(GUID_T2, request_tracking_id="C2026030200004"))
    p.acknowledge(GUID_T2, tracking="C2026030200003")  # built from another transcript
    # tracking ids of our documents, and of the partner's acknowledgment of one
    p.request("R-OURS")
    wrong = {"request_tracking_id": "R-SOMEONE", "response_status": "Hold"}
    p.store.outbox.begin("send_response", "R-OURS", "<TranscriptResponse/>", flat=wrong)
    p.request("R-ECHO")
    entry = p.store.outbox.begin("send_transcript", "R-ECHO", "<CollegeTranscript/>",
                                 flat=transcript_flat("R-ECHO"))  # fmt: skip
    reply = ack_flat("R-ECHO", awards=2, courses=12, request_tracking_id="R-ECHO-2",
                     document_id="ct-somebody-else")  # fmt: skip
    p.store.outbox.mark_sent(entry, status=200, response_body="{}", reply_flat=reply)
    # the student of the transcript we sent against the request's
    p.request("R-WHO")
    p.send_transcript("R-WHO", student_last_name="Tremblay-Roy", student_oen="000000000",
                      student_birth_date="1999-04-15T00:00:00")  # fmt: skip
    p.request("R-SAME")  # only case, spacing and id formatting differ: the same student
    p.send_transcript("R-SAME", student_last_name="  TREMBLAY ", student_first_name="emma",
                      student_oen="123-456-789", student_birth_date="1999-04-14T00:00:00",
                      student_ocas_account=None)  # fmt: skip
    p.request("R-LONE", flat=request_flat("R-LONE", student_oen=None))  # nothing to compare
    p.send_transcript("R-LONE", student_oen="555555555")
    # SLA: a request and a transcript waiting too long, and two not yet
    p.request("R-LATE", days=8)
    p.request("R-SOON", days=4)
    p.transcript("T-LATE", days=6)
    p.transcript("T-SOON", days=4.5)
    # acknowledgment totals, theirs and ours
    p.request("R-TOTALS")
    p.send_transcript("R-TOTALS", awards=2, courses=12, ack=(2, 11))
    p.transcript("T-TOTALS", flat=transcript_flat("T-TOTALS", awards=1, courses=12))
    p.acknowledge("T-TOTALS", awards=1, courses=10)
    p.list_requests("R-TRK", "R-NOTRK", "R-LATE", "R-SOON")
    p.list_transcripts("T-TRK", "T-UNSOLICITED", "T-LATE", "T-SOON")
    return reconcile.reconcile(reconcile.load(p.store), now=NOW, sla_days=5).checks


def test_every_cross_check_with_its_rows(checks: pd.DataFrame) -> None:
    rows = sorted(tuple(None if pd.isna(v) else v for v in row) for row in
                  checks[COLUMNS].itertuples(index=False))  # fmt: skip
    assert rows == sorted(
        [
            ("tracking_id", "supplier", GUID_WRONG, "response sent", "request_tracking_id",
             "C2026030200002", GUID_WRONG),
            ("tracking_id", "consumer", GUID_T2, "acknowledgment sent", "request_tracking_id",
             "C2026030200004", "C2026030200003"),
            ("tracking_id", "supplier", "R-OURS", "response sent", "request_tracking_id",
             "R-OURS", "R-SOMEONE"),
            ("tracking_id", "supplier", "R-ECHO", "acknowledgment received",
             "request_tracking_id", "R-ECHO", "R-ECHO-2"),
            ("tracking_id", "supplier", "R-ECHO", "acknowledgment received", "document_id",
             "ct-R-ECHO", "ct-somebody-else"),
            ("student_identity", "supplier", "R-WHO", "transcript sent", "student_last_name",
             "Tremblay", "Tremblay-Roy"),
            ("student_identity", "supplier", "R-WHO", "transcript sent", "student_birth_date",
             "1999-04-14", "1999-04-15T00:00:00"),
            ("student_identity", "supplier", "R-WHO", "transcript sent", "student_oen",
             "123456789", "000000000"),
            ("sla", "supplier", "R-LATE", "request", "age_days", "<= 5", "8"),
            ("sla", "consumer", "T-LATE", "transcript received", "age_days", "<= 5", "6"),
            ("ack_totals", "supplier", "R-TOTALS", "acknowledgment received", "course_total",
             "12", "11"),
            ("ack_totals", "consumer", "T-TOTALS", "acknowledgment sent", "course_total",
             "12", "10"),
        ]
    )  # fmt: skip


def test_checks_are_ordered_and_typed(checks: pd.DataFrame) -> None:
    assert list(checks.columns) == list(reconcile.CHECK_COLUMNS)
    order = [reconcile.CHECKS.index(c) for c in checks["check"]]
    assert order == sorted(order)
    assert checks["id"].dtype == "string"
    ours = checks[checks["subject"] == "acknowledgment sent"]
    assert ours["outbox_id"].notna().all()


def test_a_clean_store_fails_no_check(partner: Partner) -> None:
    partner.request("R1")
    partner.send_transcript("R1")
    partner.transcript("T1")
    partner.acknowledge("T1")
    assert reconcile.reconcile(reconcile.load(partner.store), now=NOW).checks.empty


def test_sla_is_a_parameter(partner: Partner) -> None:
    partner.request("R-LATE", days=8)
    partner.list_requests("R-LATE")
    tables = reconcile.load(partner.store)
    assert len(reconcile.reconcile(tables, now=NOW, sla_days=5).checks) == 1
    assert reconcile.reconcile(tables, now=NOW, sla_days=10).checks.empty
