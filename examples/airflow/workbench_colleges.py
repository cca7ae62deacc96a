"""Every morning, for each college: `workbench pull`, then `workbench report --no-pull`.

Airflow never imports the workbench: each task runs its console script (the Airflow Variable
`workbench_command`, default `workbench` on PATH) in a subprocess. No secret passes through
Airflow: params and XCom hold profile names, the logs the workbench's output (which masks
secrets); credentials stay in the workbench's profiles file and the environment variables it
names, in the worker's environment. The DAG never sends: it runs no
`workbench send`, and every command runs with `WORKBENCH_READ_ONLY=yes`, which refuses sends.

One task group per college (dynamic task mapping over the profiles): one college failing never
stops the others. Locks: a pull waits up to `LOCK_WAIT` for another pull of the same store (an
analyst's, a cron job's); still held, or the partner down, it exits 1 and is retried. One run
at a time (`max_active_runs=1`) keeps two pulls of one college from this DAG apart.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from datetime import timedelta

import pendulum
from airflow.sdk import Param, TriggerRule, Variable, dag, get_current_context, task, task_group
from airflow.sdk.exceptions import AirflowException, AirflowFailException

LOCK_WAIT = timedelta(minutes=15)  # then exit 1: retried after PULL_RETRY_DELAY
PULL_RETRIES, PULL_RETRY_DELAY = 2, timedelta(minutes=10)
# The workbench's exit codes: 2 a usage or configuration error (a retry cannot fix it), 1 a
# failure (partner down, pull lock held, partial pull, failed notebook), 3 a report written that
# holds exceptions at or above --severity.
CONFIG_ERROR, EXCEPTIONS_FOUND = 2, 3


def run_workbench(*args: str) -> int:
    """Run the workbench with ``args``, its output into the task's log; its exit code."""
    command = [*shlex.split(Variable.get("workbench_command", default="workbench")), *args]
    print("$", shlex.join(command), flush=True)  # a path, profile names and options
    try:
        child = subprocess.Popen(  # noqa: S603 - argv of our own, no shell
            command,
            env=workbench_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    except OSError as exc:
        raise AirflowFailException(
            f"Cannot run {command[0]!r}: {exc.strerror}. Set the Airflow Variable "
            "workbench_command (or AIRFLOW_VAR_WORKBENCH_COMMAND) to the path of the workbench "
            "console script, e.g. /srv/workbench/.venv/bin/workbench."
        ) from None
    assert child.stdout is not None
    for line in child.stdout:  # as it comes: a pull waiting for a lock says so at once
        print(line, end="", flush=True)
    return child.wait()


def workbench_environment() -> dict[str, str]:
    """The worker's environment (the profiles file, the secrets it names), read-only, without
    Airflow's own settings (its database's password, its Fernet key): the workbench needs none."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    return env | {"WORKBENCH_READ_ONLY": "yes"}


def failure(code: int, what: str) -> AirflowException:
    """The exception that fails a task whose command exited ``code``: not retried on 2."""
    if code == CONFIG_ERROR:
        return AirflowFailException(
            f"{what} exited 2: a usage or configuration error (see the log above). Fix the "
            "profile or the worker's environment, then clear this task."
        )
    return AirflowException(f"{what} exited {code} (see the log above).")


@dag(
    dag_id="workbench_colleges",
    schedule="0 6 * * *",  # 06:00 in start_date's zone: reports ready before the office opens
    start_date=pendulum.datetime(2026, 1, 1, tz="America/Toronto"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["workbench"],
    params={
        "profiles": Param(
            [],
            type="array",
            items={"type": "string"},
            description="Profiles to run, one per college; empty: the Airflow Variable "
            "workbench_profiles (names separated by commas).",
        ),
        "fail_on_exceptions": Param(
            False,
            type="boolean",
            description="Fail a college's report task when its store holds exceptions at "
            "high severity or worse (else the task succeeds and its log says so).",
        ),
    },
)
def workbench_colleges() -> None:
    @task
    def colleges() -> list[str]:
        """The profile names to run, each once, in the order given."""
        names = get_current_context()["params"]["profiles"]
        if not names:
            names = re.split(r"[,\s]+", Variable.get("workbench_profiles", default=""))
        chosen = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        if not chosen:
            raise AirflowFailException(
                "No college to run: give the DAG param profiles, or set the Airflow Variable "
                "workbench_profiles to profile names of the workbench's profiles file, "
                "separated by commas."
            )
        return chosen

    named = "{{ college }}"  # the UI names each mapped task by its college, not 0, 1, 2...

    @task_group
    def college(profile: str) -> None:
        @task(retries=PULL_RETRIES, retry_delay=PULL_RETRY_DELAY, map_index_template=named)
        def pull(profile: str) -> None:
            get_current_context()["college"] = profile
            wait = f"--wait={LOCK_WAIT.total_seconds():g}"
            code = run_workbench("pull", f"--profile={profile}", wait)
            if code:
                raise failure(code, f"workbench pull --profile={profile}")

        # Runs after the pull whatever became of it, as `workbench report` does: a failed
        # pull's report shows what was stored before, and says how old it is.
        @task(retries=0, trigger_rule=TriggerRule.ALL_DONE, map_index_template=named)
        def report(profile: str) -> None:
            context = get_current_context()
            context["college"] = profile
            args = ("report", "--no-pull", f"--profile={profile}", "--fail-on-exceptions")
            code = run_workbench(*args)
            if code == EXCEPTIONS_FOUND and not context["params"]["fail_on_exceptions"]:
                print(f"The report of {profile} holds exceptions at high severity or worse.")
            elif code:
                raise failure(code, f"workbench report --profile={profile}")

        pull(profile) >> report(profile)

    college.expand(profile=colleges())


workbench_colleges()
