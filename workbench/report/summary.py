"""The machine-readable summary a report notebook publishes, for whoever runs it.

``publish_summary(rec, freshness=fresh)`` displays one output whose MIME bundle holds
:data:`SUMMARY_MIME` (plus a short ``text/plain``). The payload (:data:`SUMMARY_FIELDS`,
version :data:`SUMMARY_VERSION`)::

    {
      "version": 2,
      "as_of": "2026-03-02T09:00:00+00:00",     # the reconciliation's moment, ISO 8601 UTC
      "sla_days": 5.0,
      "severities": ["low", "medium", "high", "critical"],   # mildest first
      "exceptions": 12,
      "exceptions_by_severity": {"critical": 0, "high": 2, "medium": 9, "low": 1},  # all four
      "headline": {...},                        # rec.headline, JSON-safe (times as ISO text)
      "freshness": {...}                        # Freshness.to_json() of the report's first
    }                                           # section, or null when it was not given

``publish_bundle(path)`` publishes a support bundle's path the same way, as ``{"bundle": path}``.
``find_summary(notebook)`` reads them back from an executed notebook, merged (on a key published
twice, the last one wins): how ``workbench report --fail-on-exceptions`` decides its exit code,
how ``workbench troubleshoot`` learns where its bundle is, and how ``--max-age`` learns how
old the data was without reading the store again (``Freshness.from_json``). Reading one back
needs no pandas: the process that runs a report job loads none.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from workbench.severities import SEVERITIES

if TYPE_CHECKING:
    from workbench.reconcile import Reconciliation
    from workbench.report.staleness import Freshness

SUMMARY_MIME = "application/vnd.workbench.summary+json"
SUMMARY_VERSION = 2
SUMMARY_FIELDS = (
    "version",
    "as_of",
    "sla_days",
    "severities",
    "exceptions",
    "exceptions_by_severity",
    "headline",
    "freshness",
)


def json_safe(value: Any) -> Any:
    """``value`` with only JSON types: times as ISO text, numpy/pandas scalars as Python ones,
    missing values as None."""
    import numpy as np  # the kernel's, which has them loaded: not the job's process
    import pandas as pd

    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | np.ndarray | pd.Series):
        return [json_safe(v) for v in value]
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp | datetime | date):
        return value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


def summary_payload(rec: Reconciliation, *, freshness: Freshness | None = None) -> dict[str, Any]:
    """The payload ``publish_summary`` displays (see the module docstring)."""
    found = rec.headline.get("exceptions_by_severity", {})
    by_severity = {s: int(found.get(s, 0)) for s in reversed(SEVERITIES)}
    return {
        "version": SUMMARY_VERSION,
        "as_of": rec.now.isoformat(),
        "sla_days": float(rec.sla_days),
        "severities": list(SEVERITIES),
        "exceptions": int(sum(by_severity.values())),
        "exceptions_by_severity": by_severity,
        "headline": json_safe(rec.headline),
        "freshness": None if freshness is None else freshness.to_json(),
    }


def publish_summary(rec: Reconciliation, *, freshness: Freshness | None = None) -> None:
    """Display the summary as its own output (``SUMMARY_MIME``, a one-line text for consoles,
    and nothing visible in HTML: the headline already shows the counts). ``freshness``: the
    report's, for ``--max-age`` (else the job reads the store for it).

    >>> publish_summary(rec)  # doctest: +SKIP
    Summary as of 2026-03-02 09:00 UTC: 12 exceptions (critical 0, high 2, medium 9, low 1)
    """
    from IPython.display import display

    payload = summary_payload(rec, freshness=freshness)
    counts = ", ".join(f"{k} {v}" for k, v in payload["exceptions_by_severity"].items())
    line = (
        f"Summary as of {rec.now:%Y-%m-%d %H:%M} UTC: {payload['exceptions']} exceptions ({counts})"
    )
    # An HTML comment for pages: the headline shows these counts; text for consoles.
    html = "<!-- workbench summary: what workbench report reads for its exit code -->"
    display({SUMMARY_MIME: payload, "text/html": html, "text/plain": line}, raw=True)


def publish_bundle(path: str | os.PathLike[str]) -> None:
    """Print ``Support bundle: <path>`` and publish the path as the summary's ``bundle``."""
    from IPython.display import display

    print(f"Support bundle: {path}")
    display({SUMMARY_MIME: {"bundle": os.fspath(path)}, "text/plain": ""}, raw=True)


def find_summary(notebook: Any) -> dict[str, Any] | None:
    """The summary published in an executed notebook (a path or an ``nbformat`` node), or None.

    >>> find_summary("data/reports/reconcile-20260302T090000Z.ipynb")  # doctest: +SKIP
    {'version': 1, 'as_of': '2026-03-02T09:00:00+00:00', ...}
    """
    if isinstance(notebook, str | os.PathLike):
        with open(notebook, encoding="utf-8") as handle:
            notebook = json.load(handle)
    found = None
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            published = _object(data.get(SUMMARY_MIME))
            if published is not None:
                found = {**(found or {}), **published}
    return found


def _object(value: Any) -> dict[str, Any] | None:
    """A published value as a dict (text is parsed as JSON); None when it is no JSON object
    (a notebook of one's own may display anything under the summary's MIME type)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return dict(value) if isinstance(value, Mapping) else None
