"""A secret echoed by a partner in another encoder's spelling is masked all the same wherever
masking by value applies (logins, error answers, what we say): by the session and by the store
(nothing reaches the database file); a JSON body that held one stays JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote, quote_plus, urlencode
from xml.sax.saxutils import quoteattr

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from tests.store.helpers import exchange
from workbench.redact import MASK, Redactor
from workbench.secret_spellings import SecretMatcher, plain_core, spelling_pattern
from workbench.store import Store

SECRET = "Zq9+tR/w8é'x<y>&kLm\"N=\x7f\t"  # one of everything encoders treat apart


def _dotnet(text: str) -> str:
    """System.Text.Json's default spelling, written out by hand as an independent oracle."""
    table = {c: f"\\u{ord(c):04X}" for c in "<>&'\"+`"}
    table["\\"] = "\\\\"
    return "".join(table.get(c, c if " " <= c < "\x7f" else _utf16_escapes(c)) for c in text)


def _utf16_escapes(c: str) -> str:
    units = c.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i : i + 2]):04X}" for i in range(0, len(units), 2))


def _lower_hex(text: str) -> str:
    return re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), text)


def _spellings(secret: str) -> dict[str, str]:
    """The secret as other encoders write it, each made without secret_spellings.py."""
    element = etree.Element("x")
    element.text = secret
    ascii_xml = etree.tostring(element, encoding="ascii").decode().split("?>")[-1]
    ascii_xml = ascii_xml.strip().removeprefix("<x>").removesuffix("</x>")
    gson = {c: f"\\u{ord(c):04x}" for c in "<>&='"}
    return {
        "python json, ascii": json.dumps(secret)[1:-1],
        "python json, utf-8": json.dumps(secret, ensure_ascii=False)[1:-1],
        "python json, upper-case hex": json.dumps(secret)[1:-1].replace("\\u00e9", "\\u00E9"),
        ".NET System.Text.Json": _dotnet(secret),
        "PHP json_encode": json.dumps(secret)[1:-1].replace("/", "\\/"),
        "lxml, ASCII-encoded XML": ascii_xml,
        "ASCII XML inside .NET JSON": _dotnet(ascii_xml),
        "Gson, HTML-safe": "".join(gson.get(c, c) for c in json.dumps(secret)[1:-1]),
        "saxutils attribute (&#9;)": quoteattr(secret)[1:-1],
        "Go encoding/xml (&#39; &#34;)": secret.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("'", "&#39;")
        .replace('"', "&#34;"),
        "html.escape (&#x27;)": __import__("html").escape(secret),
        "urlencode (a form)": urlencode({"client_secret": secret}).split("=", 1)[1],
        "quote, lower-case hex": _lower_hex(quote(secret, safe="")),
        "a form inside .NET JSON": _dotnet(quote_plus(secret)),
        "JSON inside XML (\\&quot;)": json.dumps(secret)[1:-1]
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace('"', "&quot;"),
    }


SPELLINGS = _spellings(SECRET)


def test_the_oracle_spellings_differ_from_the_secret() -> None:
    assert "&#233;" in SPELLINGS["lxml, ASCII-encoded XML"]
    assert "\\u002B" in SPELLINGS[".NET System.Text.Json"]
    assert SECRET not in SPELLINGS.values()


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_is_matched(name: str) -> None:
    assert re.fullmatch(spelling_pattern(SECRET), SPELLINGS[name])
    assert plain_core(SECRET) in SPELLINGS[name]  # the core filter never misses a spelling
    assert SecretMatcher.of([SECRET]).holds(f"... {SPELLINGS[name]} ...")


def test_a_secret_with_no_core_to_search_is_still_found() -> None:
    matcher = SecretMatcher.of(["+/=&"])
    assert matcher.cores == ()  # searched for everywhere with its regular expression
    text = 'x "\\u002B\\/\\u003d&amp;" y'
    assert matcher.unfiltered_in(text) and matcher.mask(text, MASK) == f'x "{MASK}" y'
    assert not matcher.holds("x + / = & y")


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_session_masks_every_spelling(name: str) -> None:
    spelled = SPELLINGS[name]
    redactor = Redactor([SECRET])
    body = '{"Message": "The client secret \\"' + spelled + '\\" is not valid."}'
    assert spelled not in redactor.body(body, "application/json")
    assert redactor.text(f"error: {spelled}!") == f"error: {MASK}!"


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_the_store_masks_every_spelling(name: str) -> None:
    spelled = SPELLINGS[name]
    assert Redactor([SECRET]).text(f"<a>{spelled}</a>") == f"<a>{MASK}</a>"


def test_no_spelling_reaches_the_database_file(tmp_path: Path) -> None:
    store = Store(tmp_path / "wb.db", secrets=[SECRET])
    for spelled in SPELLINGS.values():
        body = '[{"RequestID": "R-1", "Note": "' + spelled + '"}]'
        store.record_call(exchange(status=400, response_body=body, error=f"echo {spelled}"))
        store.record_detail_failure("supplier_requests", "R-1", error=f"<X>{spelled}</X>")
    store.close()
    data = b"".join(f.read_bytes() for f in tmp_path.iterdir())
    for name, spelled in SPELLINGS.items():
        assert spelled.encode() not in data, name
    assert plain_core(SECRET).encode() not in data


@pytest.mark.parametrize("secret", ["true", "null", "12345678"])
def test_a_body_holding_a_secret_that_is_json_syntax_stays_json(tmp_path: Path, secret: str):
    body = json.dumps({"ok": True, "note": None, "count": 12345678, "x": f"a {secret} b"})
    redacted = Redactor([secret]).body(body, "application/json")
    store = Store(tmp_path / "wb.db", secrets=[secret])
    store.record_call(exchange(interface="identity", response_body=body, request_body=body))
    stored = store.table("calls")[["request_body", "response_body"]].iloc[0].tolist()
    store.close()
    for text in (redacted, *stored):
        decoded = json.loads(text)  # still JSON: masked value by value, not in the text
        assert decoded["ok"] is True and decoded["note"] is None
        assert decoded["x"] == f"a {MASK} b"
        assert decoded["count"] == (MASK if secret == "12345678" else 12345678)


def test_a_body_without_secrets_is_recorded_byte_for_byte() -> None:
    body = '{"access_token":"[REDACTED]",  "expires_in":3600, "x": "caf\\u00e9"}'
    assert Redactor(["zq-secret-1"]).body(body, "application/json") == body
    assert Redactor(["zq-secret-1"]).text(body) == body


_ALPHABET = "aZ09_.~-\"'<>&+/=\\`\t\n\x7f\x01éÿ€😀 "
_ENCODERS = {
    "as written": lambda s: s,
    "python ascii": lambda s: json.dumps(s)[1:-1],
    "python utf-8": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    ".NET": _dotnet,
    "PHP": lambda s: json.dumps(s)[1:-1].replace("/", "\\/"),
    "html.escape": lambda s: __import__("html").escape(s),
    "saxutils attribute": lambda s: quoteattr(s)[1:-1],
    "XML in .NET JSON": lambda s: _dotnet(__import__("html").escape(s, quote=False)),
    "quote": lambda s: quote(s, safe=""),
    "quote, lower-case hex": lambda s: _lower_hex(quote(s)),
    "quote_plus": quote_plus,
    "urlencode": lambda s: urlencode({"client_secret": s}).split("=", 1)[1],
    "form in .NET JSON": lambda s: _dotnet(quote_plus(s)),
    "form in XML": lambda s: __import__("html").escape(urlencode({"k": s})[2:]),
}


@settings(max_examples=300, deadline=None, derandomize=True)  # the same 300 on every run
@given(
    secret=st.text(alphabet=_ALPHABET, min_size=4, max_size=16).filter(lambda s: s.strip()),
    encoder=st.sampled_from(sorted(_ENCODERS)),
)
def test_any_secret_in_any_encoder_is_masked(secret: str, encoder: str) -> None:
    spelled = _ENCODERS[encoder](secret)
    text = f"<< {spelled} >>"  # not JSON: a JSON text is masked value by value instead
    masked = Redactor([secret]).text(text)
    assert masked == f"<< {MASK} >>", (secret, encoder, masked)


@pytest.mark.parametrize(
    "url",
    [
        f"https://partner.example/a?note={quote_plus(SECRET)}&id=1",
        f"https://partner.example/a?note={_lower_hex(quote(SECRET, safe=''))}",
        f"https://partner.example/a/{quote(SECRET, safe='')}/b",
    ],
)
def test_a_url_holding_a_secret_percent_encoded_is_masked_in_what_we_say(url: str) -> None:
    assert plain_core(SECRET) not in Redactor([SECRET]).text(f"GET {url} failed")


def test_a_recorded_url_is_masked_by_position_and_its_ids_kept() -> None:
    url = "https://svc:p4ss@partner.example/api/transcriptrequests/C2026/x?access_token=abc&n=2026"
    masked = Redactor(["2026", "p4ss"]).url(url)
    assert masked == (
        "https://[REDACTED]@partner.example/api/transcriptrequests/C2026/x"
        "?access_token=[REDACTED]&n=2026"
    )


@pytest.mark.parametrize(
    ("secret", "text", "masked"),
    [
        ("t", "ConnectError: Connection refused", "ConnectError: Connection refused"),
        ("t", "token t expired", f"token {MASK} expired"),
        ("2026", "RequestDate 2026-02-20", f"RequestDate {MASK}-02-20"),
        ("2026", "C20261127 listed", "C20261127 listed"),
        ("Pw#2026", 'password "Pw#2026" refused', f'password "{MASK}" refused'),
        ("Pw#2026", "echo Pw%232026&x", f"echo {MASK}&x"),
        ("long-secret-9", "xlong-secret-9y", f"x{MASK}y"),
    ],
)
def test_a_short_secret_is_masked_as_a_word_a_long_one_anywhere(
    secret: str, text: str, masked: str
) -> None:
    assert Redactor([secret]).text(text) == masked
