"""``workbench call ROLE PATH``: an ad hoc GET, as in Postman, with everything handled."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from tests.conftest import FAST
from tests.watched import secrets_of
from workbench.cli import app
from workbench.sandbox import Sandbox


def _call(sb: Sandbox, db: Path, *args: str):
    env = {**sb.env, **FAST, "WORKBENCH_DB": str(db)}
    return CliRunner().invoke(app, ["call", *args], env=env)


def test_a_read_prints_the_answer_and_is_recorded(sandbox: Sandbox, tmp_path: Path) -> None:
    db = tmp_path / "wb.db"
    result = _call(sandbox, db, "domestic", "/apply/domestic/api/v1/events/peek",
                   "--param", "Count=2")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 2
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT operation, method, url, status FROM calls").fetchall()
    conn.close()
    (read,) = [r for r in rows if r[0] == "read"]
    assert read[1:] == ("GET", f"{sandbox.gateway_url}/apply/domestic/api/v1/events/peek?Count=2",
                        200)  # fmt: skip
    for secret in secrets_of(sandbox.credentials):
        assert secret not in result.output


def test_an_error_answer_exits_1_with_the_partners_message(sandbox, tmp_path) -> None:
    result = _call(sandbox, tmp_path / "wb.db", "supplier", "/api/transcriptrequests/R-0")
    assert result.exit_code == 1
    assert "Cannot find transcript request ID." in result.output


def test_only_a_path_below_the_interface_is_read(sandbox: Sandbox, tmp_path: Path) -> None:
    for path in ("https://elsewhere.example/x", "//elsewhere.example/x", "api/x",
                 "/api/../../identity", "/api/\x1b[2Jx", "/api/%2e%2e/%2E%2E/identity",
                 "/api/x#frag", "/api/" + "x" * 70_000, "/api/\xff", "/api/é"):  # fmt: skip
        result = _call(sandbox, tmp_path / "wb.db", "supplier", path)
        assert result.exit_code == 2, path
        assert "PATH" in result.output and "\x1b" not in result.output
    assert _call(sandbox, tmp_path / "wb.db", "admin", "/x").exit_code == 2
    assert not [h for h in sandbox.hits if "elsewhere" in h[1] or "identity" in h[1]]


def test_an_answer_echoing_a_long_secret_of_ours_is_masked_a_short_one_kept(tmp_path) -> None:
    """A 2xx answer is the partner's document, never rewritten, but for an echo of a secret
    long enough that no document spells it by chance."""
    from tests.hostile.partner import HostilePartner, body
    from workbench import spec

    long_key = "k7Qz9Wp2Lm4Xv8Rt6Yn3Bc5Hd1Jf0"
    with HostilePartner() as partner:
        partner.answer("GET", spec.PEEK_EVENTS_PATH, body([{"note": long_key, "year": "2026"}]))
        for key in (long_key, "2026"):
            env = {**partner.env, "WORKBENCH_SUBSCRIPTION_KEY": key,
                   "WORKBENCH_DB": str(tmp_path / f"{len(key)}.db")}  # fmt: skip
            result = CliRunner().invoke(app, ["call", "domestic", spec.PEEK_EVENTS_PATH], env=env)
            assert result.exit_code == 0, result.output
            assert '"year": "2026"' in result.stdout  # the document, as written
            assert (long_key in result.stdout) is (key != long_key)  # an echo of ours: masked
