"""Test data and a launcher the sandbox tests share: PESC documents to send, the CLI sandbox."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime

import httpx
from lxml import etree

from workbench import spec
from workbench.sandbox.settings import answers

# ``start=FIXED_START``: the same data, dates included, on any day.
FIXED_START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def open_points() -> list[tuple[str, object]]:
    """Every answer to an open point that is not the default, as (setting, value)."""
    return [(name, value) for name, values in answers().items() for value in values[1:]]


def pending_from_env(env: dict[str, str]) -> httpx.Response:
    """The supplier's pending list, logged in with the variables a CLI sandbox printed."""
    form = {
        "client_id": env["WORKBENCH_SUPPLIER_CLIENT_ID"],
        "client_secret": env["WORKBENCH_SUPPLIER_CLIENT_SECRET"],
        "grant_type": "client_credentials",
        "scope": env["WORKBENCH_SUPPLIER_SCOPE"],
    }
    token = httpx.post(env["WORKBENCH_AUTH_URL"] + spec.TOKEN_PATH, data=form).json()
    return httpx.get(
        env["WORKBENCH_EXCHANGE_URL"] + spec.SUPPLIER_PENDING_PATH,
        headers={"Authorization": f"Bearer {token['access_token']}"},
    )


def start_cli(*args: str, background: bool = False) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``workbench sandbox ARGS`` in a subprocess, once serving: (process, variables it printed).

    ``background``: started as a shell starts a background job, with SIGINT ignored.
    """
    ignore_sigint = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", "sandbox", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignore_sigint,
        # A stop that hangs dumps every thread's stack on SIGABRT (see stop_cli).
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
    )
    assert proc.stdout is not None
    exported: dict[str, str] = {}
    for line in proc.stdout:
        if match := re.match(r"\s*export (\w+)='(.*)'", line):
            exported[match[1]] = match[2]
        if line.startswith("Ctrl-C"):
            break
    return proc, exported


def stop_cli(
    proc: subprocess.Popen[str], sig: int = signal.SIGINT, *, timeout: float = 60
) -> tuple[str, str]:
    """Stop a :func:`start_cli` sandbox with ``sig``; (stdout, stderr) once it has exited.

    A sandbox still running after ``timeout`` seconds fails the test with every thread's stack.
    """
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        raise AssertionError(f"the sandbox did not stop in {timeout} s:\n{err}") from None


def xpath_text(xml: str, name: str) -> str:
    """The text of the first element called ``name``, in any namespace."""
    root = etree.fromstring(xml.encode())
    return root.xpath(f"string(//*[local-name()='{name}'])")


def response_for(request_id: str) -> str:
    ns = spec.NS_V1_0_0["TranscriptResponse"]
    return (
        f'<TrnResp:TranscriptResponse xmlns:TrnResp="{ns}"><TrnResp:TransmissionData>'
        f"<DocumentID>R-1</DocumentID><RequestTrackingID>{request_id}</RequestTrackingID>"
        "</TrnResp:TransmissionData><TrnResp:Response><ResponseStatus>TranscriptSent"
        "</ResponseStatus></TrnResp:Response></TrnResp:TranscriptResponse>"
    )


def transcript_for(request_id: str, *, courses: int, awards: int) -> str:
    ns = spec.NS_V1_0_0["CollegeTranscript"]
    course_xml = "".join(
        f"<Course><CourseNumber>{n}</CourseNumber></Course>" for n in range(courses)
    )
    award_xml = "<AcademicAward><AcademicAwardTitle>Diploma</AcademicAwardTitle></AcademicAward>"
    return (
        f'<CT:CollegeTranscript xmlns:CT="{ns}"><TransmissionData><DocumentID>CT-DOC-1</DocumentID>'
        f"<RequestTrackingID>{request_id}</RequestTrackingID>"
        "<Source><Organization><CSIS>353900</CSIS><OrganizationName>Demo College</OrganizationName>"
        "</Organization></Source><Destination><Organization><MutuallyDefined>OCAS</MutuallyDefined>"
        "<OrganizationName>OCAS Application Services Inc.</OrganizationName></Organization>"
        "</Destination></TransmissionData><Student><Person><Name><FirstName>Zoë</FirstName>"
        "<LastName>O'Brien</LastName></Name></Person><AcademicRecord>"
        f"{award_xml * awards}<AcademicSession>{course_xml}</AcademicSession>"
        "</AcademicRecord></Student></CT:CollegeTranscript>"
    )


def ack_for(transcript_id: str) -> str:
    ns = spec.NS_V1_0_0["Acknowledgment"]
    return (
        f'<Ack:Acknowledgment xmlns:Ack="{ns}"><TransmissionData><DocumentID>A-1</DocumentID>'
        f"<RequestTrackingID>{transcript_id}</RequestTrackingID></TransmissionData>"
        "<Person><Name><FirstName>A</FirstName><LastName>B</LastName></Name></Person>"
        "<AcademicAwardTotal>1</AcademicAwardTotal><CourseTotal>3</CourseTotal></Ack:Acknowledgment>"
    )
