"""The cheap test that decides whether a JSON body must be decoded to mask its fields."""

from __future__ import annotations

import pytest

from workbench.http.masking import Redactor


@pytest.mark.parametrize(
    ("text", "may"),
    [
        ('{"a": 1}', False),
        ('{"name": "Émile Brontë-Ça", "city": "Trois-Rivières"}', False),
        ('{"Token": 1}', True),
        ('{"PASSWORD": "x", "name": "Émile"}', True),
        ('{"\\u0074oken": 1}', True),  # an escape may spell a key in disguise
        ('{"TO\u212aEN": 1}', True),  # KELVIN SIGN lowercases to an ASCII k
        ('{"SECRET\u0130": 1}', True),
        ('{"cl\u0130ent": 1}', False),
    ],
)
def test_a_body_is_decoded_only_when_a_key_may_be_sensitive(text: str, may: bool) -> None:
    assert (not Redactor().clean(text)) is may


def test_a_key_spelled_with_a_kelvin_sign_is_still_masked() -> None:
    body = '{"TO\u212aEN": "abcdefgh12345", "name": "Émile"}'
    masked = Redactor().body(body, "application/json")
    assert "abcdefgh12345" not in masked and "Émile" in masked
