"""The one rule a transcript's student is compared by with the request's."""

from __future__ import annotations

import unicodedata
from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench.pesc.fields import IDENTITY, comparable, differing_fields
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


@pytest.mark.parametrize(
    ("field", "ours", "theirs"),
    [
        (
            "student_first_name",
            unicodedata.normalize("NFC", "Zoë"),
            unicodedata.normalize("NFD", "Zoë"),
        ),
        ("student_last_name", "Tremblay\u200b", "Tremblay"),  # a zero-width space
        ("student_last_name", "Jean\u00a0Roy", "Jean Roy"),  # a non-breaking space
        ("student_last_name", "O\u2019Brien", "O'Brien"),
        ("student_last_name", "O'Brien", "OBrien"),
        ("student_last_name", "Smith-Jones", "Smith Jones"),
        ("student_last_name", "Lévesque", "LEVESQUE"),  # a system that drops accents
        ("student_first_name", "İsmail", "ISMAIL"),
        ("student_first_name", "ısmail", "ISMAIL"),  # the Turkish dotless i
        ("student_oen", "１２３４５６７８９", "123456789"),  # full-width digits
        ("student_oen", "123\u00a0456\u2011789", "123456789"),  # a non-breaking hyphen
        ("student_oen", 123456789, "123456789"),
        ("student_oen", 123456789.0, "123-456-789"),  # an id read as a number
        ("student_birth_date", "1999-04-14T00:00:00-05:00", "1999-04-14"),
        ("student_birth_date", "１９９９-04-14\u200b", "1999-04-14"),
        ("student_birth_date", pd.Timestamp("1999-04-14"), "1999-04-14"),
    ],
)
def test_spelling_noise_is_the_same_student(field: str, ours: Any, theirs: Any) -> None:
    assert differing_fields({field: ours}, {field: theirs}) == ()
    assert differing_fields({field: theirs}, {field: ours}) == ()


@pytest.mark.parametrize(
    ("field", "ours", "theirs"),
    [
        ("student_first_name", "Zoë", "Chloë"),
        ("student_last_name", "Tremblay", "Tremblay-Roy"),
        ("student_oen", "１２３４５６７８９", "123456780"),
        ("student_birth_date", "1999-04-14", "1999-04-15T00:00:00"),
    ],
)
def test_a_letter_or_digit_that_differs_differs(field: str, ours: Any, theirs: Any) -> None:
    assert differing_fields({field: ours}, {field: theirs}) == (field,)


@pytest.mark.parametrize(
    "missing",
    [None, "", " \u200b ", pd.NA, pd.NaT, np.nan, np.float32("nan"), np.datetime64("NaT")],
)
@pytest.mark.parametrize("field", ["student_last_name", "student_birth_date", "student_oen"])
def test_a_missing_value_is_not_compared(field: str, missing: Any) -> None:
    assert comparable(missing, field) is None
    assert differing_fields({field: missing, "student_first_name": None},
                            {field: "1999-04-14", "student_first_name": "Emma"}) == ()  # fmt: skip
