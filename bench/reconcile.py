"""Reconciliation at scale: ``reconcile.reconcile(tables)`` on 10k, 100k and 1M requests.

Synthetic tables in realistic proportions (per request: ~8 % still awaiting a response, ~20 %
answered with a response only, ~65 % with a transcript sent and mostly acknowledged, a few
closed elsewhere or uncertain; half as many transcripts received, ~88 % acknowledged by us,
~1 % duplicates; rare identity, tracking-id and totals mismatches, document problems). Every
state, check and exception kind occurs.

Prints each size's time (best of a few runs), the 1M/100k ratio (goal <= 12: close to linear)
and the ratio of the 1M run to one ``pandas.merge`` of 1M rows on the same string key type,
measured in the same run (goal <= 10).

    .venv/bin/python bench/reconcile.py [--sizes 10000 100000 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from workbench import reconcile

NOW = pd.Timestamp("2026-03-02T09:00:00Z").as_unit("us")
FIRST = np.array(["Emma", "Liam", "Olivia", "Noah", "Zoë", "Mohammed", "Anne-Marie", "Wei"] * 25)
LAST = np.array([f"{a}{b}" for a in ("Tremb", "Gagn", "Mart", "Nguy", "Sing") for b in
                 ("lay", "é", "in", "en", "h", "son", "er", "ez", "ov", "ski")] * 10)  # fmt: skip
STATUSES = np.array(
    ["TranscriptRequestReceived"] * 5 + ["Hold"] * 3 + ["NoRecord", "OfflineRecordSent"]
)
ORGS = 30


def _ids(prefix: str, n: int) -> pd.Series:
    return pd.Series([f"{prefix}{i:031x}" for i in range(n)], dtype="string")


def _text(values: np.ndarray) -> pd.Series:
    return pd.Series(values.astype(object), dtype="string")


def _times(days_ago: np.ndarray) -> pd.Series:
    return pd.Series(NOW - pd.to_timedelta(days_ago, unit="D")).astype("datetime64[us, UTC]")


def _identity(rng: np.random.Generator, n: int) -> dict[str, pd.Series]:
    births = pd.Timestamp("1980-01-01") + pd.to_timedelta(rng.integers(0, 9000, n), unit="D")
    return {
        "student_first_name": _text(rng.choice(FIRST, n)),
        "student_last_name": _text(rng.choice(LAST, n)),
        "student_birth_date": pd.Series(births.strftime("%Y-%m-%d"), dtype="string"),
        "student_oen": _text(np.char.zfill(rng.integers(0, 10**9, n).astype(str), 9)),
        "student_ocas_account": _text(rng.integers(10**7, 10**8, n).astype(str)),
        "student_ocas_application": _text(rng.integers(10**8, 10**9, n).astype(str)),
        "student_school_assigned_id": _text(rng.integers(10**8, 10**9, n).astype(str)),
    }


def synthetic_tables(n: int, seed: int = 7) -> dict[str, pd.DataFrame]:
    """Input tables for ``n`` requests and ``n // 2`` transcripts received."""
    rng = np.random.default_rng(seed)
    request_ids = _ids("r", n)
    fate = rng.choice(
        ["open", "responded", "sent", "acked", "uncertain", "elsewhere"],
        n,
        p=[0.08, 0.20, 0.02, 0.645, 0.005, 0.05],
    )
    age = rng.uniform(0, 40, n)
    age[fate == "open"] = rng.uniform(0, 14, int((fate == "open").sum()))
    identity = _identity(rng, n)
    tracking = request_ids.copy()
    tracking[rng.random(n) < 0.0005] = "someone-else"
    problem = rng.random(n)
    orgs = rng.integers(0, 3, n).astype(str)
    requests = pd.DataFrame(
        {
            "request_id": request_ids,
            "request_date": _times(age),
            "on_list": fate == "open",
            "first_seen_at": _times(age - 0.01),
            "left_at": _times(np.where(fate == "open", np.nan, age - 2)),
            "left_reason": _text(np.where(fate == "open", None, np.where(fate == "elsewhere",
                                                                         "elsewhere", "outbox"))),
            "detail_error": _text(np.where(problem < 0.002, "HTTP 503", None)),
            "parse_error": _text(np.where((problem >= 0.002) & (problem < 0.003), "malformed",
                                          None)),
            "validation_status": _text(np.where(problem > 0.97, "invalid", "valid")),
            "document_id": request_ids,
            "request_tracking_id": tracking,
            "source_org_id": _text(np.char.add("OCAS", orgs)),
            "source_org_name": _text(np.char.add("Hub ", orgs)),
            **identity,
        }
    )  # fmt: skip

    # Outbox: responses (answered requests), transcripts (sent / acked / uncertain).
    responded = np.flatnonzero(np.isin(fate, ["responded", "acked", "sent"]) & (rng.random(n) < 0.8)
                               | (fate == "responded"))  # fmt: skip
    transcript = np.flatnonzero(np.isin(fate, ["sent", "acked", "uncertain"]))
    k_r, k_t = len(responded), len(transcript)
    sent_identity = {f"sent_{c}": s.iloc[transcript].reset_index(drop=True)
                     for c, s in identity.items()}  # fmt: skip
    wrong = rng.random(k_t) < 0.002
    sent_identity["sent_student_last_name"] = sent_identity["sent_student_last_name"].where(
        ~wrong, "Someone"
    )
    awards = rng.integers(0, 4, k_t)
    courses = rng.integers(5, 40, k_t)
    t_state = np.where(fate[transcript] == "uncertain", "uncertain", "sent")
    outbox = pd.concat(
        [
            pd.DataFrame(
                {
                    "outbox_id": np.arange(k_r),
                    "operation": "send_response",
                    "request_id": request_ids.iloc[responded].to_numpy(),
                    "state": "sent",
                    "created_at": _times(age[responded] - 1),
                    "updated_at": _times(age[responded] - 1),
                }
            ),
            pd.DataFrame(
                {
                    "outbox_id": np.arange(k_r, k_r + k_t),
                    "operation": "send_transcript",
                    "request_id": request_ids.iloc[transcript].to_numpy(),
                    "state": t_state,
                    "created_at": _times(age[transcript] - 2),
                    "updated_at": _times(age[transcript] - 2),
                    "resolved_at": _times(
                        np.where(fate[transcript] == "sent", age[transcript] - 2, np.nan)
                    ),
                    "sent_document_id": _ids("d", k_t),
                    "sent_request_tracking_id": request_ids.iloc[transcript].to_numpy(),
                    "sent_award_count": awards,
                    "sent_course_count": courses,
                    **sent_identity,
                }
            ),
        ],
        ignore_index=True,
    )
    status = rng.choice(STATUSES, k_r)
    release = (_times(age[responded] - 10).dt.strftime("%Y-%m-%d")).to_numpy(dtype=object)
    responses = pd.DataFrame(
        {
            "outbox_id": np.arange(k_r),
            "request_id": request_ids.iloc[responded].to_numpy(),
            "sent_at": _times(age[responded] - 1),
            "inferred": False,
            "response_status": _text(status),
            "hold_reason": _text(np.where(status == "Hold", "Financial", None)),
            # a Hold plans its release 10 days after the request: some of those dates have passed
            "planned_release_date": _text(np.where(status == "Hold", release, None)),
            "request_tracking_id": request_ids.iloc[responded].to_numpy(),
        }
    )
    acked = fate[transcript] == "acked"
    off = rng.random(k_t) < 0.01
    received = pd.DataFrame(
        {
            "outbox_id": np.arange(k_r, k_r + k_t)[acked],
            "direction": "received",
            "request_id": request_ids.iloc[transcript[acked]].to_numpy(),
            "recorded_at": _times(age[transcript[acked]] - 2),
            "document_id": _ids("d", k_t)[acked].to_numpy(),
            "request_tracking_id": request_ids.iloc[transcript[acked]].to_numpy(),
            "academic_award_total": awards[acked],
            "course_total": np.where(off, courses - 1, courses)[acked],
        }
    )

    # Consumer side: transcripts received, our acknowledgments of them.
    m = n // 2
    transcript_ids = _ids("t", m)
    t_fate = rng.choice(["waiting", "acked", "uncertain", "elsewhere"], m,
                        p=[0.10, 0.88, 0.005, 0.015])  # fmt: skip
    t_age = rng.uniform(0, 30, m)
    t_identity = _identity(rng, m)
    copies = rng.random(m) < 0.01
    source = rng.integers(0, ORGS, m)
    for column, values in t_identity.items():  # a duplicate repeats an earlier student
        t_identity[column] = values.where(~copies, values.shift(1))
    source = np.where(copies, np.roll(source, 1), source)
    counts = rng.integers(5, 40, m)
    transcripts = pd.DataFrame(
        {
            "transcript_id": transcript_ids,
            "request_date": _times(t_age),
            "on_list": t_fate == "waiting",
            "first_seen_at": _times(t_age),
            "left_reason": _text(np.where(t_fate == "elsewhere", "elsewhere",
                                          np.where(t_fate == "waiting", None, "outbox"))),
            "validation_status": _text(np.where(rng.random(m) < 0.03, "invalid", "valid")),
            "parse_error": _text(np.where(rng.random(m) < 0.001, "malformed", None)),
            "document_id": _ids("c", m),
            "request_tracking_id": transcript_ids,
            "source_org_id": _text(source.astype(str)),
            "source_org_name": _text(np.char.add("College ", source.astype(str))),
            **t_identity,
            "award_count": rng.integers(0, 4, m),
            "course_count": counts,
        }
    )  # fmt: skip
    ours = np.flatnonzero(np.isin(t_fate, ["acked", "uncertain"]))
    base = k_r + k_t
    acks_out = pd.DataFrame(
        {
            "outbox_id": np.arange(base, base + len(ours)),
            "operation": "send_acknowledgment",
            "request_id": transcript_ids.iloc[ours].to_numpy(),
            "state": np.where(t_fate[ours] == "uncertain", "uncertain", "sent"),
            "created_at": _times(t_age[ours] - 1),
            "updated_at": _times(t_age[ours] - 1),
            "sent_request_tracking_id": transcript_ids.iloc[ours].to_numpy(),
        }
    )
    done = t_fate[ours] == "acked"
    sent_acks = pd.DataFrame(
        {
            "outbox_id": np.arange(base, base + len(ours))[done],
            "direction": "sent",
            "request_id": transcript_ids.iloc[ours[done]].to_numpy(),
            "recorded_at": _times(t_age[ours[done]] - 1),
            "academic_award_total": transcripts["award_count"].to_numpy()[ours[done]],
            "course_total": counts[ours[done]],
        }
    )
    tables = {
        "requests": requests,
        "transcripts": transcripts,
        "outbox": pd.concat([outbox, acks_out], ignore_index=True),
        "responses": responses,
        "acknowledgments": pd.concat([received, sent_acks], ignore_index=True),
    }
    # Hand the pure functions what ``load`` would: the contract's columns and dtypes.
    from workbench.reconcile.inputs import conform

    return conform(tables)


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    timings: dict[int, float] = {}
    for n in args.sizes:
        started = time.perf_counter()
        tables = synthetic_tables(n)
        built = time.perf_counter() - started
        rec = reconcile.reconcile(tables, now=NOW)  # warm-up, and the figures below
        timings[n] = best(lambda t=tables: reconcile.reconcile(t, now=NOW), args.repeat)
        kinds = rec.exceptions["kind"].nunique()
        print(
            f"{n:>9,} requests ({len(tables['transcripts']):,} transcripts, "
            f"{len(tables['outbox']):,} outbox rows; built in {built:.1f} s): "
            f"reconcile {timings[n]:.2f} s, {len(rec.exceptions):,} exceptions of {kinds} kinds, "
            f"states {rec.requests['state'].nunique()}+{rec.transcripts['state'].nunique()}"
        )
        del tables, rec

    biggest = max(timings)
    left = pd.DataFrame({"request_id": _ids("r", biggest), "a": np.arange(biggest)})
    right = pd.DataFrame({"request_id": _ids("r", biggest).sample(frac=1, random_state=1)
                          .reset_index(drop=True), "b": np.arange(biggest)})  # fmt: skip
    merge = best(lambda: left.merge(right, on="request_id", how="left"), args.repeat)
    print(f"one pandas.merge of {biggest:,} rows on a string key: {merge:.2f} s")
    if 100_000 in timings and 1_000_000 in timings:
        ratio = timings[1_000_000] / timings[100_000]
        print(f"1M / 100k: {ratio:.1f}  (goal <= 12)  {'ok' if ratio <= 12 else 'OVER'}")
    ratio = timings[biggest] / merge
    print(
        f"{biggest:,} reconcile / merge: {ratio:.1f}  (goal <= 10)  "
        f"{'ok' if ratio <= 10 else 'OVER'}"
    )


if __name__ == "__main__":
    main()
