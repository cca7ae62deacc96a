"""The four severities of an exception, mildest first; apart from :mod:`workbench.reconcile`
(which re-exports them) so that a report job checks ``--severity`` without loading pandas."""

from __future__ import annotations

SEVERITIES = ("low", "medium", "high", "critical")
