"""The client against every answer to an open point of DESIGN §3 alone: doctor, pulls, the three
sends and the reports (:func:`live_a_day`). A module of its own: xdist gives each module to one
worker, and this one and the unknown partners' are among the longest."""

from __future__ import annotations

import pytest

from tests.partners.conftest import DATA, live_a_day
from tests.sandbox.helpers import open_points


@pytest.mark.parametrize(
    ("name", "value"), open_points(), ids=[f"{name}={value}" for name, value in open_points()]
)
def test_each_open_point_alone(sandbox_factory, tmp_path, name, value):
    live_a_day(sandbox_factory(**DATA, **{name: value}), tmp_path / "wb.db")
