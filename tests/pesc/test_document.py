"""parse(): every sample, every way a PESCXML string arrives, and the document it returns."""

from __future__ import annotations

import codecs
import csv
import re
from html import escape
from pathlib import Path
from typing import Any

import pytest

from tests.pesc.factories import SAMPLES_DIR, needs_samples, sample, sample_files
from workbench import pesc
from workbench.errors import ConfigError, PescError

CT13 = "urn:org:pesc:message:CollegeTranscript:v1.3.0"
SMALL = (
    f'<ct:CollegeTranscript xmlns:ct="{CT13}"><TransmissionData>'
    "<DocumentID>D-1</DocumentID><RequestTrackingID>R&amp;D-7</RequestTrackingID>"
    "</TransmissionData></ct:CollegeTranscript>"
)


def _expected_roots() -> dict[str, tuple[str, str | None]]:
    """(message type, version) of each sample, from the root column of VALIDATION.tsv."""
    path = SAMPLES_DIR / "VALIDATION.tsv"
    if not path.is_file():
        return {}
    roots = {}
    with path.open(encoding="utf-8") as table:
        for row in csv.DictReader(table, delimiter="\t"):
            root = row["root"]
            if root.startswith("{"):
                namespace, local = root[1:].split("}")
                match = re.search(r":v([\d.]+)$", namespace)
                roots[row["file"]] = (local, match.group(1) if match else None)
            else:
                local, typed = root.split(" ")
                roots[row["file"]] = (local, typed.split(":v")[1])
    return roots


@needs_samples
@pytest.mark.parametrize("path", sample_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_sample_parses(path: Path) -> None:
    doc = pesc.parse(path.read_bytes())
    name = f"{path.parent.name}/{path.name}"
    assert (doc.message_type, doc.version) == _expected_roots()[name]
    assert doc.text.lstrip().startswith("<")
    assert doc.root.tag.endswith(doc.message_type)


@needs_samples
def test_every_sample_is_listed_in_the_validation_table() -> None:
    names = {f"{path.parent.name}/{path.name}" for path in sample_files()}
    assert names == set(_expected_roots())
    assert len(names) == 74


@needs_samples
@pytest.mark.parametrize(
    ("name", "note"),
    [
        ("pesccds/x_college-transcript.xml", "UTF-16 LE with a BOM, no declaration"),
        ("pesccds/x_SampleCollegeTranscript.xml", "UTF-16 BE with a BOM"),
        ("canpesc/Nova_Scotia_HighSchool_HighSchoolTranscript.xml", "UTF-16 BE, declares UTF-8"),
        ("canpesc/Nova_Scotia_University_UniversityTranscript2.xml", "UTF-8 with a BOM"),
    ],
)
def test_byte_order_marks_win_over_declarations(name: str, note: str) -> None:
    raw = sample(name)
    doc = pesc.parse(raw)
    assert "\ufeff" not in doc.text[:1]
    assert pesc.parse(doc.text).root.tag == doc.root.tag  # the text parses again, as str


def test_raw_escaped_bytes_and_str_give_the_same_document() -> None:
    variants: list[Any] = [
        SMALL,
        SMALL.encode(),
        escape(SMALL, quote=False),
        escape(SMALL, quote=True),
        "  \r\n\t" + SMALL,
        codecs.BOM_UTF8 + SMALL.encode(),
        "\ufeff" + SMALL,
        codecs.BOM_UTF16_LE + SMALL.encode("utf-16-le"),
        codecs.BOM_UTF16_BE + SMALL.encode("utf-16-be"),
        SMALL.encode("utf-16-le"),  # no BOM: recognised by its first bytes
        bytearray(SMALL.encode()),
        '<?xml version="1.0" encoding="UTF-8"?>\n' + SMALL,
        '<?xml version="1.0" encoding="utf-16"?>' + SMALL,  # a str's declaration is moot
        "\n  " + escape('<?xml version="1.0"?>\n' + SMALL, quote=False),
    ]
    for variant in variants:
        doc = pesc.parse(variant)
        assert doc.message_type == "CollegeTranscript", variant
        assert doc.version == "1.3.0"
        assert doc.namespace == CT13
        assert pesc.flatten(doc)["request_tracking_id"] == "R&D-7"  # unescaped once, not twice


def test_escaped_text_keeps_its_own_escapes() -> None:
    once = escape(SMALL, quote=False)
    assert "R&amp;amp;D" in once
    doc = pesc.parse(once)
    assert "<RequestTrackingID>R&amp;D-7</RequestTrackingID>" in doc.text
    numeric = "&#60;CollegeTranscript&#62;&#x3C;/CollegeTranscript>"
    assert pesc.parse("&lt;CollegeTranscript&gt;&lt;/CollegeTranscript&gt;").root.tag == (
        "CollegeTranscript"
    )
    with pytest.raises(PescError):  # numeric escapes alone do not make text "escaped XML"
        pesc.parse(numeric)


@pytest.mark.parametrize(
    "inner", ["a &amp;lt; b", "R&amp;amp;D", "&quot;q&quot; it&apos;s", "x &#38; y", "&amp;#38;"]
)
def test_unescaping_is_one_pass_with_or_without_character_references(inner: str) -> None:
    raw = SMALL.replace("<DocumentID>D-1<", f"<DocumentID>{inner}<")
    expected = pesc.flatten(pesc.parse(raw))["document_id"]
    plain = escape(raw, quote=False)  # named entities only: the plain-replacement path
    numeric = "&#60;".join(escape(raw, quote=True).rsplit("&lt;", 1))  # with &#...; references
    for escaped in (plain, numeric):
        doc = pesc.parse(escaped)
        assert doc.text == raw and pesc.flatten(doc)["document_id"] == expected


def test_declared_single_byte_encoding_is_honoured() -> None:
    body = '<?xml version="1.0" encoding="ISO-8859-1"?><CollegeTranscript><Student><Person><Name>'
    raw = (
        body + "<FirstName>Zoë</FirstName></Name></Person></Student></CollegeTranscript>"
    ).encode("latin-1")
    assert pesc.flatten(raw)["student_first_name"] == "Zoë"


def test_line_numbers_match_the_text() -> None:
    text = '\n\n<?xml version="1.0"\n   encoding="UTF-8"?>\n<!-- c -->\n' + SMALL.replace(
        "<TransmissionData>", "\n<TransmissionData>\n"
    )
    doc = pesc.parse(text)
    lines = doc.text.splitlines()
    for element in doc.root.iter():
        name = element.tag.split("}")[-1]
        assert name in lines[element.sourceline - 1], (name, element.sourceline)


def test_markers_in_comments_and_cdata_are_harmless() -> None:
    text = (
        f'<ct:CollegeTranscript xmlns:ct="{CT13}"><!-- <?pi?> XInclude <!DOCTYPE x> -->'
        "<TransmissionData><DocumentID><![CDATA[<?php ?>]]></DocumentID></TransmissionData>"
        "</ct:CollegeTranscript>"
    )
    assert pesc.flatten(text)["document_id"] == "<?php ?>"


@pytest.mark.parametrize(
    ("root", "message_type", "version"),
    [
        (
            '<TranscriptRequest xmlns="urn:org:pesc:message:TranscriptRequest:v1.0.0"/>',
            "TranscriptRequest",
            "1.0.0",
        ),
        # the spec gives responses the request's namespace: the root name decides
        (
            '<r:TranscriptResponse xmlns:r="urn:org:pesc:message:TranscriptRequest:v1.0.0"/>',
            "TranscriptResponse",
            "1.0.0",
        ),
        (
            '<a:Acknowledgment xmlns:a="urn:org:pesc:message:TranscriptAcknowledgment:v1.1.0"/>',
            "Acknowledgment",
            "1.1.0",
        ),
        ("<CollegeTranscript/>", "CollegeTranscript", None),
        ('<x:Receipt xmlns:x="urn:org:pesc:message:Receipt:v1.10.0"/>', "Receipt", "1.10.0"),
    ],
)
def test_identification(root: str, message_type: str, version: str | None) -> None:
    doc = pesc.parse(root)
    assert (doc.message_type, doc.version) == (message_type, version)
    assert repr(doc).startswith(f"<PescDocument {message_type}")


def test_non_text_input_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        pesc.parse(42)  # type: ignore[arg-type]


def test_a_bad_size_setting_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_PESC_MAX_BYTES", "ten megabytes")
    with pytest.raises(ConfigError, match="WORKBENCH_PESC_MAX_BYTES"):
        pesc.parse(SMALL)


def test_parsing_is_thread_safe() -> None:
    from concurrent.futures import ThreadPoolExecutor

    documents = [SMALL.replace("D-1", f"D-{n}") for n in range(200)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(lambda text: pesc.flatten(text)["document_id"], documents))
    assert ids == [f"D-{n}" for n in range(200)]


def test_text_is_the_document_without_leading_whitespace() -> None:
    raw = "\n  " + '<?xml version="1.0" encoding="UTF-8"?>\n' + SMALL.replace("D-1", "Dé-1")
    assert pesc.parse(raw.encode()).text == raw.lstrip()  # decoded on demand
    assert pesc.parse(raw).text == raw.lstrip()
    assert pesc.parse(escape(raw, quote=False)).text == raw.lstrip()
    assert pesc.parse(codecs.BOM_UTF8 + raw.encode()).text == raw.lstrip()


def test_unescaping_knows_only_xml_and_refuses_a_second_layer() -> None:
    with pytest.raises(PescError, match="escaped more than once"):
        pesc.parse("&amp;lt;CollegeTranscript&amp;gt;&amp;lt;/CollegeTranscript&amp;gt;")
    with pytest.raises(PescError):  # an HTML entity is no XML's: refused, not read as é
        pesc.parse("&lt;CollegeTranscript&gt;Ren&eacute;e&lt;/CollegeTranscript&gt;")
    doc = pesc.parse("&lt;CollegeTranscript&gt;a&#x80;b&lt;/CollegeTranscript&gt;")
    assert doc.root.text == "a\x80b"  # the character referred to, never Windows-1252's euro
