"""The HTML sections: the numbers are there, every value is escaped, worst first, capped."""

from __future__ import annotations

import base64
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench import reconcile
from workbench.report import (
    exception_counts,
    exceptions_section,
    figure_html,
    funnel_chart,
    headline_section,
    organisations_section,
)
from workbench.report.markup import MISSING, is_missing, plain, text
from workbench.report.sections import bucket_key

from .conftest import NOW, ageing, crafted_tables, figures

PLAIN = (
    "requests", "open_requests", "open_over_sla", "transcripts_sent",
    "transcripts_unacknowledged", "transcripts_received", "transcripts_awaiting_ack",
    "awaiting_ack_over_sla", "ack_mismatches", "uncertain_sends", "duplicate_transcripts",
    "document_problems", "exceptions",
)  # fmt: skip


def test_the_headline_shows_every_figure_with_its_key(crafted: reconcile.Reconciliation) -> None:
    html = headline_section(crafted).data
    found = figures(html)
    h = crafted.headline
    for key in PLAIN:
        assert found[key] == str(h[key]), key
    for bucket, count in ageing(crafted)["open"].items():
        assert found[f"open_age_{bucket_key(bucket)}"] == str(count)
    for severity, count in h["exceptions_by_severity"].items():
        assert found[f"exceptions_{severity}"] == str(count)
    assert found["responses"] == str(sum(h["responses_by_status"].values()))
    assert (found["open_requests"], found["open_over_sla"], found["exceptions_critical"]) == (
        "2", "1", "1")  # fmt: skip
    assert "As of 2026-03-10 09:00 UTC · SLA 5 days" in html
    assert 'data-as-of="2026-03-10T09:00:00+00:00"' in html


def test_bucket_keys_are_plain_words() -> None:
    assert [bucket_key(b) for b in reconcile.age_labels(4.5)] == [
        "0_2", "2_4_5", "4_5_5", "5_10", "over_10"]  # fmt: skip


def test_every_value_is_escaped(crafted: reconcile.Reconciliation) -> None:
    pages = [s(crafted).data for s in (headline_section, exceptions_section, organisations_section)]
    html = "".join(pages)
    assert "Smith &amp; Sons &lt;College&gt;" in html
    assert "O&#x27;Brien École" in html
    assert "<College>" not in html and "Sons <" not in html
    assert "&amp;amp;" not in html  # escaped once, not twice


def test_exceptions_come_worst_first_with_counts(crafted: reconcile.Reconciliation) -> None:
    html = exceptions_section(crafted).data
    headings = [html.index(f"{s} (1)") for s in ("Critical", "High", "Medium", "Low")]
    assert headings == sorted(headings)
    assert "1 critical" not in html  # the headline is the one place severity counts show
    assert '<tr class="wb-sev-critical">' in html
    assert "Confirm the student with the registrar" in html  # the suggested action is shown
    counts = exception_counts(crafted)
    assert counts["kind"].tolist()[0] == "identity_mismatch"
    assert counts.columns.tolist() == ["kind", "critical", "high", "medium", "low", "total"]
    assert counts["total"].sum() == len(crafted.exceptions)


def test_long_exception_tables_are_capped_per_severity() -> None:
    rec = reconcile.reconcile(crafted_tables(extra_overdue=30), now=NOW, sla_days=5)
    html = exceptions_section(rec, max_rows=10).data
    medium = html[html.index("Medium (31)") : html.index("Low (1)")]
    assert medium.count('<tr class="wb-sev-medium">') == 10
    assert "… and 21 more rows not shown." in medium
    assert "more rows" not in html[html.index("Critical (1)") : html.index("Medium (31)")]


def test_organisations_are_listed_per_side(crafted: reconcile.Reconciliation) -> None:
    html = organisations_section(crafted).data
    assert "Requests, by the organisation that sent them" in html
    assert "No transcripts received." in html
    row = re.search(r"<tr><td>Smith &amp; Sons &lt;College&gt;</td>(.*?)</tr>", html)
    assert row is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row[1])
    assert cells[:4] == ["A&amp;B", "2", "1", "1"]  # id, items, open, over SLA


def test_an_empty_reconciliation_says_so(empty_rec: reconcile.Reconciliation) -> None:
    found = figures(headline_section(empty_rec).data)
    assert found["open_requests"] == "0" and found["exceptions"] == "0"
    assert "No exceptions" in exceptions_section(empty_rec).data
    assert "No organisations" in organisations_section(empty_rec).data


def test_charts_are_inline_png(crafted: reconcile.Reconciliation) -> None:
    html = figure_html(funnel_chart(crafted)).data
    found = re.fullmatch(r'<img class="wb-chart" alt="([^"]*)" src="data:image/png;base64,'
                         r'([A-Za-z0-9+/=]+)"/>', html)  # fmt: skip
    assert found is not None
    assert found[1] == "Lifecycle as of 2026-03-10 09:00 UTC"
    assert base64.b64decode(found[2]).startswith(b"\x89PNG\r\n\x1a\n")
    assert "http" not in html


@pytest.mark.parametrize(
    ("value", "missing", "shown"),
    [
        (None, True, ""), (pd.NA, True, ""), (pd.NaT, True, ""), (float("nan"), True, ""),
        (np.float64("nan"), True, ""), (np.datetime64("NaT"), True, ""),
        ("", False, ""), (0, False, "0"), ("<b>", False, "<b>"),
        ([None], False, "[None]"), ({"a": None}, False, "{'a': None}"),
    ],
)  # fmt: skip
def test_one_notion_of_missing(value: Any, missing: bool, shown: str) -> None:
    assert is_missing(value) is missing
    assert plain(value) == shown  # the explorer's cells and filters
    assert plain(value, missing=MISSING) == (MISSING if missing else shown)
    assert (text(value) == MISSING) is missing  # the report's cells


def responded(*statuses: str) -> reconcile.Reconciliation:
    """A reconciliation of one request per ResponseStatus, each answered with it."""
    ids = [f"R{n}" for n in range(len(statuses))]
    tables = reconcile.empty_tables()
    tables["requests"] = pd.DataFrame({"request_id": ids, "on_list": False, "request_date": NOW})
    tables["responses"] = pd.DataFrame(
        {"outbox_id": range(1, len(ids) + 1), "request_id": ids, "response_status": statuses}
    )
    return reconcile.reconcile(tables, now=NOW, sla_days=5)


def test_cards_wrap_a_long_name_only_where_a_word_of_it_starts() -> None:
    html = headline_section(responded("TranscriptRequestReceived", "OfflineRecordSearch")).data
    assert "Transcript<wbr>Request<wbr>Received: 1" in html
    assert "Offline<wbr>Record<wbr>Search: 1" in html
    card = re.search(r"\.wb-report \.wb-figure \{[^}]*\}", html)
    assert card is not None
    assert "anywhere" not in card[0] and "break-all" not in card[0]  # never mid-word


def test_a_setting_s_name_in_a_card_wraps_at_its_underscores(
    crafted: reconcile.Reconciliation, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    from workbench.report.sections import not_validated_note

    monkeypatch.delenv("WORKBENCH_PESC_SCHEMAS", raising=False)
    unvalidated = crafted.requests.assign(validation_status="not validated", parse_error=None)
    rec = SimpleNamespace(requests=unvalidated, transcripts=crafted.transcripts.iloc[:0])
    assert "set WORKBENCH_<wbr>PESC_<wbr>SCHEMAS to a folder" in not_validated_note(rec)
