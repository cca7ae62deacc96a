"""The main job end to end (``workbench demo``), and what it leaves on disk: no secret, anywhere.

The scan covers everything under the demo's folder (the database, the reconcile, troubleshoot
and events notebooks with their HTML, two support bundles and the members of every zip) and
the demo's own output, and it looks for each secret and token as written, URL-encoded,
JSON-escaped, HTML-escaped and base64-encoded (at any alignment, as inside a Basic header).
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shlex
import shutil
import sqlite3
import stat
import subprocess
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

import workbench.sandbox
from tests.watched import WatchedSandbox, secrets_of
from workbench import reconcile
from workbench.bundle import make_bundle
from workbench.cli.demo import next_steps, run_demo
from workbench.report.runner import notebook_path, run_notebook
from workbench.store import Store


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, and every member of every zip in it, by name."""
    found: dict[str, bytes] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found[str(path.relative_to(root))] = data
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as archive:
                for member in archive.namelist():
                    found[f"{path.relative_to(root)}!{member}"] = archive.read(member)
    return found


def forms(secret: str) -> dict[str, bytes]:
    """``secret`` as it may be written: as is, URL-encoded, JSON- and HTML-escaped, and in
    base64 (standard and URL-safe), as the characters that encode it alone whatever bytes
    come before it (``user:secret`` in a Basic header encodes it at another offset)."""
    raw = secret.encode()
    found = {
        "raw": raw,
        "url-encoded": quote(secret, safe="").encode(),
        "form-encoded": quote_plus(secret).encode(),
        "json-escaped": json.dumps(secret)[1:-1].encode(),
        "html-escaped": html.escape(secret).encode(),
    }
    for name, encode in (("base64", base64.b64encode), ("base64url", base64.urlsafe_b64encode)):
        for offset in range(3):
            encoded = encode(b"\0" * offset + raw)
            first = -(-8 * offset // 6)  # the first character made of the secret's bits alone
            last = 8 * (offset + len(raw)) // 6  # past the last one
            found[f"{name}@{offset}"] = encoded[first:last]
    return found


def leaks(written: dict[str, bytes], secrets: list[str]) -> dict[str, list[str]]:
    """Per file, ``<first characters of the secret> as <form>`` for every form found in it."""
    found: dict[str, list[str]] = {}
    variants = [(s[:10], kind, form) for s in secrets for kind, form in forms(s).items()]
    for name, data in written.items():
        hits = [f"{head}… as {kind}" for head, kind, form in variants if form in data]
        if hits:
            found[name] = hits
    return found


def test_the_scan_finds_every_form_of_a_secret() -> None:
    secret = "sandbox-intl-secret-9f3a/+ &"
    basic = base64.b64encode(f"sis-demo:{secret}".encode())
    samples = {
        "raw": f"token={secret}".encode(),
        "url": f"?client_secret={quote(secret, safe='')}".encode(),
        "form": f"client_secret={quote_plus(secret)}".encode(),
        "json": json.dumps({"secret": secret}).encode(),
        "html": f"<td>{html.escape(secret)}</td>".encode(),
        "basic": b"Authorization: Basic " + basic,
        "urlsafe": base64.urlsafe_b64encode(b"xy" + secret.encode()),
        "clean": b"nothing here: sandbox-intl-secret",
    }
    assert set(leaks(samples, [secret])) == set(samples) - {"clean"}


def test_the_printed_explorer_command_starts_lab_as_make_lab_does(tmp_path: Path) -> None:
    """No news, update checks or PyPI lookups: `make lab`'s options, and `make demo` writes
    the settings overrides that stop the front end asking about news."""
    makefile = (Path(__file__).parents[1] / "Makefile").read_text(encoding="utf-8")
    lab_rule = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    options = set(re.findall(r"--LabApp\.\S+", lab_rule))
    assert len(options) == 3, lab_rule
    (explore,) = [step for step in next_steps(tmp_path / "demo.db", None) if " lab " in step]
    assert options <= set(shlex.split(explore))
    # Both take a port: make lab PORT=8899, and the printed command shows where it goes.
    assert "$(if $(PORT),--port=$(PORT))" in lab_rule
    words = shlex.split(explore)
    assert words[words.index("--port") + 1] == "8888"
    demo_rule = re.search(r"^demo:([^#\n]*)", makefile, re.M)
    assert demo_rule is not None and "$(LAB_OVERRIDES)" in demo_rule.group(1).split()


@pytest.mark.slow
def test_the_demo_pulls_sends_reports_and_leaves_no_secret_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(workbench.sandbox, "Sandbox", WatchedSandbox)  # its tokens, for the scan
    log: list[str] = []
    result = run_demo(log.append)
    text = "\n".join(log)

    assert result.ok, text
    assert result.report is not None
    html_path = Path(result.report.html_path)
    reports = tmp_path / "data" / "reports"
    assert html_path.is_file() and html_path.resolve().parent == reports
    assert f"HTML report: {html_path.resolve()}" in text
    assert Path(result.report.ipynb_path).is_file()
    private = [html_path, Path(result.report.ipynb_path)]  # a report names students
    assert {stat.S_IMODE(path.stat().st_mode) for path in private} == {0o600}
    db = Path(result.db).resolve()
    with Store(db) as store:
        runs = store.table("runs")
        rec = reconcile.reconcile(reconcile.load(store))
        mismatch = rec.exceptions[rec.exceptions["kind"] == "identity_mismatch"]["id"].iloc[0]
        bundle = make_bundle(store, mismatch, out_dir=tmp_path / "data" / "bundles")
    assert (runs[runs["kind"] == "pull"]["status"] == "ok").sum() == 2
    assert rec.headline["open_requests"] > 0 and rec.headline["transcripts_sent"] >= 5
    page = html_path.read_text(encoding="utf-8")
    assert str(rec.headline["open_requests"]) in page
    assert bundle.is_file()

    # The other two notebooks, into the same scanned folder.
    story = run_notebook(
        "troubleshoot",
        {"db": str(db), "request_id": mismatch, "bundle_dir": str(tmp_path / "bundles-nb")},
        output_dir=reports,
    )
    events = run_notebook("events", {"db": str(db)}, output_dir=reports)
    assert mismatch in story.html_path.read_text(encoding="utf-8")
    assert "Per pull run" in events.html_path.read_text(encoding="utf-8")
    assert list((tmp_path / "bundles-nb").glob("*.zip"))

    sandbox = result.sandbox
    assert sandbox is not None and len(sandbox.issued_tokens) >= 4
    # One clock: the partner's ends at about now, so nothing is dated in the future.
    assert sandbox.state.now <= datetime.now(UTC)
    assert max(i.date for i in sandbox.state.requests.values()) <= sandbox.state.now

    text += "\n" + _run_the_next_steps(text, db, tmp_path, monkeypatch)
    secrets = secrets_of(sandbox.settings.credentials) + sandbox.issued_tokens
    written = _files(tmp_path)
    names = list(written)
    for suffix in (".db", ".zip", ".html", ".ipynb"):
        assert any(name.endswith(suffix) for name in names), suffix
    for name in ("reconcile-", "troubleshoot-", "events-"):
        assert any(n.startswith(f"data/reports/{name}") and n.endswith(".html") for n in names)
    written["(the demo's output)"] = text.encode()
    assert leaks(written, secrets) == {}


def _runs(db: Path) -> int:
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        found = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    conn.close()
    return int(found)


def _run_the_next_steps(printed: str, db: Path, here: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each command the demo printed last, as printed, from its folder; their output.

    The troubleshoot and the report read the demo's database and pull nothing (no new run, no
    data/workbench.db); the explorer's command points it at the same database (its notebook,
    run here with that environment, opens it: it fails on a missing one).
    """
    steps = [line.strip()[2:] for line in printed.splitlines() if line.startswith("  $ ")]
    assert len(steps) == 3, printed
    troubleshoot, explore, report = steps
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    runs, out = _runs(db), []
    for command in (troubleshoot, report):
        done = subprocess.run(  # noqa: S602 - run as printed, so through a shell
            command, shell=True, cwd=here, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        out.append(done.stdout + done.stderr)
        html_path = Path(done.stdout.strip().splitlines()[-1])
        assert html_path.is_file() and html_path.suffix == ".html"
        if command is troubleshoot:
            critical = shlex.split(command)[2]
            assert critical in html_path.read_text(encoding="utf-8")
            with Store(db, read_only=True) as store:
                rec = reconcile.reconcile(reconcile.load(store))
            assert rec.exceptions["id"].iloc[0] == critical  # the most severe exception's id
            assert rec.exceptions["severity"].iloc[0] == "critical"
    assert _runs(db) == runs  # nothing was pulled into the demo's database
    assert not (here / "data" / "workbench.db").exists()  # nor into the default one

    assignment, jupyter, lab, notebook = shlex.split(explore)[:4]
    name, _, value = assignment.partition("=")
    assert (name, Path(value)) == ("WORKBENCH_DB", db.resolve())
    assert Path(jupyter).name == "jupyter" and shutil.which(jupyter) and lab == "lab"
    assert Path(notebook) == notebook_path("explore").resolve()
    monkeypatch.setenv("WORKBENCH_DB", value)
    run_notebook("explore", {}, output_dir=here / "explored")  # db=None: WORKBENCH_DB
    return "\n".join(out)
