"""workbench: partner data as DataFrames, a snapshot store, and reconciliation reports.

>>> import workbench as wb
>>> w = wb.connect()              # nothing configured: the embedded sandbox  # doctest: +SKIP
>>> w.supplier.pending_requests()  # doctest: +SKIP

Importing the package is cheap: ``connect``, ``Workbench`` (pandas, httpx, the store) and
``__version__`` load on first use (PEP 562), and so does any submodule named as an attribute
(``wb.pesc``), so that ``workbench --help`` starts fast.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from workbench.errors import (
    AuthError,
    ConfigError,
    DuplicateSend,
    InvalidValue,
    NotebookFailed,
    NotFound,
    PartnerError,
    PescError,
    StoreError,
    TransportError,
    UnreadableAnswer,
    WorkbenchError,
)

if TYPE_CHECKING:
    from workbench._version import __version__
    from workbench.client import Workbench, connect

__all__ = [
    "AuthError",
    "ConfigError",
    "DuplicateSend",
    "InvalidValue",
    "NotFound",
    "NotebookFailed",
    "PartnerError",
    "PescError",
    "StoreError",
    "TransportError",
    "UnreadableAnswer",
    "Workbench",
    "WorkbenchError",
    "__version__",
    "connect",
]

_LAZY = {
    "Workbench": "workbench.client",
    "connect": "workbench.client",
    "__version__": "workbench._version",
}


def __getattr__(name: str) -> Any:
    """Load a lazy public name, or a submodule named as an attribute, on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
