"""The public face of ``workbench.reconcile``: a sorted ``__all__`` naming what it exports."""

from __future__ import annotations

from workbench import reconcile


def _isort_key(name: str) -> tuple[int, str]:
    """Constants, then classes, then functions (the order ruff's RUF022 keeps)."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted_and_complete() -> None:
    assert reconcile.__all__ == sorted(reconcile.__all__, key=_isort_key)
    for name in reconcile.__all__:
        assert hasattr(reconcile, name), name
    contract = {"load", "reconcile", "Reconciliation", "exceptions"}
    assert contract <= set(reconcile.__all__)


def test_every_exception_kind_has_a_known_severity() -> None:
    for kind, (severity, why) in reconcile.EXCEPTION_KINDS.items():
        assert severity in reconcile.SEVERITIES, kind
        assert why
