"""The open points of DESIGN §3 as sandbox settings: each has its answers (``answers()``), the
suite tries each non-default one alone (``open_points()``), ``unknown_partner(seed)`` draws a
combination; and the settings without a test elsewhere: the error body, the interfaces an
account has, a trailing slash refused."""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox.helpers import FIXED_START, open_points
from tests.sandbox.wire import exchange, path, request_token, token_form
from workbench import spec
from workbench.sandbox import SandboxSettings
from workbench.sandbox.app import NOT_FOUND_MESSAGE
from workbench.sandbox.settings import (
    ACCOUNT_INTERFACES,
    answers,
    fault_changes,
    setting_changes,
    unknown_partner,
)


def test_every_open_point_has_its_default_first_and_is_settable():
    defaults = SandboxSettings()
    for name, values in answers().items():
        assert getattr(defaults, name) == values[0], name
        for value in values[1:]:
            assert (name, value) in open_points()
            assert setting_changes([f"{name}={value}"]) == {name: value}


def test_fault_changes_read_typed_values():
    assignments = ["error_rate=0.5", "path_pattern=no_response", "token_ttl=5"]
    assert fault_changes(assignments) == {
        "error_rate": 0.5,
        "path_pattern": "no_response",
        "token_ttl": 5,
    }


@pytest.mark.parametrize(
    ("assignment", "says"),
    [
        ("nope=1", "NAME=VALUE"),
        ("latency_ms", "NAME=VALUE"),
        ("list_shape=null", "NAME=VALUE"),  # the tests' hostile answers are no product fault
        ("error_rate=many", "takes a float"),
        ("token_ttl=soon", "takes a int"),
    ],
)
def test_fault_changes_refuse_what_they_cannot_read(assignment, says):
    with pytest.raises(ValueError, match=says):
        fault_changes([assignment])


def test_the_cli_refuses_an_unknown_fault():
    from typer.testing import CliRunner

    from workbench.cli import app

    result = CliRunner().invoke(app, ["sandbox", "--port", "0", "--fault", "list_shape=list"])
    assert result.exit_code == 2
    assert "list_shape" in result.output


def test_an_unknown_partner_is_the_same_for_the_same_seed_and_varies_with_it():
    assert unknown_partner(7, start=FIXED_START) == unknown_partner(7, start=FIXED_START)
    drawn = [unknown_partner(seed) for seed in range(40)]
    for name, values in answers().items():
        assert {getattr(d, name) for d in drawn} == set(values), name  # every answer is drawn
    assert unknown_partner(7, interfaces="gateway").interfaces == "gateway"


@pytest.mark.parametrize("style", ["message", "problem", "text"])
def test_error_answers_are_written_as_the_partner_writes_them(sandbox_factory, style):
    sb = sandbox_factory(error_body=style, initial_requests=0)
    with exchange(sb, "supplier") as client:
        empty = client.get(spec.SUPPLIER_PENDING_PATH)
        unrouted = client.get("/no/such/route")
    for answer, status, said in ((empty, 400, spec.NO_REQUESTS_FOUND),
                                 (unrouted, 404, NOT_FOUND_MESSAGE)):  # fmt: skip
        assert answer.status_code == status
        kind = answer.headers["content-type"]
        if style == "message":
            assert answer.json() == {"Message": said}
        elif style == "problem":
            assert kind.startswith("application/problem+json")
            assert answer.json()["detail"] == said and answer.json()["status"] == status
        else:
            assert kind.startswith("text/plain") and answer.text == said


@pytest.mark.parametrize("interfaces", list(ACCOUNT_INTERFACES))
def test_an_account_gets_credentials_for_its_interfaces_only(sandbox_factory, interfaces):
    sb = sandbox_factory(interfaces=interfaces)
    has = ACCOUNT_INTERFACES[interfaces]
    assert ("WORKBENCH_GATEWAY_URL" in sb.env) is ("international" in has or "domestic" in has)
    assert ("WORKBENCH_EXCHANGE_URL" in sb.env) is ("supplier" in has)
    for role, prefix in (("international", "INTL"), ("domestic", "DOMESTIC"),
                         ("supplier", "SUPPLIER"), ("consumer", "CONSUMER")):  # fmt: skip
        assert (f"WORKBENCH_{prefix}_CLIENT_ID" in sb.env) is (role in has)
        answer = request_token(sb, token_form(sb, role))
        assert answer.status_code == (200 if role in has else 401), role  # no such client


def test_an_etms_account_of_one_role_serves_that_role_only(sandbox_factory):
    sb = sandbox_factory(interfaces="supplier", exchange_login="etms")
    env = sb.env
    assert "WORKBENCH_EXCHANGE_USERNAME" not in env  # not the shared account of both roles
    login = httpx.post(
        sb.exchange_url + spec.ETMS_LOGIN_PATH,
        data={
            "Username": env["WORKBENCH_SUPPLIER_USERNAME"],
            "Password": env["WORKBENCH_SUPPLIER_PASSWORD"],
            "grant_type": "password",
        },
    )
    bearer = {"Authorization": f"Bearer {login.json()['access_token']}"}
    with httpx.Client(base_url=sb.exchange_url, headers=bearer) as client:
        assert client.get(spec.SUPPLIER_PENDING_PATH).status_code == 200
        assert client.get(spec.CONSUMER_PENDING_PATH).status_code == 403


@pytest.mark.parametrize(("trailing_slash", "status"), [("accepted", 200), ("refused", 404)])
def test_a_trailing_slash_on_an_id_is_accepted_or_not_found(sandbox_factory, trailing_slash,
                                                            status):  # fmt: skip
    sb = sandbox_factory(trailing_slash=trailing_slash)
    request_id = sb.pending_request_ids()[0]
    with exchange(sb, "supplier") as client:
        assert client.get(path(spec.SUPPLIER_REQUEST_PATH, request_id)).status_code == 200
        slashed = client.get(path(spec.SUPPLIER_REQUEST_PATH, request_id) + "/")
    assert slashed.status_code == status
