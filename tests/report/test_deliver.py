"""`workbench report --notify/--mail-to`: the summary reaches a webhook and a mail server on
127.0.0.1, holds no student name and no secret, and a failed delivery keeps the report.

The report runs a small notebook (``WORKBENCH_NOTEBOOKS``) that reconciles the session's
populated store, as the project's notebook does, without the charts; the summary's figures are
the store's, counted by ``workbench report`` itself.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from typer.testing import CliRunner

from tests.report.test_freshness import age_store
from tests.report.test_runner import write_notebook
from tests.watched import secrets_of
from workbench import reconcile
from workbench.cli import app
from workbench.report import open_store
from workbench.sandbox import SandboxSettings
from workbench.store import Store

SMTP_PASSWORD = "mail-relay-Pa55word-x9"
HOOK_TOKEN = "T0001/B0002/hookTokenQ7x"
RECONCILE_CELL = (
    "from workbench import reconcile, report\n"
    "store = report.open_store(db)\n"
    "reconcile.reconcile(reconcile.load(store, as_of=as_of), sla_days=sla_days)"
)


@dataclass
class Hook:
    """A webhook receiver on 127.0.0.1: what it was posted, and the status it answers."""

    url: str
    status: int = 200
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@dataclass
class Mailbox:
    """An SMTP server on 127.0.0.1 (aiosmtpd) that wants a login; the mails it took."""

    port: int
    mails: list[EmailMessage] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.mails.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 OK"

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        assert isinstance(auth_data, LoginPassword)
        login, password = auth_data.login.decode(), auth_data.password.decode()
        self.logins.append((login, password))
        return AuthResult(success=(login, password) == ("reports", SMTP_PASSWORD))


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return small_reconcile(tmp_path, monkeypatch)


def small_reconcile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No WORKBENCH_* setting but a notebooks folder holding a small ``reconcile`` (and a
    ``broken`` one); the current folder ``tmp_path``."""
    for name in list(os.environ):
        if name.startswith("WORKBENCH_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    nbs = tmp_path / "notebooks"
    parameters = "db = None\nas_of = None\nsla_days = 5.0\npull = False\nprofile = None"
    write_notebook(nbs, "reconcile", parameters, RECONCILE_CELL)
    write_notebook(nbs, "broken", "db = None", "value = {}['missing']")
    monkeypatch.setenv("WORKBENCH_NOTEBOOKS", str(nbs))
    return tmp_path


@pytest.fixture
def hook() -> Iterator[Hook]:
    received = Hook(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            received.bodies.append(json.loads(self.rfile.read(length)))
            received.paths.append(self.path)
            self.send_response(received.status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    received.url = f"http://127.0.0.1:{server.server_address[1]}/services/{HOOK_TOKEN}"
    yield received
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def mailbox(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Iterator[Mailbox]:
    """The mail server, and the profile's settings pointing at it (password by reference)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    box = Mailbox(port)
    controller = Controller(
        box,
        hostname="127.0.0.1",
        port=port,
        authenticator=box.authenticate,
        auth_require_tls=False,
    )
    controller.start()
    (folder / "workbench.toml").write_text(
        "[profiles.sandbox.smtp]\n"
        f'host = "127.0.0.1"\nport = {port}\ntls = "none"\n'
        'username = "reports"\npassword_env = "TEST_SMTP_PASSWORD"\n'
        'from = "workbench@college.example"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("TEST_SMTP_PASSWORD", SMTP_PASSWORD)
    yield box
    controller.stop()


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def student_names(db: Path) -> set[str]:
    """Every student name the store holds (requests and transcripts received)."""
    names = set()
    with Store(db, read_only=True) as store:
        for table in ("transcript_requests", "transcripts_received"):
            frame = store.table(table)
            for column in ("student_first_name", "student_middle_name", "student_last_name"):
                if column in frame:
                    names |= {str(n) for n in frame[column].dropna() if str(n).strip()}
    assert len(names) > 10, "the scenario should hold students"
    return names


def secrets() -> list[str]:
    return [*secrets_of(SandboxSettings().credentials), SMTP_PASSWORD, HOOK_TOKEN]


def assert_clean(text: str, db: Path) -> None:
    """``text`` names no student of the store and holds no secret."""
    for name in student_names(db):
        assert not re.search(rf"\b{re.escape(name)}\b", text), name
    for secret in secrets():
        assert secret not in text


@pytest.mark.slow
def test_the_webhook_and_the_mail_carry_the_summary_and_no_student_data(
    folder, report_copy, hook, mailbox
):
    result = invoke(
        "report", "--no-pull", "--db", str(report_copy), "--notify", hook.url,
        "--mail-to", "ops@college.example", "--mail-to", "dean@college.example",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    html = Path(result.stdout.strip().splitlines()[-1])
    with open_store(report_copy) as store:  # the store as the summary counted it
        rec = reconcile.reconcile(reconcile.load(store), sla_days=5.0)

    # the webhook: one JSON post, Slack's and Teams' text, the figures as data
    assert len(hook.bodies) == 1 and hook.paths == [f"/services/{HOOK_TOKEN}"]
    body = hook.bodies[0]
    data = body["workbench"]
    assert isinstance(body["text"], str) and body["blocks"][0]["type"] == "section"
    assert data["report"] == str(html)
    assert data["exceptions"] == len(rec.exceptions) > 0
    assert data["exceptions_by_severity"] == rec.headline["exceptions_by_severity"]
    assert sum(data["exceptions_by_kind"].values()) == data["exceptions"]
    assert data["headline"]["open_requests"] == rec.headline["open_requests"]
    assert f"{data['exceptions']} exceptions" in body["text"]
    with Store(report_copy, read_only=True) as store:
        runs = store.table("runs", where="kind = 'pull'").sort_values("finished_at")
    fresh = data["freshness"]
    assert fresh["last_pull_at"] == runs["finished_at"].iloc[-1].isoformat()
    assert fresh["last_pull_status"] == runs["status"].iloc[-1]
    assert fresh["hours_old"] >= 0
    assert fresh["stale"] is False and fresh["max_age_hours"] == 24  # the default limit
    assert "Stale: no" in body["text"]
    assert_clean(json.dumps(body), report_copy)

    # the mail: logged in with the password from the variable, the same text, no attachment
    assert mailbox.logins == [("reports", SMTP_PASSWORD)]
    (mail,) = mailbox.mails
    assert mail["To"] == "ops@college.example, dean@college.example"
    assert mail["From"] == "workbench@college.example"
    assert f"{data['exceptions']} exceptions" in mail["Subject"]
    assert not list(mail.iter_attachments())
    text = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert body["text"] in text
    assert_clean(mail.as_string(), report_copy)
    assert "Sent the summary: webhook http://127.0.0.1:" in result.stderr
    assert HOOK_TOKEN not in result.output


@pytest.mark.slow
def test_the_summary_of_a_stale_store_says_so_and_max_age_exits_1(folder, report_copy, hook):
    age_store(report_copy, 30)  # every pull 30 hours older
    result = invoke(
        "report", "--no-pull", "--db", str(report_copy), "--notify", hook.url, "--max-age", "24"
    )
    assert result.exit_code == 1, result.output
    assert "--max-age 24" in result.stderr
    (body,) = hook.bodies
    fresh = body["workbench"]["freshness"]
    assert fresh["stale"] is True and fresh["max_age_hours"] == 24 and fresh["hours_old"] >= 30
    assert "Stale: yes" in body["text"]
    assert_clean(json.dumps(body), report_copy)


@pytest.mark.slow
def test_the_summary_judges_with_the_limit_the_exit_code_uses(folder, report_copy, hook):
    age_store(report_copy, 2)  # two hours old: stale under --max-age 1, fresh under the default
    result = invoke(
        "report", "--no-pull", "--db", str(report_copy), "--notify", hook.url, "--max-age", "1"
    )
    assert result.exit_code == 1, result.output
    (body,) = hook.bodies
    fresh = body["workbench"]["freshness"]
    assert fresh["stale"] is True and fresh["max_age_hours"] == 1


@pytest.mark.slow
def test_the_mail_never_carries_the_report(folder, report_copy, mailbox):
    """The report names students: the mail says where it is, and holds none of it."""
    args = ("report", "--no-pull", "--db", str(report_copy), "--mail-to", "ops@college.example")
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    html = Path(result.stdout.strip().splitlines()[-1])
    (mail,) = mailbox.mails
    assert not list(mail.iter_attachments())
    assert f"Report: {html}" in mail.get_body(("plain",)).get_content()
    assert "--attach" not in invoke("report", "--help").output


@pytest.mark.slow
def test_a_failed_delivery_keeps_the_report_and_exits_1(folder, report_copy, hook):
    hook.status = 500
    result = invoke("report", "--no-pull", "--db", str(report_copy), "--notify", hook.url)
    assert result.exit_code == 1
    html = Path(result.stdout.strip().splitlines()[-1])
    assert html.is_file() and html.suffix == ".html"
    assert "webhook http://127.0.0.1:" in result.stderr
    assert "answered 500" in result.stderr and "The report is written." in result.stderr
    assert HOOK_TOKEN not in result.output
    # nobody listening: refused at once, same verdict
    closed = hook.url.replace(hook.url.split("/")[2], "127.0.0.1:9")
    refused = invoke("report", "--no-pull", "--db", str(report_copy), "--notify", closed)
    assert refused.exit_code == 1 and "could not be reached" in refused.stderr


@pytest.mark.slow
def test_a_failed_notebook_still_notifies_without_figures(folder, report_copy, hook):
    args = ("report", "--notebook", "broken", "--no-pull", "--db", str(report_copy))
    result = invoke(*args, "--notify", hook.url)
    assert result.exit_code == 1
    (body,) = hook.bodies
    assert "FAILED" in body["text"] and body["workbench"]["failed"] is True
    assert "exceptions" not in body["workbench"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--notify", "ftp://hooks.example/x"), "http(s) URL"),
        (("--mail-to", "not-an-address"), "not a mail address"),
        (("--mail-to", "ops@college.example"), "WORKBENCH_SMTP_HOST"),
    ],
)
def test_delivery_options_are_checked_before_anything_runs(folder, args, message):
    result = invoke("report", "--no-pull", "--db", str(folder / "any.db"), *args)
    assert result.exit_code == 2
    assert message in " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    assert not (folder / "data" / "reports").exists()


def test_a_mail_server_without_a_sender_is_a_configuration_error(folder, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SMTP_HOST", "127.0.0.1")
    result = invoke(
        "report", "--no-pull", "--db", str(folder / "any.db"), "--mail-to", "a@b.example"
    )
    assert result.exit_code == 2
    assert "WORKBENCH_SMTP_FROM" in result.output


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('password = "mail-relay-Pa55word-x9"', "secrets are not kept in files"),
        ('tls = "maybe"', "starttls, ssl, none"),
        ("port = 70000", "at most 65535"),
        ('username = "reports"', "TEST_UNSET_PASSWORD"),
        ('colour = "blue"', "Unknown setting 'colour'"),
    ],
)
def test_the_profiles_mail_server_is_checked_when_it_loads(tmp_path, table, message):
    from workbench.config import load_profile
    from workbench.errors import ConfigError

    path = tmp_path / "workbench.toml"
    extra = 'password_env = "TEST_UNSET_PASSWORD"\n' if "username" in table else ""
    path.write_text(f'[profiles.prod.smtp]\nhost = "smtp.example"\n{table}\n{extra}')
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        load_profile("prod", env={}, config_path=path)
    assert SMTP_PASSWORD not in str(raised.value)


def test_the_mail_password_is_a_secret_of_the_profile(tmp_path):
    from workbench.config import load_profile

    path = tmp_path / "workbench.toml"
    path.write_text('[profiles.prod.smtp]\nhost = "smtp.example"\ntls = "ssl"\n'
                    'username = "reports"\npassword_env = "MAIL_PW"\n')  # fmt: skip
    profile = load_profile("prod", env={"MAIL_PW": SMTP_PASSWORD}, config_path=path)
    assert (profile.smtp.port, profile.smtp.tls) == (465, "ssl")
    assert SMTP_PASSWORD in profile.secrets()  # masked by value wherever it would show
    assert SMTP_PASSWORD not in repr(profile)


@pytest.mark.parametrize(
    "url",
    [
        f"http://[::1/services/{HOOK_TOKEN}",  # urllib: "Invalid IPv6 URL"
        f"https://127.0.0.1:1/services/{HOOK_TOKEN}\x7f",  # httpx refuses the character
        f"https://127.0.0.1:99999/services/{HOOK_TOKEN}",  # no such port
    ],
)
def test_a_webhook_url_that_cannot_be_used_exits_2_before_anything_runs(folder, url):
    result = invoke("report", "--no-pull", "--db", str(folder / "any.db"), "--notify", url)
    assert result.exit_code == 2, (result.exit_code, repr(result.exception))
    said = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    assert "--notify" in said and "http(s) URL" in said
    assert HOOK_TOKEN not in result.output  # the path of a webhook's URL is its secret
    assert not (folder / "data" / "reports").exists()


def test_a_delivery_to_a_url_httpx_refuses_is_a_failure_never_a_crash():
    from workbench.report.deliver import Delivery
    from workbench.report.job import ReportJob

    delivery = Delivery(notify=f"https://127.0.0.1:1/services/{HOOK_TOKEN}\x7f")  # made in code
    job = ReportJob(notebook="reconcile", parameters={}, run=None, pull_status=None)
    said: list[str] = []
    (failure,) = delivery.deliver(job, say=said.append)
    assert "InvalidURL" in failure and "The report is written." in failure
    assert HOOK_TOKEN not in failure and said == []


def test_a_webhook_url_is_posted_as_given_without_surrounding_spaces(folder, hook):
    from workbench.report.deliver import plan_delivery
    from workbench.report.job import ReportJob

    plan = plan_delivery(notify=f"  {hook.url}\n")
    assert plan.notify == hook.url
    job = ReportJob(notebook="reconcile", parameters={}, run=None, pull_status=None)
    said: list[str] = []
    assert plan.deliver(job, say=said.append) == [] and len(hook.bodies) == 1
    assert hook.paths == [f"/services/{HOOK_TOKEN}"]
    assert said == [f"Sent the summary: webhook {hook.url.split('/services/')[0]}/...."]


@pytest.mark.parametrize("host", ["smtp.college.example", "10.0.0.25", "127.0.0.1.example"])
def test_a_mail_login_without_tls_to_another_machine_is_refused(tmp_path, host):
    from workbench.config import load_profile
    from workbench.errors import ConfigError

    path = tmp_path / "workbench.toml"
    path.write_text(f'[profiles.prod.smtp]\nhost = "{host}"\ntls = "none"\n'
                    'username = "reports"\npassword_env = "MAIL_PW"\n')  # fmt: skip
    with pytest.raises(ConfigError) as raised:
        load_profile("prod", env={"MAIL_PW": SMTP_PASSWORD}, config_path=path)
    said = str(raised.value)
    assert said.startswith(f"tls in [profiles.prod.smtp] of {path} is none")  # the setting
    assert "set tls to starttls or ssl" in said and host in said and SMTP_PASSWORD not in said
    # without a login, or to a relay on this machine, tls = "none" is fine
    path.write_text(f'[profiles.prod.smtp]\nhost = "{host}"\ntls = "none"\n')
    assert load_profile("prod", env={}, config_path=path).smtp.tls == "none"
    for local in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        path.write_text(f'[profiles.prod.smtp]\nhost = "{local}"\ntls = "none"\n'
                        'username = "reports"\npassword_env = "MAIL_PW"\n')  # fmt: skip
        profile = load_profile("prod", env={"MAIL_PW": SMTP_PASSWORD}, config_path=path)
        assert profile.smtp.host == local


def test_send_mail_logs_in_to_a_relay_on_this_machine_without_tls(mailbox):
    from workbench.config import Secret, SmtpSettings
    from workbench.report.deliver import notice_mail, send_mail, summary

    message = notice_mail(summary("reconcile", None), to=["ops@college.example"],
                          sender="workbench@college.example")  # fmt: skip
    local = SmtpSettings(host="127.0.0.1", port=mailbox.port, tls="none", username="reports",
                         password=Secret(SMTP_PASSWORD))  # fmt: skip
    send_mail(message, local)  # a relay on this machine: the password never leaves it
    assert mailbox.logins == [("reports", SMTP_PASSWORD)] and len(mailbox.mails) == 1
