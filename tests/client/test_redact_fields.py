"""A JSON body's sensitive fields are masked whatever the spelling of their key."""

from __future__ import annotations

import pytest

from workbench.http.masking import MASK, Redactor


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ('{"a": 1}', False),
        ('{"name": "Émile Brontë-Ça", "city": "Trois-Rivières"}', False),
        ('{"Token": 1}', True),
        ('{"PASSWORD": "x", "name": "Émile"}', True),
        ('{"\\u0074oken": 1}', True),  # an escape may spell a key in disguise
        ('{"TO\u212aEN": 1}', True),  # KELVIN SIGN lowercases to an ASCII k
        ('{"cl\u0130ent": 1}', False),
    ],
)
def test_a_body_is_masked_only_where_a_key_is_sensitive(text: str, masked: bool) -> None:
    shown = Redactor().body(text, "application/json")
    assert (MASK in shown) is masked
    assert (shown == text) is not masked


def test_a_key_spelled_with_a_kelvin_sign_is_still_masked() -> None:
    body = '{"TO\u212aEN": "abcdefgh12345", "name": "Émile"}'
    masked = Redactor().body(body, "application/json")
    assert "abcdefgh12345" not in masked and "Émile" in masked
