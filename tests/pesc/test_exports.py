"""The public face of workbench.pesc: what the rest of the project codes against."""

from __future__ import annotations

import inspect

from workbench import pesc


def test_all_is_sorted_and_complete() -> None:
    assert pesc.__all__ == sorted(pesc.__all__)
    public = {name for name in vars(pesc) if not name.startswith("_")}
    modules = {name for name in public if inspect.ismodule(getattr(pesc, name))}
    assert set(pesc.__all__) == public - modules - {"annotations"}


def test_entry_points_keep_their_signatures() -> None:
    def keywords(function: object) -> list[str]:
        parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
        return [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]

    assert keywords(pesc.parse) == ["max_bytes"]
    assert keywords(pesc.validate) == ["schemas_dir"]
    assert keywords(pesc.build_acknowledgment) == ["created", "note", "process_code", "tracking_id"]
    assert keywords(pesc.build_response)[:5] == [
        "status",
        "hold_reason",
        "planned_release_date",
        "note",
        "created",
    ]
    assert inspect.signature(pesc.build_response).parameters["status"].default == (
        "TranscriptRequestReceived"
    )
    for function in (pesc.flatten, pesc.records, pesc.to_frames):
        assert list(inspect.signature(function).parameters) == ["doc_or_xml"]


def test_document_and_validation_attributes() -> None:
    doc = pesc.parse("<CollegeTranscript/>")
    for attribute in ("message_type", "version", "namespace", "root", "text"):
        assert hasattr(doc, attribute)
    result = pesc.validate(doc, schemas_dir="/nonexistent")
    for attribute in ("status", "errors", "schema", "note"):
        assert hasattr(result, attribute)
