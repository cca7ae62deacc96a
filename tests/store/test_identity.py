"""One store, one partner: a store records whom it holds once a call reached that partner,
refuses a pull from another partner without writing anything, and is re-pointed on request."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import workbench as wb
from tests.conftest import FAST
from tests.hostile.partner import HostilePartner, LoopbackServer, body
from tests.pesc.factories import Request, make_request
from workbench import pesc, spec
from workbench.cli import app
from workbench.cli.demo import run_demo
from workbench.config import load_profile
from workbench.errors import ConfigError
from workbench.http.answers import request_path
from workbench.sandbox import Sandbox
from workbench.store import Store
from workbench.store.identity import check_partner

IDENTITY = (
    "partner_profile",
    "partner_gateway_url",
    "partner_gateway_auth_url",
    "partner_exchange_url",
    "partner_exchange_auth_url",
)


def _files(db: Path) -> dict[str, bytes]:
    """Every file of the database (the file and any -wal, -shm, -journal) and its bytes."""
    return {p.name: p.read_bytes() for p in sorted(db.parent.iterdir())}


def test_the_first_pull_records_whom_the_store_holds(sandbox: Sandbox, tmp_path: Path) -> None:
    with wb.connect(env=sandbox.env, db=tmp_path / "wb.db") as w:
        w.pull(progress=False)
        assert [w.store.meta(k) for k in IDENTITY] == [
            "env", sandbox.gateway_url, sandbox.auth_url, sandbox.exchange_url, sandbox.auth_url,
        ]  # fmt: skip


def test_a_pull_from_another_partner_is_refused_and_writes_nothing(
    sandbox_factory, tmp_path: Path
) -> None:
    first, other = sandbox_factory(), sandbox_factory()
    db = tmp_path / "store" / "wb.db"
    with wb.connect(env=first.env, db=db) as w:
        w.pull(progress=False)
    before = _files(db)
    env = {k: None for k in os.environ if k.startswith("WORKBENCH_")}
    done = CliRunner().invoke(app, ["pull", "--db", str(db)], env={**env, **other.env})
    assert done.exit_code == 2, done.output
    assert other.exchange_url in done.output and first.exchange_url in done.output
    assert "--db" in done.output
    assert _files(db) == before
    with wb.connect(env=other.env, db=db) as w, pytest.raises(ConfigError, match="another"):
        w.pull(progress=False)
    assert _files(db) == before


def test_the_embedded_sandbox_never_touches_a_store_of_a_real_partner(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "demo.db"
    with wb.connect(env=sandbox.env, db=db) as w:  # a partner at real URLs, as far as we know
        w.pull(progress=False)
    before = _files(db)
    with wb.connect("sandbox", db=db) as w, pytest.raises(ConfigError, match="embedded-sandbox"):
        w.pull(progress=False)
    with pytest.raises(ConfigError, match=str(db)):
        run_demo(lambda _: None, db=db, report=False)
    assert _files(db) == before


def test_the_embedded_sandbox_is_one_partner_whatever_its_port(tmp_path: Path) -> None:
    db = tmp_path / "wb.db"
    for _ in range(2):
        with wb.connect("sandbox", db=db) as w:
            assert w.pull(progress=False).status == "ok"
            assert w.store.meta("partner_exchange_url") == "embedded-sandbox"


def test_a_store_without_an_identity_adopts_the_first_pull(sandbox: Sandbox, tmp_path: Path):
    db = tmp_path / "wb.db"
    Store(db).close()  # as an older workbench left it: no partner recorded
    with wb.connect(env=sandbox.env, db=db) as w:
        assert w.pull(progress=False).status == "ok"
        assert w.store.meta("partner_exchange_auth_url") == sandbox.auth_url


def _unset() -> dict[str, str | None]:
    return {k: None for k in os.environ if k.startswith("WORKBENCH_")}


def test_a_store_first_created_by_a_send_records_its_partner(tmp_path: Path) -> None:
    db, rid = tmp_path / "prod.db", "C20150729002337"
    xml = make_request(Request())
    with HostilePartner() as partner:
        detail = [{"RequestID": rid, "RequestDate": "2026-03-02T09:00:00Z", "PESCXML": xml}]
        partner.answer("GET", request_path(spec.SUPPLIER_REQUEST_PATH, rid), body(detail))
        partner.answer("POST", request_path(spec.SUPPLIER_RESPONSES_PATH, rid), b"", 500)
        with wb.connect(env=partner.env, db=db) as w:
            response = pesc.build_response(xml, status="TranscriptRequestReceived")
            with pytest.raises(wb.WorkbenchError):
                w.supplier.send_response(rid, response)
            assert w.store.meta("partner_exchange_url") == partner.url
    before = _files(db)
    with wb.connect("sandbox", db=db) as w, pytest.raises(ConfigError, match="another"):
        w.pull(progress=False)
    assert _files(db) == before


def test_the_same_partner_is_recognised_whatever_the_spelling() -> None:
    secret = "abcd1234efgh"
    supplier = {
        "WORKBENCH_EXCHANGE_URL": "https://etms.ocas.ca",
        "WORKBENCH_EXCHANGE_AUTH_URL": "https://etms-id.ocas.ca",
        "WORKBENCH_SUPPLIER_CLIENT_ID": "c",
        "WORKBENCH_SUPPLIER_CLIENT_SECRET": secret,
    }
    domestic = {
        **supplier,
        "WORKBENCH_AUTH_URL": "https://gw-id.ocas.ca",
        "WORKBENCH_GATEWAY_URL": "https://gw.ocas.ca",
        "WORKBENCH_SUBSCRIPTION_KEY": secret,
        "WORKBENCH_DOMESTIC_CLIENT_ID": "d",
        "WORKBENCH_DOMESTIC_CLIENT_SECRET": secret,
    }
    recorded = load_profile(env=supplier).identity()
    for same in (
        domestic,  # adds a side the store has not seen
        {**supplier, "WORKBENCH_EXCHANGE_URL": "https://ETMS.ocas.ca/"},
        {**supplier, "WORKBENCH_EXCHANGE_URL": "https://etms.ocas.ca:443"},
        {**supplier, "WORKBENCH_EXCHANGE_AUTH_URL": "https://etms-id.OCAS.ca:443/"},
    ):
        check_partner("x.db", recorded, load_profile(env=same).identity())
    both = load_profile(env=domestic).identity()
    for other in (
        {**domestic, "WORKBENCH_GATEWAY_URL": "https://gw.other.ca"},
        {**domestic, "WORKBENCH_EXCHANGE_AUTH_URL": "https://etms-id.other.ca"},
        {**supplier, "WORKBENCH_EXCHANGE_URL": "https://etms.ocas.ca:8443"},
    ):
        with pytest.raises(ConfigError, match="another partner"):
            check_partner("x.db", both, load_profile(env=other).identity())


def test_a_side_the_store_has_not_seen_is_recorded(sandbox_factory, tmp_path: Path) -> None:
    sb, other = sandbox_factory(), sandbox_factory()
    db = tmp_path / "wb.db"
    gateway = ("WORKBENCH_INTL_", "WORKBENCH_DOMESTIC_")
    exchange_only = {k: v for k, v in sb.env.items() if not k.startswith(gateway)}
    with wb.connect(env=exchange_only, db=db) as w:
        assert w.pull(progress=False).status == "ok"
        assert w.store.meta("partner_gateway_url") is None
    with wb.connect(env=sb.env, db=db) as w:  # the college adds its domestic credentials
        assert w.pull(progress=False).status == "ok"
        assert w.store.meta("partner_gateway_url") == sb.gateway_url
    with wb.connect(env=other.env, db=db) as w, pytest.raises(ConfigError, match="another"):
        w.pull(progress=False)


def test_another_partners_store_can_be_read_but_not_written(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "prod.db"
    with wb.connect(env=sandbox.env, db=db) as w:
        w.pull(progress=False)
    before = _files(db)
    xml = make_request(Request())
    response = pesc.build_response(xml, status="TranscriptRequestReceived")
    with wb.connect("sandbox", db=db) as w:
        assert not w.store.table("runs").empty  # reading is fine whatever partner it holds
        with pytest.raises(ConfigError, match="only read"):
            w.pull(progress=False)
        with pytest.raises(ConfigError, match="only read"):
            w.supplier.send_response("C20150729002337", response)
        w.supplier.pending_requests()  # a call of this workbench is not recorded in it
    assert _files(db) == before
    done = CliRunner().invoke(
        app, ["pull", "--db", str(db)], env={**_unset(), "WORKBENCH_PROFILE": "sandbox"}
    )
    assert done.exit_code == 2, done.output
    assert _files(db) == before


def test_a_store_with_the_former_identity_keys_is_still_recognised(
    sandbox_factory, tmp_path: Path
) -> None:
    sb, other = sandbox_factory(), sandbox_factory()
    db = tmp_path / "wb.db"
    with Store(db) as store:  # an auth URL under a key no longer read
        for key, value in {
            "partner_profile": "env",
            "partner_auth_url": sb.auth_url,
            "partner_gateway_url": sb.gateway_url,
            "partner_exchange_url": sb.exchange_url,
        }.items():
            store.set_meta(key, value)
    with wb.connect(env=other.env, db=db) as w, pytest.raises(ConfigError, match="another"):
        w.pull(progress=False)
    with wb.connect(env=sb.env, db=db) as w:
        assert w.pull(progress=False).status == "ok"
        assert w.store.meta("partner_gateway_auth_url") == sb.auth_url


def _portal(handler, _body: bytes) -> None:
    """A web server at a mistyped address: 200 and an HTML page, whatever is asked."""
    page = b"<html><body>Welcome</body></html>"
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(len(page)))
    handler.end_headers()
    handler.wfile.write(page)


@pytest.mark.parametrize("mistyped", ["nothing there", "a web page"])
def test_a_first_pull_at_a_mistyped_url_binds_nothing_and_the_right_one_then_pulls(
    sandbox: Sandbox, tmp_path: Path, mistyped: str
) -> None:
    db = tmp_path / "wb.db"
    right = {**_unset(), **sandbox.env, **FAST}
    portal = LoopbackServer(_portal)
    try:
        wrong_url = sandbox.exchange_url + "x" if mistyped == "nothing there" else portal.url
        wrong = {**right, "WORKBENCH_EXCHANGE_URL": wrong_url, "WORKBENCH_GATEWAY_URL": wrong_url,
                 "WORKBENCH_MAX_ATTEMPTS": "1"}  # fmt: skip
        done = CliRunner().invoke(app, ["pull", "--db", str(db)], env=wrong)
    finally:
        portal.close()
    assert done.exit_code == 1, done.output  # nothing read
    with Store(db, read_only=True) as store:
        assert [store.meta(k) for k in IDENTITY] == [None] * len(IDENTITY)
        assert not store.table("calls").empty  # what was tried is on record
    done = CliRunner().invoke(app, ["pull", "--db", str(db)], env=right)
    assert done.exit_code == 0, done.output
    with Store(db, read_only=True) as store:
        assert store.meta("partner_exchange_url") == sandbox.exchange_url


def test_repoint_asks_then_records_the_partners_new_address(
    sandbox_factory, tmp_path: Path
) -> None:
    before_move, after_move = sandbox_factory(), sandbox_factory()  # the partner's new host
    db = tmp_path / "wb.db"
    old = {**_unset(), **before_move.env, **FAST}
    new = {**_unset(), **after_move.env, **FAST}
    assert CliRunner().invoke(app, ["pull", "--db", str(db)], env=old).exit_code == 0
    refused = CliRunner().invoke(app, ["pull", "--db", str(db)], env=new)
    assert refused.exit_code == 2, refused.output
    assert "workbench store repoint" in " ".join(refused.output.split())
    files = _files(db)

    declined = CliRunner().invoke(app, ["store", "repoint", "--db", str(db)], env=new, input="n\n")
    assert declined.exit_code == 1, declined.output
    shown = " ".join(declined.output.split())
    assert f"partner_exchange_url: {before_move.exchange_url} -> {after_move.exchange_url}" in shown
    assert f"partner_gateway_url: {before_move.gateway_url} -> {after_move.gateway_url}" in shown
    assert "Re-point it?" in shown and "Nothing was changed." in shown
    assert _files(db) == files

    done = CliRunner().invoke(app, ["store", "repoint", "--db", str(db)], env=new, input="y\n")
    assert done.exit_code == 0, done.output
    with Store(db, read_only=True) as store:
        assert [store.meta(k) for k in IDENTITY] == [
            "env", after_move.gateway_url, after_move.auth_url, after_move.exchange_url,
            after_move.auth_url,
        ]  # fmt: skip
        runs = store.table("runs", where="kind = 'repoint'")
    assert len(runs) == 1 and runs["status"].tolist() == ["ok"]
    assert json.loads(runs["summary"].iloc[0])["repointed"]["partner_exchange_url"] == {
        "from": before_move.exchange_url, "to": after_move.exchange_url,
    }  # fmt: skip
    assert CliRunner().invoke(app, ["pull", "--db", str(db)], env=new).exit_code == 0
    again = CliRunner().invoke(app, ["store", "repoint", "--db", str(db), "--yes"], env=new)
    assert again.exit_code == 0 and "nothing changed" in again.output


def test_repoint_without_a_store_is_a_configuration_error(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        app, ["store", "repoint", "--db", str(tmp_path / "none.db"), "--yes"], env=_unset()
    )
    assert done.exit_code == 2, done.output
    assert not (tmp_path / "none.db").exists()


def test_a_sandbox_store_is_never_re_pointed_to_a_partner_nor_the_reverse(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    made_up, real = tmp_path / "sandbox.db", tmp_path / "real.db"
    assert CliRunner().invoke(app, ["pull", "--db", str(made_up)], env=_unset()).exit_code == 0
    partner = {**_unset(), **sandbox.env, **FAST}  # a partner, as far as the store can tell
    assert CliRunner().invoke(app, ["pull", "--db", str(real)], env=partner).exit_code == 0
    for db, env in ((made_up, partner), (real, _unset())):
        refused = CliRunner().invoke(app, ["pull", "--db", str(db)], env=env)
        assert refused.exit_code == 2 and "repoint" not in refused.output
        files = _files(db)
        done = CliRunner().invoke(app, ["store", "repoint", "--db", str(db), "--yes"], env=env)
        assert done.exit_code == 2, done.output
        assert "is never re-pointed" in " ".join(done.output.split())
        assert _files(db) == files
