"""``workbench.spec`` says what ``shared/spec/partner-interfaces.md`` says: the client and every
test partner import it, so a constant that drifted from the spec would pass every other test."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench import spec

SPEC = Path(__file__).resolve().parents[1].parent / "shared" / "spec" / "partner-interfaces.md"


@pytest.fixture(scope="module")
def text() -> str:
    if not SPEC.is_file():
        pytest.skip(f"the partner spec is not at {SPEC}")
    return SPEC.read_text(encoding="utf-8")


def _paths(text: str) -> set[str]:
    """Every method-and-path the spec's endpoint tables name, ``:id`` written ``{id}``."""
    found = re.findall(r"`(?:GET|POST) (?:\{(?:base_url|auth_url)\})?(/[^`]*)`", text)
    found += re.findall(r"\| (?:GET|POST) \| `(?:\{base_url\})?(/[^`]*)`", text)
    return {p.replace(":id", "{id}") for p in found}


def test_every_path_constant_is_a_path_of_the_spec(text: str) -> None:
    paths = _paths(text)
    assert len(paths) >= 10, paths
    for name in (
        "TOKEN_PATH", "DIAGNOSTICS_PATH", "PENDING_PLACEMENT_EVENTS_PATH", "PEEK_EVENTS_PATH",
        "SUPPLIER_PENDING_PATH", "SUPPLIER_REQUEST_PATH", "SUPPLIER_RESPONSES_PATH",
        "SUPPLIER_TRANSCRIPTS_PATH", "CONSUMER_PENDING_PATH", "CONSUMER_TRANSCRIPT_PATH",
        "CONSUMER_ACKNOWLEDGMENT_PATH",
    ):  # fmt: skip
        assert getattr(spec, name) in paths, name
    # The plural send routes are the spec's; the singular ones are OCAS' clients' (DESIGN §3).
    assert set(spec.SEND_ROUTES["plural"].values()) <= paths
    assert not set(spec.SEND_ROUTES["singular"].values()) & paths


def test_every_message_scope_and_name_is_the_spec_s_to_the_letter(text: str) -> None:
    for message in (spec.NO_REQUESTS_FOUND, spec.NO_TRANSCRIPTS_FOUND, spec.UNKNOWN_REQUEST_ID,
                    spec.UNKNOWN_TRANSCRIPT_ID):  # fmt: skip
        assert f'{{"Message": "{message}"}}' in text, message
    assert f"`{spec.INTL_SCOPE}`" in text and f"`{spec.DOMESTIC_SCOPE}`" in text
    assert f"`{spec.SUBSCRIPTION_KEY_HEADER}: <SUBSCRIPTION_KEY>`" in text
    assert f"`{spec.PESCXML_FIELD}`" in text
    # The exchange's scope is not the spec's: it leaves the exchange's login open (§5.7).
    assert spec.EXCHANGE_SCOPE not in text


def test_the_v1_namespaces_are_the_spec_s(text: str) -> None:
    named = set(re.findall(r"`(urn:org:pesc:[^`]+)`", text))
    assert set(spec.NS_V1_0_0.values()) == named
