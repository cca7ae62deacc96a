"""The main job end to end (``workbench demo``), and what it leaves on disk: no secret, anywhere."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from workbench import reconcile
from workbench.bundle import make_bundle
from workbench.demo import run_demo
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


@pytest.mark.slow
def test_the_demo_pulls_sends_reports_and_leaves_no_secret_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    log: list[str] = []
    result = run_demo(log.append, details=2)
    text = "\n".join(log)

    assert result.ok, text
    assert result.report is not None
    html = Path(result.report.html_path)
    assert html.is_file() and html.resolve().parent == tmp_path / "data" / "reports"
    assert f"HTML report: {html.resolve()}" in text
    assert Path(result.report.ipynb_path).is_file()
    with Store(result.db) as store:
        runs = store.table("runs")
        rec = reconcile.reconcile(reconcile.load(store))
        mismatch = rec.exceptions[rec.exceptions["kind"] == "identity_mismatch"]["id"].iloc[0]
        bundle = make_bundle(store, mismatch, out_dir=tmp_path / "data" / "bundles")
    assert (runs[runs["kind"] == "pull"]["status"] == "ok").sum() == 2
    assert rec.headline["open_requests"] > 0 and rec.headline["transcripts_sent"] >= 5
    page = html.read_text(encoding="utf-8")
    assert str(rec.headline["open_requests"]) in page
    assert bundle.is_file()

    sandbox = result.sandbox
    assert sandbox is not None and len(sandbox.issued_tokens) >= 4
    secrets = sandbox.settings.credentials.secrets() + sandbox.issued_tokens
    written = _files(tmp_path)
    assert any(name.endswith(".html") for name in written)
    assert any(name.endswith(".db") for name in written)
    written["(the demo's output)"] = text.encode()
    leaks = {
        name: [secret[:10] for secret in secrets if secret.encode() in data]
        for name, data in written.items()
    }
    assert {name: found for name, found in leaks.items() if found} == {}
