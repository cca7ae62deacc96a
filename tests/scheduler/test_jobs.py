"""The report notebooks as Jupyter Scheduler jobs: JupyterLab with the jupyter-scheduler
extension, configured to run jobs as ``workbench report`` runs notebooks (``ReportJobs``), serves
a folder holding copies of them; jobs are created through the extension's REST API, as its
"Create Job" form does, against a sandbox that a college's profile points at. Credentials come
from the profile (the profiles file in the user's config folder, its secrets from variables of
the server's environment), never from the job's parameters, and none reaches the job's record,
its files or the scheduler's database."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import lxml.html
import pytest

import workbench as wb
from tests.browser.conftest import (
    INSTALL_HINT,
    ROOT,
    Lab,
    chromium,
    find_chromium,
    lab_folder,
    start_lab,
    stop_lab,
)
from tests.report.conftest import figures
from tests.watched import WatchedSandbox
from workbench import reconcile
from workbench.sandbox import SandboxSettings
from workbench.store import Store

pytestmark = pytest.mark.slow

JOB_WAIT_S = 300.0  # a job spawns a process, then a kernel that imports pandas: slow on 2 cores
FORM_WAIT_MS = 90_000  # JupyterLab's first page load on a busy machine
TORONTO = "America/Toronto"
AS_OF = re.compile(r'data-as-of="([^"]+)"')


@dataclass(frozen=True)
class SchedulerLab:
    """JupyterLab with the scheduler; where its state lives; the partner and its secrets."""

    lab: Lab
    data: Path  # JUPYTER_DATA_DIR: the scheduler's database and staging area
    profiles: Path  # the user's profiles file
    partner: WatchedSandbox
    secrets: dict[str, str]  # the variables holding the profiles' secrets

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"token {self.lab.token}"}
        return httpx.request(method, f"{self.lab.url}/scheduler/{path}", headers=headers,
                             timeout=30, **kwargs)  # fmt: skip


def profiles_text(sb: WatchedSandbox, name: str, extra: str = "") -> tuple[str, dict[str, str]]:
    """A profile for the sandbox ``sb``, as a college writes one: URLs and ids in the file, each
    secret named by the variable that holds it (``extra``: more settings); and those variables."""
    c, upper = sb.credentials, name.upper()
    secrets = {
        f"{upper}_SUBSCRIPTION_KEY": c.subscription_key,
        f"{upper}_INTL_SECRET": c.intl_client_secret,
        f"{upper}_INTL_PASSWORD": c.intl_password,
        f"{upper}_DOMESTIC_SECRET": c.domestic_client_secret,
        f"{upper}_SUPPLIER_SECRET": c.supplier_client_secret,
        f"{upper}_CONSUMER_SECRET": c.consumer_client_secret,
    }
    text = f"""
[profiles.{name}]
auth_url = "{sb.auth_url}"
gateway_url = "{sb.gateway_url}"
exchange_url = "{sb.exchange_url}"
subscription_key_env = "{upper}_SUBSCRIPTION_KEY"
db = "stores/{name}.db"
{extra}

[profiles.{name}.intl]
client_id = "{c.intl_client_id}"
client_secret_env = "{upper}_INTL_SECRET"
username = "{c.intl_username}"
password_env = "{upper}_INTL_PASSWORD"

[profiles.{name}.domestic]
client_id = "{c.domestic_client_id}"
client_secret_env = "{upper}_DOMESTIC_SECRET"
"""
    for role in ("supplier", "consumer"):
        text += f"""
[profiles.{name}.{role}]
client_id = "{getattr(c, f"{role}_client_id")}"
client_secret_env = "{upper}_{role.upper()}_SECRET"
scope = "transcript_api"
"""
    return text, secrets


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchedulerLab]:
    """One server for the module: the sandbox as the college's partner, the profile ``north``
    in the user's config folder (a second one, ``south``, so that the job must name its own),
    the scheduler's database and staging area in the temporary folder."""
    tmp = tmp_path_factory.mktemp("scheduler")
    root, env, runtime = lab_folder(tmp)
    for notebook in ("reconcile.ipynb", "events.ipynb"):
        shutil.copy(ROOT / "notebooks" / notebook, root / notebook)
    partner = WatchedSandbox(SandboxSettings()).start()
    try:
        north, secrets = profiles_text(partner, "north")
        south, more = profiles_text(partner, "south", f'timezone = "{TORONTO}"')
        config_home = tmp / "home" / ".config"
        profiles = config_home / "workbench" / "workbench.toml"
        profiles.parent.mkdir(parents=True)
        profiles.write_text(north + south)
        env |= secrets | more | {"XDG_CONFIG_HOME": str(config_home), "PYTHONPATH": str(ROOT)}
        jobs = {"Scheduler": {"execution_manager_class": "workbench.report.scheduled.ReportJobs"}}
        (Path(env["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.json").write_text(
            json.dumps(jobs)
        )
        process, lab = start_lab(root, env, runtime, tmp / "jupyterlab.log")
        try:
            yield SchedulerLab(
                lab, Path(env["JUPYTER_DATA_DIR"]), profiles, partner, secrets | more
            )
        finally:
            stop_lab(process, lab, runtime)
    finally:
        partner.stop()
        shutil.rmtree(runtime, ignore_errors=True)


def create_job(
    s: SchedulerLab, name: str, parameters: dict[str, str], notebook: str = "reconcile"
) -> str:
    """A job of ``<notebook>.ipynb`` with ``parameters`` as typed in the job's form."""
    environments = s.api("GET", "runtime_environments").json()
    assert environments, f"the scheduler offers no runtime environment:\n{s.lab.log_tail()}"
    body = {
        "name": name,
        "input_uri": f"{notebook}.ipynb",
        "runtime_environment_name": environments[0]["name"],
        "output_formats": ["ipynb", "html"],
        "parameters": parameters,
    }
    answer = s.api("POST", "jobs", json=body)
    assert answer.status_code == 200, f"{answer.status_code} {answer.text}\n{s.lab.log_tail()}"
    return str(answer.json()["job_id"])


def wait_for(s: SchedulerLab, job_id: str) -> dict[str, Any]:
    """The job's record once it finished; a failure saying where it stood after ``JOB_WAIT_S``."""
    deadline, job = time.monotonic() + JOB_WAIT_S, {}
    while time.monotonic() < deadline:
        job = s.api("GET", f"jobs/{job_id}").json()
        # A job is recorded STOPPED until its process starts it: stopped only once started.
        stopped = job["status"] == "STOPPED" and job["start_time"]
        if job["status"] in ("COMPLETED", "FAILED") or stopped:
            return job
        time.sleep(1)
    pytest.fail(f"job {job_id} still {job.get('status')} after {JOB_WAIT_S:.0f} s: "
                f"{job.get('status_message')}\n{s.lab.log_tail()}")  # fmt: skip


def download(s: SchedulerLab, job_id: str) -> dict[str, Path]:
    """The job's files copied into the served folder (the UI's "Download job files"), by
    format: ``ipynb``, ``html`` and ``input``."""
    assert s.api("GET", f"jobs/{job_id}/download_files").status_code == 204
    deadline, job = time.monotonic() + 60, {}
    while time.monotonic() < deadline:  # a process of the server copies them
        job = s.api("GET", f"jobs/{job_id}").json()
        if job["downloaded"]:
            return {f["file_format"]: s.lab.root / f["file_path"] for f in job["job_files"]}
        time.sleep(0.5)
    pytest.fail(f"the files of job {job_id} were not downloaded: {job.get('job_files')}")


def leaks(s: SchedulerLab, texts: dict[str, str]) -> list[str]:
    """Where a secret of the profiles, or a token the partner issued, appears in ``texts``."""
    secrets = [*s.secrets.values(), *s.partner.issued_tokens]
    return [f"{where} holds {secret[:4]}..." for where, text in texts.items()
            for secret in secrets if secret in text]  # fmt: skip


def files_under(*folders: Path) -> dict[str, str]:
    """Every file under ``folders`` (the scheduler's database too), as text."""
    return {str(p): p.read_bytes().decode("utf-8", "replace") for folder in folders
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def test_a_scheduled_report_pulls_with_the_profiles_credentials_and_keeps_none(
    scheduler: SchedulerLab,
) -> None:
    s = scheduler
    # Text with or without quotes: the job's form takes both.
    parameters = {"profile": "north", "pull": "True", "sla_days": "2", "tz": f'"{TORONTO}"'}
    done = create_job(s, "north reconcile", parameters)
    failing = create_job(s, "nowhere reconcile", {"profile": "'nowhere'"})  # both run at once
    job = wait_for(s, done)
    assert job["status"] == "COMPLETED", f"{job['status_message']}\n{s.lab.log_tail()}"
    assert job["parameters"] == parameters
    files = download(s, done)
    assert set(files) == {"ipynb", "html", "input"}

    # The job pulled into the profile's store, beside the profiles file (not the staging area).
    db = s.profiles.parent / "stores" / "north.db"
    assert db.is_file() and not list(s.data.rglob("*.db"))
    assert s.partner.issued_tokens, "the job never logged in to the partner"
    html = files["html"].read_text()
    as_of = AS_OF.findall(html)
    assert len(as_of) == 1, "the report's as-of line is missing"
    with Store(db, read_only=True) as store:
        rec = reconcile.reconcile(reconcile.load(store, as_of=as_of[0]), sla_days=2.0)
    found = figures(html)
    for key in ("requests", "open_requests", "open_over_sla", "answered", "transcripts_received",
                "transcripts_awaiting_ack", "uncertain_sends", "exceptions"):  # fmt: skip
        assert found[key] == str(rec.headline[key]), key
    assert rec.headline["requests"] > 0
    charts = lxml.html.fromstring(html).xpath('//img[@class="wb-chart"]')
    assert len(charts) == 4 and all(c.get("src").startswith("data:image/png;") for c in charts)
    assert charts[1].get("alt") == "Ageing (SLA 2 days)"  # the parameters reached the notebook
    assert f'data-tz="{TORONTO}"' in html
    # The report's own HTML: no code, nothing fetched from the network.
    assert "Content-Security-Policy" in html and "cdnjs" not in html
    assert "import workbench" not in html

    record = s.api("GET", f"jobs/{done}").text
    other = wait_for(s, failing)
    everything = {"job record": record, "failed job record": str(other), "server log":
                  s.lab.log_tail(lines=100_000)} | files_under(s.lab.root, s.data)  # fmt: skip
    assert not leaks(s, everything)
    assert other["status"] == "FAILED"
    message = other["status_message"]  # one line, no colours: the job's list shows it whole
    assert message.startswith("Notebook reconcile failed in cell 3 of "), message
    assert "ConfigError: Profile 'nowhere' is not defined: add [profiles.nowhere] to " in message
    assert str(s.profiles) in message and "north, south" in message
    assert "\n" not in message and "\x1b" not in message
    assert not (s.profiles.parent / "stores" / "nowhere.db").exists()


def test_a_scheduled_events_report_reads_the_store_and_zone_of_the_profile_it_names(
    scheduler: SchedulerLab,
) -> None:
    s = scheduler
    db = s.profiles.parent / "stores" / "south.db"
    with wb.connect("south", config_path=s.profiles, env=s.secrets) as w:
        assert w.pull(progress=False).status == "ok"
    job = wait_for(s, create_job(s, "south events", {"profile": "south"}, "events"))
    assert job["status"] == "COMPLETED", f"{job['status_message']}\n{s.lab.log_tail()}"
    html = download(s, job["job_id"])["html"].read_text()
    charts = lxml.html.fromstring(html).xpath('//img[@class="wb-chart"]/@alt')
    assert any(a.startswith(f"Events per day they occurred ({TORONTO})") for a in charts), charts
    with Store(db, read_only=True) as store:  # the profile's own store: its latest events shown
        events = store.table("events")
    assert len(events) > 0 and any(e in html for e in events["event_id"].dropna())
    assert not leaks(s, {"record": str(job)} | files_under(s.lab.root / "jobs"))


def test_a_job_created_in_jupyterlabs_form_runs_with_its_parameters(
    scheduler: SchedulerLab,
) -> None:
    """What the README has a user do: open the notebook, "Create a job", add the parameters as
    text, Create; the job runs with them."""
    path, looked = find_chromium()
    if path is None:
        pytest.skip(f"No Chromium found ({looked}): {INSTALL_HINT}.")
    playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is missing")
    s, name = scheduler, "north from the form"
    typed = {"profile": "north", "pull": "True", "tz": TORONTO}
    with chromium(path) as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{s.lab.url}/lab/tree/reconcile.ipynb?token={s.lab.token}")
        page.get_by_title("Create a job").click(timeout=FORM_WAIT_MS)
        page.locator('input[name="jobName"]').fill(name)
        add = page.get_by_role("button", name="Add new parameter")
        for i, (key, value) in enumerate(typed.items()):
            row = page.locator(f'input[name="parameter-{i}-name"]')
            for _ in range(3):  # a click that leaves a field may only check that field
                add.click()
                page.wait_for_timeout(500)
                if row.count():
                    break
            row.fill(key)
            page.locator(f'input[name="parameter-{i}-value"]').fill(value)
            page.locator(f'input[name="parameter-{i}-value"]').press("Tab")
        create = page.get_by_role("button", name="Create", exact=True)
        for _ in range(3):  # as above: on a busy machine a click may only check the last field
            create.click()
            with contextlib.suppress(playwright.TimeoutError):
                create.wait_for(state="detached", timeout=FORM_WAIT_MS // 6)
            if not create.count():
                break
        page.get_by_text(name).first.wait_for(timeout=FORM_WAIT_MS)  # the Jobs list
    jobs = s.api("GET", "jobs", params={"name": name}).json()["jobs"]
    assert len(jobs) == 1, jobs
    job = wait_for(s, jobs[0]["job_id"])
    assert job["status"] == "COMPLETED", f"{job['status_message']}\n{s.lab.log_tail()}"
    assert job["parameters"] == typed
    assert f'data-tz="{TORONTO}"' in download(s, job["job_id"])["html"].read_text()
