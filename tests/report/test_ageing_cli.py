"""`workbench report --tz`: the report's times in the institution's zone, the store in UTC; an
unknown zone refused (exit 2) before anything runs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from lxml import html as lxml_html
from typer.testing import CliRunner

from tests.reconcile.builders import Partner
from workbench.cli import app
from workbench.store import Store


@pytest.fixture
def crafted_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A crafted store (a request just over the SLA, one dated after NOW); cwd in tmp_path and
    no WORKBENCH_* setting."""
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "crafted.db"
    with Store(db, busy_timeout_s=5) as store:
        partner = Partner(store)
        partner.request("R_OVER", days=5.1)
        partner.request("R_AT", days=5.0)
        partner.list_requests("R_OVER", "R_AT")
    return db


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["report", "--no-pull", *args])
    return result.exit_code, result.stdout, result.stderr


def _page_text(path: str) -> str:
    root = lxml_html.parse(path).getroot()
    for node in root.xpath("//style|//script"):
        node.drop_tree()
    return re.sub(r"\s+", " ", root.body.text_content())


@pytest.mark.slow
def test_the_report_shows_times_in_the_zone_asked_for(crafted_db: Path) -> None:
    code, out, err = _run(
        "--db", str(crafted_db), "--as-of", "2026-03-10T09:00Z", "--tz", "America/Toronto",
        "--output-dir", "reports",
    )  # fmt: skip
    assert code == 0, err
    page = _page_text(out.strip().splitlines()[-1])
    assert "As of 2026-03-10 05:00 EDT (America/Toronto; stored in UTC)" in page
    assert "no response for 5.1 days (SLA 5)" in page  # one decimal, past the SLA
    assert "R_AT" not in page.split("Exceptions by severity")[1]  # at the SLA is not overdue
    assert "Summary as of" not in page  # no stray console line at the bottom
    # the store stays UTC: the same report without --tz says UTC
    code, out, err = _run("--db", str(crafted_db), "--as-of", "2026-03-10T09:00Z",
                          "--output-dir", "reports")  # fmt: skip
    assert code == 0, err
    assert "As of 2026-03-10 09:00 UTC" in _page_text(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_profile_timezone_is_used_without_tz(
    crafted_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_TIMEZONE", "Europe/Paris")
    code, out, err = _run("--db", str(crafted_db), "--as-of", "2026-03-10T09:00Z",
                          "--output-dir", "reports")  # fmt: skip
    assert code == 0, err
    assert "As of 2026-03-10 10:00 CET (Europe/Paris; stored in UTC)" in _page_text(
        out.strip().splitlines()[-1]
    )


def test_an_unknown_zone_exits_2_before_anything_runs(crafted_db: Path) -> None:
    code, _, err = _run("--db", str(crafted_db), "--tz", "Mars/Olympus_Mons",
                          "--output-dir", "reports")  # fmt: skip
    assert code == 2
    assert "'Mars/Olympus_Mons' is not a time zone" in err and "America/Toronto" in err
    assert not Path("reports").exists() or not any(Path("reports").iterdir())
