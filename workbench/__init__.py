"""workbench: partner data as DataFrames, a snapshot store, and reconciliation reports."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from workbench.errors import (
    AuthError,
    ConfigError,
    InvalidValue,
    NotFound,
    PartnerError,
    PescError,
    StoreError,
    TransportError,
    WorkbenchError,
)

try:
    __version__ = version("workbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "AuthError",
    "ConfigError",
    "InvalidValue",
    "NotFound",
    "PartnerError",
    "PescError",
    "StoreError",
    "TransportError",
    "WorkbenchError",
    "__version__",
]
