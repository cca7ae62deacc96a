"""How severe an exception is: the four levels, mildest first.

Here, apart from :mod:`workbench.reconcile` (which re-exports it), so that a report job can
check ``--severity`` and read a summary without loading pandas.
"""

from __future__ import annotations

SEVERITIES = ("low", "medium", "high", "critical")
