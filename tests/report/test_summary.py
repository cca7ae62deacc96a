"""The summary a report publishes for its runner: its shape, and reading it back."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from workbench import reconcile
from workbench.report import (
    SUMMARY_FIELDS,
    SUMMARY_MIME,
    SUMMARY_VERSION,
    find_summary,
    summary_payload,
)
from workbench.report.summary import json_safe


def test_the_payload_has_its_documented_shape(crafted: reconcile.Reconciliation) -> None:
    payload = summary_payload(crafted)
    assert tuple(payload) == SUMMARY_FIELDS
    assert payload["version"] == SUMMARY_VERSION
    assert payload["as_of"] == "2026-03-10T09:00:00+00:00"
    assert payload["sla_days"] == 5.0
    assert payload["severities"] == ["low", "medium", "high", "critical"]
    assert payload["exceptions_by_severity"] == {"critical": 1, "high": 1, "medium": 1, "low": 1}
    assert payload["exceptions"] == 4
    assert payload["headline"]["now"] == "2026-03-10T09:00:00+00:00"
    assert payload["headline"]["open_by_age"] == crafted.headline["open_by_age"]
    assert payload["freshness"] is None  # publish_summary(rec, freshness=...) sets it
    # strict JSON: no NaN, no Timestamp, and it survives a round trip
    assert json.loads(json.dumps(payload, allow_nan=False)) == payload


def test_every_severity_is_present_even_at_zero(empty_rec: reconcile.Reconciliation) -> None:
    payload = summary_payload(empty_rec)
    assert payload["exceptions_by_severity"] == {"critical": 0, "high": 0, "medium": 0, "low": 0}
    assert payload["exceptions"] == 0


def test_json_safe_turns_scalars_into_json_types() -> None:
    import numpy as np
    import pandas as pd

    value = {"a": np.int64(3), "b": pd.Timestamp("2026-03-10T09:00Z"), "c": [np.float64("nan")],
             "d": pd.NA, 4: ("x",)}  # fmt: skip
    assert json_safe(value) == {
        "a": 3, "b": "2026-03-10T09:00:00+00:00", "c": [None], "d": None, "4": ["x"]}  # fmt: skip


def _notebook(*payloads: object) -> nbformat.NotebookNode:
    cells = [new_code_cell("1 + 1", outputs=[new_output("execute_result", {"text/plain": "2"},
                                                         execution_count=1)])]  # fmt: skip
    for payload in payloads:
        output = new_output("display_data", {SUMMARY_MIME: payload, "text/plain": "summary"})
        cells.append(new_code_cell("report.publish_summary(rec)", outputs=[output]))
    return new_notebook(cells=cells)


def test_find_summary_reads_the_last_one(tmp_path: Path) -> None:
    nb = _notebook({"exceptions": 1}, {"exceptions": 2})
    assert find_summary(nb) == {"exceptions": 2}
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    assert find_summary(path) == {"exceptions": 2}
    assert find_summary(str(path)) == {"exceptions": 2}


def test_no_summary_is_none() -> None:
    assert find_summary(_notebook()) is None


def test_a_published_value_that_is_no_json_object_is_left_out() -> None:
    """A notebook of one's own displaying the summary's MIME type with a list, a number or
    text that is not JSON: never a traceback; the objects published around it still count."""
    nb = _notebook({"exceptions": 1}, [1, 2], "not json", "[1]", 5, {"version": 2})
    assert find_summary(nb) == {"exceptions": 1, "version": 2}
    assert find_summary(_notebook([1], "null")) is None
