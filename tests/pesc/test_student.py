"""The one rule a transcript's student is compared by with the request's."""

from __future__ import annotations

from workbench.pesc.student import IDENTITY, differing_fields
from workbench.reconcile.inputs import IDENTITY as RECONCILED

REQUEST = {
    "student_first_name": "Émile  Jean",
    "student_last_name": "Tremblay-Roy",
    "student_birth_date": "1999-04-14",
    "student_oen": "123-456-789",
    "student_ocas_account": None,
}


def test_case_spacing_dashes_and_time_of_day_do_not_differ() -> None:
    sent = {
        "student_first_name": " ÉMILE jean ",
        "student_last_name": "tremblay-roy",
        "student_birth_date": "1999-04-14T00:00:00",
        "student_oen": "123 456789",
        "student_ocas_account": "A1",  # absent from the request: not compared
        "student_school_assigned_id": "",
    }
    assert differing_fields(REQUEST, sent) == ()


def test_each_differing_field_is_named_in_identity_order() -> None:
    sent = {
        "student_oen": "123456780",
        "student_birth_date": "1999-04-15",
        "student_last_name": "Roy",
    }
    assert differing_fields(REQUEST, sent) == (
        "student_last_name",
        "student_birth_date",
        "student_oen",
    )
    assert differing_fields({}, sent) == ()


def test_reconciliation_compares_the_same_fields() -> None:
    assert RECONCILED == IDENTITY
