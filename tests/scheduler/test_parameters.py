"""A Jupyter Scheduler job's parameters, typed as text in its form, are typed as ``workbench
report -p`` types them: by the notebook's declared defaults, a bad value the same one-line error."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from tests.report.test_runner import outputs_text, write_notebook
from workbench.cli import app
from workbench.errors import ConfigError

scheduled = pytest.importorskip("workbench.report.scheduled", reason="needs jupyter-scheduler")


def job(folder: Path, notebook: Path, parameters: dict[str, str]) -> SimpleNamespace:
    """Run ``notebook`` as the scheduler runs a job's staged copy; where its files went."""
    staged = {f: str(folder / f"job.{f}") for f in ("ipynb", "html")} | {"input": str(notebook)}

    class Job(scheduled.ReportJobs):  # the job's record, as the scheduler's database holds it
        model = SimpleNamespace(parameters=parameters)

    Job("1", str(folder), "sqlite://", staged).execute()
    return SimpleNamespace(**{f: Path(p) for f, p in staged.items()})


def test_text_stays_text_and_numbers_follow_the_declared_default(here: Path) -> None:
    notebook = write_notebook(here / "staging", "typed", "profile = None\nsla_days = 5.0",
                              "print(repr(profile), repr(sla_days))")  # fmt: skip
    files = job(here, notebook, {"profile": "2024", "sla_days": "'30'"})
    assert "'2024' 30.0" in outputs_text(files.ipynb)
    assert files.html.is_file()


def test_a_bad_value_is_the_error_workbench_report_gives(here: Path) -> None:
    notebook = write_notebook(here / "staging", "typed", "sla_days = 5.0", "print(sla_days)")
    with pytest.raises(ConfigError) as raised:
        job(here, notebook, {"sla_days": "[1]"})
    message = str(raised.value)
    assert message.startswith("Parameter sla_days='[1]' must be of type float")
    assert "\n" not in message
    typed = ["report", "--notebook", "typed", "--no-pull", "-p", "sla_days=[1]"]
    result = CliRunner().invoke(app, typed, env={"WORKBENCH_NOTEBOOKS": str(notebook.parent)})
    assert result.exit_code == 2 and message in result.stderr.replace("\n", " ")
    assert not list(here.glob("job.*"))  # nothing ran


def test_a_table_the_notebook_writes_stays_where_its_report_says(here: Path) -> None:
    staging = here / "staging"
    notebook = write_notebook(staging, "tables", "output_stem = None",
                              "open(f'{output_stem}.csv', 'w').write('a\\n1\\n')",
                              "print(f'{output_stem}.csv')")  # fmt: skip
    files = job(staging, notebook, {})
    said = Path(outputs_text(files.ipynb).strip())
    assert said.parent == staging and said.name.startswith("tables-") and said.is_file()
    assert sorted(p.name for p in staging.iterdir()) == sorted(
        ["tables.ipynb", "job.ipynb", "job.html", said.name])  # fmt: skip
