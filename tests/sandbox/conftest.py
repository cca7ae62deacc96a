"""Fixtures of the sandbox tests."""

from __future__ import annotations

import pytest
from lxml import etree

from tests.sandbox.schemas import XSD_DIR, compile_schemas


@pytest.fixture(scope="session")
def schemas() -> dict[str, etree.XMLSchema]:
    if not XSD_DIR.is_dir():
        pytest.skip(f"PESC schemas not found at {XSD_DIR} (shared/pesc/xsd is absent)")
    return compile_schemas()
