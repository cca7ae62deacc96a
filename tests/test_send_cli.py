"""``workbench send response|transcript|ack`` end to end, against a real sandbox on loopback:
dry runs, prompts answered no and yes, ``--yes``, read-only profiles, duplicates, bad files."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import workbench as wb
from tests.conftest import FAST
from tests.students import of_student, request_xml, with_person, with_text_replaced
from workbench import pesc
from workbench.cli import app
from workbench.sandbox import Sandbox, generator
from workbench.store import Store

KINDS = ("response", "transcript", "ack")
OPERATIONS = {
    "response": "send_response",
    "transcript": "send_transcript",
    "ack": "send_acknowledgment",
}


def send(sb: Sandbox, db: Path, *args: str, input: str | None = None, **env: str) -> Result:
    """``workbench send ARGS`` on sandbox ``sb`` with the database ``db``."""
    environ: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    environ.update({**sb.env, **FAST, "WORKBENCH_DB": str(db), **env})
    return CliRunner().invoke(app, ["send", *args], env=environ, input=input)


def transcript_file(sb: Sandbox, request_id: str, folder: Path, **options: str) -> Path:
    """A CollegeTranscript answering request ``request_id`` (its tracking id), of its student,
    as a file."""
    item = sb.state.requests[request_id]
    xml = generator.college_transcript_xml(
        5,
        1,
        request_id=item.tracking,
        created=sb.state.now,
        namespaces=sb.settings.namespaces,
        **options,
    )
    xml = of_student(xml, request_xml(sb, request_id))
    path = folder / f"transcript-{request_id}.xml"
    path.write_text(xml, encoding="utf-8")
    return path


def arguments(kind: str, sb: Sandbox, folder: Path) -> tuple[str, list[str]]:
    """The id a ``kind`` send goes to, and the command's arguments."""
    if kind == "ack":
        item = sb.pending_transcript_ids()[0]
        return item, ["ack", item]
    item = sb.pending_request_ids()[0]
    if kind == "response":
        return item, ["response", item, "--status", "TranscriptRequestReceived"]
    return item, ["transcript", item, str(transcript_file(sb, item, folder))]


def outbox(db: Path) -> list[tuple[str, str, str]]:
    """(operation, request_id, state) of every outbox entry, oldest first."""
    if not db.exists():
        return []
    with Store(str(db)) as store:
        rows = store.table("outbox")
    return list(zip(rows["operation"], rows["request_id"], rows["state"], strict=True))


@pytest.mark.parametrize("kind", KINDS)
def test_a_dry_run_prints_the_document_and_sends_nothing(
    sandbox: Sandbox, tmp_path: Path, kind: str
) -> None:
    db = tmp_path / "wb.db"
    item, args = arguments(kind, sandbox, tmp_path)
    done = send(sandbox, db, *args, "--dry-run")
    assert done.exit_code == 0, done.output
    doc = pesc.parse(done.stdout)  # the document alone on stdout
    assert doc.message_type in {"TranscriptResponse", "CollegeTranscript", "Acknowledgment"}
    assert f"Operation:  {OPERATIONS[kind]}" in done.stderr
    assert "Validation: not validated" in done.stderr  # no schema folder configured
    assert f"Id:         {item}" in done.stderr
    assert "Dry run: nothing was sent." in done.stderr
    assert sandbox.received == []
    assert not db.exists()  # a dry run creates no database


@pytest.mark.parametrize("kind", KINDS)
def test_a_prompt_answered_no_sends_nothing_and_exits_1(
    sandbox: Sandbox, tmp_path: Path, kind: str
) -> None:
    db = tmp_path / "wb.db"
    item, args = arguments(kind, sandbox, tmp_path)
    done = send(sandbox, db, *args, input="n\n")
    assert done.exit_code == 1, done.output
    assert "Send it?" in done.stderr
    assert f"Nothing sent: {OPERATIONS[kind]} for {item}" in done.stderr
    assert f"Id:         {item}" in done.stderr  # the summary came before the question
    assert (
        "TransmissionData>" not in done.output
    )  # the document (student data) is shown only on demand
    assert sandbox.received == []
    assert outbox(db) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_prompt_answered_yes_sends_once(sandbox: Sandbox, tmp_path: Path, kind: str) -> None:
    db = tmp_path / "wb.db"
    item, args = arguments(kind, sandbox, tmp_path)
    done = send(sandbox, db, *args, "--show", input="y\n")
    assert done.exit_code == 0, done.output
    assert "TransmissionData>" in done.stdout  # --show prints it before asking
    assert f"Sent {OPERATIONS[kind]} for {item} (outbox entry 1)." in done.stdout
    assert len(sandbox.received) == 1
    assert outbox(db) == [(OPERATIONS[kind], item, "sent")]


@pytest.mark.parametrize("kind", KINDS)
def test_yes_sends_without_asking_and_the_same_send_again_is_refused(
    sandbox: Sandbox, tmp_path: Path, kind: str
) -> None:
    db = tmp_path / "wb.db"
    item, args = arguments(kind, sandbox, tmp_path)
    done = send(sandbox, db, *args, "--yes")
    assert done.exit_code == 0, done.output
    assert "Send it?" not in done.output
    assert len(sandbox.received) == 1
    if kind == "transcript":  # the partner's acknowledgment, counted
        assert "Reply: the partner acknowledged" in done.stdout

    again = send(sandbox, db, *args, "--yes")
    assert again.exit_code == 1, again.output
    assert "Error (DuplicateSend)" in again.stderr
    assert "already sent" in again.stderr and "(outbox entry 1" in again.stderr
    assert "--force" in again.stderr
    assert len(sandbox.received) == 1  # refused before anything left
    assert outbox(db) == [(OPERATIONS[kind], item, "sent")]

    # Refused before the prompt too, and in a dry run, with the same exit code.
    assert send(sandbox, db, *args, input="y\n").exit_code == 1
    dry = send(sandbox, db, *args, "--dry-run")
    assert dry.exit_code == 1 and "DuplicateSend" in dry.stderr
    assert len(sandbox.received) == 1


def test_force_sends_again(sandbox: Sandbox, tmp_path: Path) -> None:
    db = tmp_path / "wb.db"
    item, args = arguments("response", sandbox, tmp_path)
    assert send(sandbox, db, *args, "--yes").exit_code == 0
    done = send(sandbox, db, *args, "--yes", "--force")
    assert done.exit_code == 0, done.output
    assert outbox(db) == [("send_response", item, "sent")] * 2
    assert len(sandbox.received) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_read_only_profile_refuses_with_exit_2(
    sandbox: Sandbox, tmp_path: Path, kind: str
) -> None:
    db = tmp_path / "wb.db"
    _, args = arguments(kind, sandbox, tmp_path)
    done = send(sandbox, db, *args, "--yes", WORKBENCH_READ_ONLY="1")
    assert done.exit_code == 2, done.output
    assert "Configuration error" in done.stderr and "is read-only" in done.stderr
    assert sandbox.received == []
    assert sandbox.hits == {} or all(method != "POST" for method, _ in sandbox.hits)
    assert not db.exists()  # refused before any file is created
    # A dry run still shows what would be sent.
    assert send(sandbox, db, *args, "--dry-run", WORKBENCH_READ_ONLY="1").exit_code == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"this is not XML", "is not a usable PESC document"),
        (b"", "is not a usable PESC document"),
    ],
)
def test_a_file_that_is_not_xml_is_refused_before_any_prompt(
    sandbox: Sandbox, tmp_path: Path, content: bytes, message: str
) -> None:
    item = sandbox.pending_request_ids()[0]
    path = tmp_path / "bad.xml"
    path.write_bytes(content)
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(path), input="y\n")
    assert done.exit_code == 2, done.output
    assert message in done.output and "FILE" in done.output
    assert "Send it?" not in done.output
    assert sandbox.received == []


def test_a_file_of_the_wrong_message_type_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    item = sandbox.pending_request_ids()[0]
    transcript = transcript_file(sandbox, item, tmp_path)
    ack = tmp_path / "ack.xml"
    ack.write_text(pesc.build_acknowledgment(transcript.read_text()), encoding="utf-8")
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(ack), "--yes")
    assert done.exit_code == 2, done.output
    assert "expected a CollegeTranscript or HighSchoolTranscript document, got Acknowledgment" in (
        " ".join(done.output.split())
    )
    assert sandbox.received == []


def test_a_file_failing_the_schemas_is_refused_before_any_prompt(
    sandbox: Sandbox, tmp_path: Path, xsd_dir: Path
) -> None:
    item = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, item, tmp_path, defect="invalid")
    schemas = {"WORKBENCH_PESC_SCHEMAS": str(xsd_dir)}
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(path), input="y\n", **schemas)
    assert done.exit_code == 2, done.output
    assert "fails validation" in done.output and "--allow-invalid" in done.output
    assert "Send it?" not in done.output
    dry = send(sandbox, tmp_path / "wb.db", "transcript", item, str(path), "--dry-run", **schemas)
    assert dry.exit_code == 2 and "Validation: invalid" in dry.stderr
    assert sandbox.received == []
    # A valid one passes the same schemas.
    good = transcript_file(sandbox, item, tmp_path)
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(good), "--yes", **schemas)
    assert done.exit_code == 0, done.output
    assert "Validation: valid against CollegeTranscript v" in done.stderr
    assert done.stderr.count(".xsd") == 1  # the schema is named once
    assert len(sandbox.received) == 1


def test_a_file_given_by_a_relative_path_is_named_by_its_absolute_one(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, item, tmp_path)
    monkeypatch.chdir(tmp_path)
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, path.name, "--dry-run")
    assert done.exit_code == 0, done.output
    assert f"Document:   {path.stat().st_size:,} bytes, from {path}\n" in done.stderr


def test_an_id_pasted_with_dashes_in_upper_case_is_the_partners(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    item = sandbox.pending_request_ids()[0]
    assert len(item) == 32  # the default id scheme: 32 hex digits
    pasted = "-".join((item[:8], item[8:12], item[12:16], item[16:20], item[20:])).upper()
    done = send(sandbox, db, "response", pasted, "--status", "TranscriptRequestReceived", "--yes")
    assert done.exit_code == 0, done.output
    assert f"Id:         {item} (given as {pasted})" in done.stderr
    assert outbox(db) == [("send_response", item, "sent")]


def test_a_dashed_guid_id_pasted_without_dashes_is_the_partners(
    sandbox_factory, tmp_path: Path
) -> None:
    sb = sandbox_factory(id_scheme="guid")
    db = tmp_path / "wb.db"
    item = sb.pending_transcript_ids()[0]
    pasted = item.replace("-", "").upper()
    done = send(sb, db, "ack", pasted, "--yes")
    assert done.exit_code == 0, done.output
    assert outbox(db) == [("send_acknowledgment", item, "sent")]


def test_a_hold_with_its_reason_and_release_date(sandbox: Sandbox, tmp_path: Path) -> None:
    item = sandbox.pending_request_ids()[0]
    done = send(
        sandbox, tmp_path / "wb.db", "response", item, "--status", "Hold",
        "--hold-reason", "Financial", "--release", "2026-06-30", "--dry-run",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    fields = pesc.flatten(pesc.parse(done.stdout))
    assert fields["response_status"] == "Hold"
    assert "Status:     Hold" in done.stderr


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--status", "Maybe"], "TranscriptRequestReceived"),
        (["--status", "Hold", "--hold-reason", "Bored"], "Financial"),
        (["--status", "Hold", "--release", "next week"], "YYYY-MM-DD"),
        (["--status", "NoRecord", "--hold-reason", "Financial"], "--status Hold"),
    ],
)
def test_unusable_response_options_exit_2_before_any_call(
    sandbox: Sandbox, tmp_path: Path, options: list[str], named: str
) -> None:
    item = sandbox.pending_request_ids()[0]
    done = send(sandbox, tmp_path / "wb.db", "response", item, *options, "--yes")
    assert done.exit_code == 2, done.output
    assert named in done.output
    assert sandbox.received == [] and sandbox.token_requests == {}


def test_an_acknowledgment_is_built_from_the_stored_transcript(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    environ: dict[str, str | None] = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    environ.update({**sandbox.env, **FAST, "WORKBENCH_DB": str(db)})
    pulled = CliRunner().invoke(app, ["pull"], env=environ)
    assert pulled.exit_code == 0, pulled.output
    item = sandbox.pending_transcript_ids()[0]
    done = send(sandbox, db, "ack", item, "--yes")
    assert done.exit_code == 0, done.output
    assert "built from the stored transcript" in done.stderr
    with Store(str(db)) as store:
        stored = pesc.records(store.document(item, list_name="consumer_transcripts") or "")
    sent = pesc.flatten(pesc.parse(sandbox.state.documents[-1]["payload"]))
    assert sent["message_type"] == "Acknowledgment"
    assert sent["course_total"] == len(stored["courses"]) > 0


def test_an_acknowledgment_from_a_file(sandbox: Sandbox, tmp_path: Path) -> None:
    db = tmp_path / "wb.db"
    item = sandbox.pending_transcript_ids()[0]
    built = send(sandbox, db, "ack", item, "--dry-run")
    assert built.exit_code == 0, built.output
    path = tmp_path / "ack.xml"
    path.write_text(built.stdout, encoding="utf-8")
    done = send(sandbox, db, "ack", item, str(path), "--yes")
    assert done.exit_code == 0, done.output
    assert f"from {path}" in done.stderr
    sent = pesc.flatten(pesc.parse(sandbox.state.documents[-1]["payload"]))
    assert sent["document_id"] == pesc.flatten(pesc.parse(built.stdout))["document_id"]
    assert outbox(db) == [("send_acknowledgment", item, "sent")]


@pytest.mark.parametrize("id_scheme", ["tracking", "guid"])
def test_a_transcript_of_another_request_is_refused_before_any_prompt(
    sandbox_factory, tmp_path: Path, id_scheme: str
) -> None:
    sb = sandbox_factory(id_scheme=id_scheme)
    item, other = sb.pending_request_ids()[:2]
    wrong = transcript_file(sb, other, tmp_path)
    done = send(sb, tmp_path / "wb.db", "transcript", item, str(wrong), input="y\n")
    assert done.exit_code == 2, done.output
    assert "belongs to another request" in done.output
    assert "Send it?" not in done.output
    assert sb.received == []


def test_a_fifo_as_file_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """Refused from ``os.stat`` before the file is opened: opening a FIFO would block for ever
    (the subprocess's timeout only guards the suite against that hang)."""
    fifo = tmp_path / "transcript.xml"
    os.mkfifo(fifo)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli",
            "send",
            "transcript",
            "R-1",
            str(fifo),
            "--dry-run",
        ],
        env={**environ, "WORKBENCH_DB": str(tmp_path / "wb.db")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"{fifo} is not a regular file" in " ".join(done.stderr.split())
    assert not (tmp_path / "wb.db").exists()


@pytest.mark.parametrize(("cap", "size"), [(None, 30 * 1024 * 1024), ("1000", 1001)])
def test_a_file_over_the_pesc_cap_is_refused_before_it_is_read(
    sandbox: Sandbox, tmp_path: Path, cap: str | None, size: int
) -> None:
    item = sandbox.pending_request_ids()[0]
    big = tmp_path / "big.xml"
    with big.open("wb") as f:
        f.truncate(size)  # sparse: nothing to read would fit the cap
    env = {} if cap is None else {"WORKBENCH_PESC_MAX_BYTES": cap}
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(big), "--dry-run", **env)
    assert done.exit_code == 2, done.output
    limit = "10,485,760" if cap is None else "1,000"
    message = " ".join(done.stderr.split())
    assert f"{big} is {size:,} bytes, over the {limit}-byte limit" in message
    assert "WORKBENCH_PESC_MAX_BYTES" in message and "FILE" in message
    assert sandbox.received == []


def test_a_file_that_is_not_xml_is_described_never_quoted(sandbox: Sandbox, tmp_path: Path) -> None:
    """A student-data CSV picked by mistake: the refusal says what it is, not what it holds."""
    item = sandbox.pending_request_ids()[0]
    csv = tmp_path / "students.xml"
    csv.write_text("student_number,name\n30012345,Jane Gonçalves\n", encoding="utf-8")
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(csv), "--dry-run")
    assert done.exit_code == 2, done.output
    assert "Jane" not in done.output and "student_number" not in done.output
    assert "30012345" not in done.output
    message = " ".join(done.output.split())
    assert "not XML: it starts with text, not '<' (45 bytes)" in message
    assert "is not a usable PESC document" in message


@pytest.mark.slow  # a pull, then a Python process that imports the workbench
@pytest.mark.parametrize("id_scheme", ["tracking", "guid"])
def test_the_readmes_transcript_recipe_writes_one_that_is_sent(
    sandbox_factory: Callable[..., Sandbox],
    tmp_path: Path,
    connect_to: Callable[..., wb.Workbench],
    id_scheme: str,
) -> None:
    """README, "Acting from the command line": the one-liner that writes a transcript for a
    stored request, run as printed from the demo's folder, gives a FILE `send` accepts, under
    either id scheme (under "guid" the API id is not the tracking id)."""
    sandbox = sandbox_factory(id_scheme=id_scheme)
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"\n(\.venv/bin/python -c '(.*?)' ID > transcript\.xml)\n", readme, re.S)
    assert found is not None, "the README's transcript recipe"
    db = tmp_path / "data" / "demo.db"
    db.parent.mkdir()
    connect_to(sandbox, db=db).pull(progress=False)
    with Store(str(db)) as store:
        readable = store.table("open_requests").query("parse_error.isna() and has_detail == 1")
        item = str(readable["request_id"].iloc[0])
        request_xml = store.document(item, list_name="supplier_requests")
    assert request_xml is not None
    environ = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    done = subprocess.run(
        [sys.executable, "-c", found.group(2), item],
        cwd=tmp_path,
        env={**environ, **sandbox.env, **FAST},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    transcript = tmp_path / "transcript.xml"
    transcript.write_text(done.stdout, encoding="utf-8")
    requested = pesc.flatten(pesc.parse(request_xml))
    ours = pesc.flatten(pesc.parse(done.stdout))
    assert ours["request_tracking_id"] == requested["request_tracking_id"]
    assert requested["student_last_name"] and requested["student_birth_date"]
    assert (ours["student_last_name"], ours["student_birth_date"]) == (
        requested["student_last_name"],
        requested["student_birth_date"],
    )
    sent = send(sandbox, db, "transcript", item, str(transcript), "--yes")
    assert sent.exit_code == 0, sent.output
    assert outbox(db)[-1] == ("send_transcript", item, "sent")


@pytest.mark.parametrize(
    ("change", "named"),
    [({"LastName": "Someone-Else"}, "last name"), ({"BirthDate": "1970-01-01"}, "birth date")],
)
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_transcript_of_another_student_is_refused_before_any_prompt(
    sandbox: Sandbox, tmp_path: Path, change: dict[str, str], named: str, dry_run: bool
) -> None:
    item = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, item, tmp_path)
    requested = pesc.flatten(pesc.parse(path.read_text(encoding="utf-8")))
    path.write_text(with_person(path.read_text(encoding="utf-8"), **change), encoding="utf-8")
    db = tmp_path / "wb.db"
    options = ["--dry-run"] if dry_run else []
    done = send(sandbox, db, "transcript", item, str(path), *options, input="y\n")
    assert done.exit_code == 2, done.output
    message = " ".join(done.output.split())
    assert f"differs from the student of the transcript request {item!r} on {named}:" in message
    assert "--no-check" in message
    assert "another student's transcript. Nothing was sent" in message
    for value in (*change.values(), requested["student_last_name"]):
        assert value not in message  # fields are named, never their values
    assert requested["student_birth_date"][:10] not in message
    assert "Send it?" not in done.output
    assert outbox(db) == []
    assert sandbox.received == []


def test_no_check_sends_a_transcript_checked_by_hand(sandbox: Sandbox, tmp_path: Path) -> None:
    item = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, item, tmp_path)
    path.write_text(with_person(path.read_text(encoding="utf-8"), FirstName="Someone"),
                    encoding="utf-8")  # fmt: skip
    done = send(sandbox, tmp_path / "wb.db", "transcript", item, str(path), "--no-check", "--yes")
    assert done.exit_code == 0, done.output
    assert len(sandbox.received) == 1


def _pending_transcript(sb: Sandbox, folder: Path) -> tuple[str, Path, str, dict[str, Any]]:
    """A pending request's id, a transcript file for it, its XML and its flattened fields."""
    item = sb.pending_request_ids()[0]
    path = transcript_file(sb, item, folder)
    xml = path.read_text(encoding="utf-8")
    return item, path, xml, pesc.flatten(pesc.parse(xml))


def test_a_transcript_differing_only_in_case_spaces_and_dashes_is_sent(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    item, path, xml, student = _pending_transcript(sandbox, tmp_path)
    first, last, oen = (student[f"student_{k}"] for k in ("first_name", "last_name", "oen"))
    assert first and last and oen and len(oen) > 3
    xml = with_person(xml, FirstName=f"  {first.upper()} ", LastName=f"{last.lower()}  ")
    path.write_text(with_text_replaced(xml, oen, f"{oen[:3]}-{oen[3:]} "), encoding="utf-8")
    changed = pesc.flatten(pesc.parse(path.read_text(encoding="utf-8")))
    assert (changed["student_first_name"], changed["student_oen"]) != (first, oen)
    db = tmp_path / "wb.db"
    done = send(sandbox, db, "transcript", item, str(path), "--yes")
    assert done.exit_code == 0, done.output
    assert outbox(db) == [("send_transcript", item, "sent")]


def full_width(text: str) -> str:
    """``text`` in full-width forms, as some keyboards and systems write it."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def test_a_transcript_spelling_its_student_in_other_unicode_forms_is_sent(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    item, path, xml, student = _pending_transcript(sandbox, tmp_path)
    first, last = student["student_first_name"], student["student_last_name"]
    xml = with_person(xml, FirstName=full_width(first), LastName=f"\u200b{last}\u00a0")
    path.write_text(xml, encoding="utf-8")
    assert pesc.flatten(pesc.parse(xml))["student_first_name"] != first
    db = tmp_path / "wb.db"
    done = send(sandbox, db, "transcript", item, str(path), "--yes")
    assert done.exit_code == 0, done.output
    assert outbox(db) == [("send_transcript", item, "sent")]


def test_a_transcript_for_a_request_that_cannot_be_read_is_refused_before_any_prompt(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path
) -> None:
    sb = sandbox_factory(malformed_share=1.0)
    item = sb.pending_request_ids()[0]
    path = tmp_path / "transcript.xml"
    path.write_text(
        generator.college_transcript_xml(
            5, 1, request_id=sb.state.requests[item].tracking, created=sb.state.now,
            namespaces=sb.settings.namespaces,
        ),
        encoding="utf-8",
    )  # fmt: skip
    db = tmp_path / "wb.db"
    done = send(sb, db, "transcript", item, str(path), input="y\n")
    assert done.exit_code == 1, done.output
    message = " ".join(done.output.split())
    assert "cannot be checked against the student of the transcript request" in message
    assert "Nothing was sent" in message and "check=False" in message
    assert "Send it?" not in done.output
    assert outbox(db) == [] and sb.received == []


def test_a_transcript_whose_request_fails_to_come_is_refused_before_any_prompt(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    item = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, item, tmp_path)
    sandbox.set_faults(error_rate=1.0, path_pattern=r"transcriptrequests/[0-9a-f-]{20,}$")
    db = tmp_path / "wb.db"
    done = send(sandbox, db, "transcript", item, str(path), input="y\n")
    assert done.exit_code == 1, done.output
    assert "Send it?" not in done.output
    assert outbox(db) == [] and sandbox.received == []


def test_a_transcript_for_a_stored_request_makes_no_call_but_its_send(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    with wb.connect(env={**sandbox.env, **FAST}, db=db) as w:
        w.pull(progress=False)
        before = len(w.store.table("calls"))
    item = sandbox.pending_request_ids()[0]
    path = transcript_file(sandbox, item, tmp_path)
    done = send(sandbox, db, "transcript", item, str(path), "--yes")
    assert done.exit_code == 0, done.output
    with Store(str(db)) as store:
        calls = store.table("calls").iloc[before:]
    exchange = calls[calls["interface"] != "identity"]
    assert exchange["operation"].tolist() == ["supplier.send_transcript"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_singular_only_partner_takes_each_send_exactly_once(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path, kind: str
) -> None:
    sb = sandbox_factory(send_routes="singular")
    db = tmp_path / "wb.db"
    item, args = arguments(kind, sb, tmp_path)
    done = send(sb, db, *args, "--yes")
    assert done.exit_code == 0, done.output
    assert [(r["operation"], r["request_id"]) for r in sb.received] == [(OPERATIONS[kind], item)]
    assert outbox(db) == [(OPERATIONS[kind], item, "sent")]


def _with_code(path: Path, code: str) -> Path:
    text = path.read_text(encoding="utf-8")
    for found in ("TEST", "PRODUCTION"):
        text = text.replace(f">{found}</DocumentProcessCode>", f">{code}</DocumentProcessCode>")
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize(("partner", "file"), [("TEST", "PRODUCTION"), ("PRODUCTION", "TEST")])
def test_a_file_of_another_process_code_is_refused_before_any_prompt(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path, partner: str, file: str, dry_run: bool
) -> None:
    sb = sandbox_factory(process_code=partner)
    item = sb.pending_request_ids()[0]
    path = _with_code(transcript_file(sb, item, tmp_path), file)
    db = tmp_path / "wb.db"
    options = ["--dry-run"] if dry_run else []
    done = send(sb, db, "transcript", item, str(path), *options, input="y\n", COLUMNS="100")
    assert done.exit_code == 2, done.output
    long = [line for line in done.output.splitlines() if len(line.split()) > 1 and len(line) > 100]
    assert long == []  # wrapped at COLUMNS, save a path too long for any line
    message = " ".join(done.output.split())
    assert f"DocumentProcessCode is {file}" in message and f"says {partner}" in message
    assert "Send it?" not in done.output
    assert sb.received == [] and outbox(db) == []


def test_a_profile_declaring_another_environment_refuses_a_built_document(
    sandbox_factory: Callable[..., Sandbox], tmp_path: Path
) -> None:
    sb = sandbox_factory(process_code="TEST")
    db = tmp_path / "wb.db"
    _, args = arguments("response", sb, tmp_path)
    done = send(sb, db, *args, input="y\n", WORKBENCH_ENVIRONMENT="production")
    assert done.exit_code == 2, done.output
    message = " ".join(done.output.split())
    assert "DocumentProcessCode TEST" in message and "environment is production" in message
    assert "Send it?" not in done.output
    assert sb.received == [] and outbox(db) == []
    fitting = send(sb, db, *args, "--yes", WORKBENCH_ENVIRONMENT="test")
    assert fitting.exit_code == 0, fitting.output
    assert len(sb.received) == 1


def test_a_reissued_transcript_is_asked_as_a_reissue_and_sent_without_force(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "wb.db"
    item = sandbox.pending_request_ids()[0]
    first = transcript_file(sandbox, item, tmp_path)
    assert send(sandbox, db, "transcript", item, str(first), "--yes").exit_code == 0
    reissue = transcript_file(sandbox, item, tmp_path, version=2, transmission_type="Reissue")
    done = send(sandbox, db, "transcript", item, str(reissue), input="y\n")
    assert done.exit_code == 0, done.output
    summary = " ".join(done.stderr.split())
    assert "New send: re-issue" in summary
    assert "Send it?" in done.stderr
    assert outbox(db) == [("send_transcript", item, "sent")] * 2
    assert len(sandbox.received) == 2
    again = send(sandbox, db, "transcript", item, str(reissue), "--yes")
    assert again.exit_code == 1 and "DuplicateSend" in again.stderr
    assert len(sandbox.received) == 2
