"""One ``exceptions`` table: what needs an analyst, how bad, what to do (``docs/reconcile.md``)."""

from __future__ import annotations

import shlex
from typing import Any

import numpy as np
import pandas as pd

from workbench.reconcile.inputs import TEXT, WINDOW, days_text, fill, text
from workbench.reconcile.lifecycles import later_copies
from workbench.severities import SEVERITIES

# kind -> (usual severity, when it is raised)
EXCEPTION_KINDS: dict[str, tuple[str, str]] = {
    "identity_mismatch": ("critical", "the transcript we sent names another student than the "
                          "request (high when only names differ, critical when a birth date or "
                          "an identifier does)"),
    "tracking_id_mismatch": ("high", "a document's RequestTrackingID is not the one of the "
                             "request it answers (or an acknowledgment's DocumentID not the "
                             "transcript's)"),
    "ack_mismatch": ("high", "acknowledgment totals differ from the transcript (the partner's of "
                     "ours: high; ours of theirs: medium)"),
    "uncertain_send": ("high", "a send of ours may or may not have reached the partner"),
    "parse_error": ("high", "a document the partner gave us does not parse"),
    "response_overdue": ("medium", "a request has waited for our response longer than the SLA "
                         "(high past twice it)"),
    "ack_overdue": ("medium", "a transcript has waited for our acknowledgment longer than the "
                    "SLA (high past twice it)"),
    "hold_overdue": ("medium", "a Hold / TranscriptRequestReceived / OfflineRecordSearch "
                     "response's planned release date has passed with no transcript sent"),
    "transcript_unacknowledged": ("medium", "a transcript of ours was sent but no "
                                  "acknowledgment of it is recorded"),
    "reissued_after_ack": ("medium", "a transcript was re-issued (a new version) after we "
                           "acknowledged an earlier one"),
    "duplicate_transcript": ("medium", "a transcript received for the same student from the "
                             "same source as an earlier one"),
    "detail_missing": ("medium", "the last fetch of a document failed"),
    "closed_elsewhere": ("low", "an item left the partner's list with no send of ours"),
    "schema_invalid": ("low", "a document the partner gave us fails its PESC schema"),
    "implausible_date": ("low", f"a partner's RequestDate outside the plausible dates "
                         f"({WINDOW}): kept as sent, taken as missing (the item is dated when "
                         "we first saw it)"),
}  # fmt: skip
EXCEPTION_COLUMNS = ("kind", "id", "severity", "detail", "suggested_action", "side")
# Suggested actions name the command and the Python call; ``{sh}`` is the id as one shell word,
# ``{py}`` as a Python string (``_quoted``).
_SEND_ACK = "`workbench send ack {sh}` (Python: `w.consumer.send_acknowledgment({py})`)"
_RESEND_ACK = (
    "`workbench send ack --force {sh}` (Python: `w.consumer.send_acknowledgment({py}, force=True)`)"
)
_RESEND_TRANSCRIPT = (
    "`workbench send transcript --force {sh} FILE` "
    "(Python: `w.supplier.send_transcript({py}, xml, force=True)`)"
)
_RESEND_RESPONSE = (
    "`workbench send response --status STATUS --force {sh}` "
    "(Python: `w.supplier.send_response({py}, xml, force=True)`)"
)
_TROUBLESHOOT = "`workbench troubleshoot {sh}`"
_BUNDLE = "`workbench bundle {sh}`"
_DO_NOT_RESEND = (
    "Do not resend blindly: run `workbench pull` to settle it from the partner's list; if it "
    "stays uncertain, ask the partner whether it arrived, and resend only if it did not: {resend}."
)  # {resend}: the command and call of the send, forced
# A failed check's pieces name both sides: ``holder`` holds ``expected`` (``_holders``), the
# ``subject`` holds ``found``.
_SIDES = "{label} ({holder}: {expected} · {subject}: {found})"
_FIELD_LABELS = {
    "student_first_name": "first name", "student_last_name": "last name",
    "student_birth_date": "birth date", "student_oen": "OEN",
    "student_ocas_account": "OCAS account", "student_ocas_application": "OCAS application",
    "student_school_assigned_id": "school-assigned id", "academic_award_total": "awards",
    "course_total": "courses", "request_tracking_id": "RequestTrackingID",
    "document_id": "DocumentID",
}  # fmt: skip
_SERIOUS_IDENTITY = (
    "student_birth_date", "student_oen", "student_ocas_account", "student_ocas_application",
)  # fmt: skip


def exceptions(
    requests: pd.DataFrame,
    transcripts: pd.DataFrame,
    checks: pd.DataFrame,
    *,
    sla_days: float | None = None,
) -> pd.DataFrame:
    """The exceptions table of a lifecycle, a consumer status and their cross-checks;
    ``sla_days``: the SLA they were flagged with (default: the one in their ``attrs``, else
    the ``sla`` checks')."""
    r = requests.rename(columns={"request_id": "id"})
    t = transcripts.rename(columns={"transcript_id": "id"})
    parts = [
        *_supplier(r),
        *_consumer(t),
        *_documents(r, "supplier", "request"),
        *_documents(t, "consumer", "transcript"),
        *_from_checks(checks, requests, transcripts, sla_days),
    ]
    frames = [p for p in parts if len(p)] or [pd.DataFrame(columns=[*EXCEPTION_COLUMNS])]
    out = pd.concat(frames, ignore_index=True)
    out = out.astype(dict.fromkeys(("kind", "id", "detail", "suggested_action", "side"), TEXT))
    out["severity"] = pd.Categorical(out["severity"], categories=list(SEVERITIES), ordered=True)
    # Worst first, then by kind; within a kind, in the order of the requests and transcripts.
    out = out.sort_values(["severity", "kind"], ascending=[False, True], kind="stable")
    return out[list(EXCEPTION_COLUMNS)].reset_index(drop=True)


def _part(
    kind: str, rows: pd.DataFrame, side: Any, severity: Any, detail: str, action: str
) -> pd.DataFrame:
    """Exceptions of one kind: ``detail`` and ``action`` are templates over ``rows``' columns,
    ``{sh}`` and ``{py}`` the id quoted."""
    if "{sh}" in action or "{py}" in action:
        rows = rows.assign(**_quoted(rows["id"]))
    return pd.DataFrame(
        {
            "kind": kind,
            "id": rows["id"],
            "severity": severity,
            "detail": fill(detail, rows),
            "suggested_action": fill(action, rows),
            "side": side,
        },
        index=rows.index,
    )


def _quoted(ids: pd.Series) -> dict[str, list[str]]:
    """Each id as one shell word (``sh``, after ``--`` when it starts with a dash, so no
    command reads it as an option) and as a Python string (``py``)."""
    values = ids.astype(TEXT).fillna("")
    sh = [("-- " if v.startswith("-") else "") + shlex.quote(v) for v in values]
    return {"sh": sh, "py": [repr(v) for v in values]}


def _supplier(r: pd.DataFrame) -> list[pd.DataFrame]:
    u = r[r["state"] == "uncertain_send"]
    u = u.assign(note=u["unsettled_note"].fillna("no note"), **_quoted(u["id"]))
    response = (u["unsettled_operation"] == "send_response").to_numpy(dtype=bool)
    u = u.assign(resend=np.where(response, fill(_RESEND_RESPONSE, u), fill(_RESEND_TRANSCRIPT, u)))
    s = r[r["state"] == "transcript_sent"]
    inferred = s["transcript_inferred"].fillna(False).to_numpy(dtype=bool)
    s = s.assign(how=np.where(inferred, ", inferred from the partner's list", ""))
    h = r[r["release_overdue_days"].notna()]
    h = h.assign(days=days_text(h["release_overdue_days"]), why=h["hold_reason"].fillna("none"))
    c = r[r["state"] == "closed_elsewhere"]
    return [
        _part("uncertain_send", u, "supplier", "high",
              "{unsettled_operation} is {unsettled_state} since {unsettled_since} "
              "(outbox {unsettled_outbox_id}): {note}", _DO_NOT_RESEND),
        _part("transcript_unacknowledged", s, "supplier", "medium",
              "Transcript sent {transcript_sent_at} (outbox {transcript_outbox_id}{how}); no "
              "acknowledgment of it is recorded",
              "Ask the partner to confirm receipt and its AcademicAwardTotal/CourseTotal (we "
              "sent {sent_award_count} awards, {sent_course_count} courses)."),
        _part("hold_overdue", h, "supplier", "medium",
              "Response {response_status} (reason: {why}) planned release "
              "{planned_release_date}, {days} days ago; no transcript sent",
              "Send the transcript: `workbench send transcript {sh} FILE` (Python: "
              "`w.supplier.send_transcript({py}, xml)`); or a new TranscriptResponse with a new "
              "PlannedReleaseDate: `workbench send response --status Hold --release YYYY-MM-DD "
              "--force {sh}`."),
        _part("closed_elsewhere", c, "supplier", "low",
              "Left the partner's list at {left_at} with no send of ours",
              "Check who answered it (another system, or the partner's portal; its story: "
              f"{_TROUBLESHOOT}); nothing to send unless it comes back on the list."),
    ]  # fmt: skip


def _consumer(t: pd.DataFrame) -> list[pd.DataFrame]:
    u = t[t["state"] == "ack_uncertain"]
    u = u.assign(note=u["ack_note"].fillna("no note"), **_quoted(u["id"]))
    u = u.assign(resend=fill(_RESEND_ACK, u))
    c = t[t["state"] == "closed_elsewhere"]
    d = t[later_copies(t, "id")]
    d = d.assign(source=d["source_org_name"].fillna(d["source_org_id"]))
    r = t[t["reissued_after_ack"].fillna(False) & (t["state"] == "awaiting_ack")]
    r = r.assign(kind_of=r["transmission_type"].fillna("no TransmissionType"))
    return [
        _part("uncertain_send", u, "consumer", "high",
              "send_acknowledgment is {ack_send_state}: {note}", _DO_NOT_RESEND),
        _part("closed_elsewhere", c, "consumer", "low",
              "Left the consumer list at {left_at} with no acknowledgment of ours",
              "Someone else acknowledged it (another system?): check who; nothing to send."),
        _part("reissued_after_ack", r, "consumer", "medium",
              "Version {current_version} ({kind_of}) arrived after our acknowledgment of "
              "version {acknowledged_version} (outbox {ack_outbox_id})",
              f"Compare the versions ({_TROUBLESHOOT}), then acknowledge the current one (an "
              f"acknowledgment of a new version is a new send): {_SEND_ACK}."),
        _part("duplicate_transcript", d, "consumer", "medium",
              "Same student ({duplicate_key}: {student_last_name}, {student_first_name}) and "
              "source ({source}) as transcript {duplicate_of}",
              f"Compare the two (a Replace or Reissue, or a resend: {_TROUBLESHOOT}); "
              f"acknowledge both ({_SEND_ACK}), and keep the right one in the SIS."),
    ]  # fmt: skip


def _documents(frame: pd.DataFrame, side: str, noun: str) -> list[pd.DataFrame]:
    columns = ["detail_error", "parse_error", "validation_status", "validation_error"]
    frame = frame[["id", *columns, "implausible_request_date"]]  # a row filter copies them all
    missing = frame[frame["detail_error"].notna()]
    broken = frame[frame["parse_error"].notna()]
    invalid = frame[
        (frame["validation_status"] == "invalid").fillna(False) & frame["parse_error"].isna()
    ]
    invalid = invalid.assign(error=invalid["validation_error"].fillna("no error text"))
    undated = frame[frame["implausible_request_date"].notna()]
    return [
        _part("detail_missing", missing, side, "medium",
              f"The {noun}'s document could not be fetched: {{detail_error}}",
              "The next pull retries it; if it keeps failing, run `workbench doctor` and send "
              f"the partner {_BUNDLE}."),
        _part("parse_error", broken, side, "high",
              f"The {noun}'s PESCXML does not parse: {{parse_error}}",
              f"Ask the partner to resend a well-formed document (attach {_BUNDLE}); handle it "
              "by hand meanwhile."),
        _part("schema_invalid", invalid, side, "low",
              f"The {noun} fails its PESC schema: {{error}}",
              "Usable as stored; tell the partner if it recurs (real documents often carry "
              "36-character DocumentIDs or odd Birthdays)."),
        _part("implausible_date", undated, side, "low",
              f"The {noun}'s RequestDate is {{implausible_request_date}}, outside the "
              f"plausible dates ({WINDOW}): taken as missing, so the {noun} is dated when we "
              "first saw it, and left out of the charts by date",
              f"Tell the partner (attach {_BUNDLE}); the store keeps the date as they sent "
              "it."),
    ]  # fmt: skip


def _holders(rows: pd.DataFrame) -> np.ndarray:
    """What holds each failed check's ``expected`` value: the transcript we sent (its
    DocumentID, its counts), the transcript received (on the consumer side), else the request."""
    supplier = (rows["side"] == "supplier").fillna(False).to_numpy(dtype=bool)
    ours = (rows["field"] == "document_id") | ((rows["check"] == "ack_totals") & supplier)
    return np.select(
        [ours.fillna(False).to_numpy(dtype=bool), ~supplier],
        ["transcript sent", "transcript received"],
        default="request",
    ).astype(object)


def _joined(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (side, id) of failed checks: their pieces (``_SIDES`` over each) joined with
    ``; ``, the first outbox id and subject, and whether a serious identity field is among them."""
    rows = rows.sort_values(["side", "id"], kind="stable")
    rows = rows.assign(
        label=rows["field"].map(_FIELD_LABELS).fillna(rows["field"]),
        holder=_holders(rows),
        expected=rows["expected"].fillna("not stated"),
        found=rows["found"].fillna("not stated"),
    )
    rows = rows.assign(piece=fill(_SIDES, rows), serious=rows["field"].isin(_SERIOUS_IDENTITY))
    groups = rows.groupby(["side", "id"], sort=False, dropna=False)
    out = rows.drop_duplicates(["side", "id"])[["side", "id", "outbox_id", "subject"]]
    return out.assign(
        piece=groups["piece"].agg("; ".join).to_numpy(), serious=groups["serious"].any().to_numpy()
    ).reset_index(drop=True)


def _from_checks(
    checks: pd.DataFrame, requests: pd.DataFrame, transcripts: pd.DataFrame, sla: float | None
) -> list[pd.DataFrame]:
    tracking = _joined(checks[checks["check"] == "tracking_id"])
    ours = tracking["subject"].str.endswith(" sent").fillna(False)
    identity = _joined(checks[checks["check"] == "student_identity"])
    totals = _joined(checks[checks["check"] == "ack_totals"])
    theirs, mine = totals[totals["side"] == "supplier"], totals[totals["side"] == "consumer"]
    # The SLA the lifecycles flagged ``sla_breached`` with (given, their attrs, the sla checks').
    if sla is None:
        sla = requests.attrs.get("sla_days", transcripts.attrs.get("sla_days"))
    if sla is None:
        sla = pd.to_numeric(checks.loc[checks["check"] == "sla", "expected"].str[3:]).max()
    return [
        _part("tracking_id_mismatch", tracking[~ours], tracking["side"], "high", "{piece}",
              f"The partner's document names another request: send them {_BUNDLE} and hold "
              "off answering it until they correct it."),
        _part("tracking_id_mismatch", tracking[ours], tracking["side"], "high", "{piece}",
              "A document we sent names another request: check outbox entry {outbox_id} "
              f"({_TROUBLESHOOT}) and tell the partner which request it belongs to."),
        _part("identity_mismatch", identity, "supplier",
              np.where(identity["serious"], "critical", "high"),
              "The transcript we sent (outbox {outbox_id}) names another student than the "
              "request: {piece}",
              "Confirm the student with the registrar; if we sent another student's "
              "transcript, contact the partner at once to withdraw it (its story: "
              f"{_TROUBLESHOOT})."),
        *_overdue(requests, transcripts, sla),
        _part("ack_mismatch", theirs, "supplier", "high",
              "The partner's acknowledgment differs from the transcript we sent (outbox "
              "{outbox_id}): {piece}",
              "Compare the transcript in outbox entry {outbox_id} with the student's "
              "record; ask the partner what did not arrive, and resend a corrected "
              f"transcript if ours was wrong: {_RESEND_TRANSCRIPT}."),
        _part("ack_mismatch", mine, "consumer", "medium",
              "Our acknowledgment (outbox {outbox_id}) differs from the transcript "
              "received: {piece}",
              f"Check the acknowledgment we built, then send a corrected one: {_RESEND_ACK}."),
    ]  # fmt: skip


def _overdue(requests: pd.DataFrame, transcripts: pd.DataFrame, sla: float) -> list[pd.DataFrame]:
    """Requests and transcripts past the SLA (``sla_breached``); high past twice the SLA."""
    if pd.isna(sla):
        return []
    late, waiting = _late(requests, "request_id", sla), _late(transcripts, "transcript_id", sla)
    return [
        _part("response_overdue", late, "supplier", late["severity"],
              "Request from {source_org_name} {dated} has had no response for {days} days "
              "(SLA {sla})",
              "Send a TranscriptResponse (Hold or TranscriptRequestReceived): `workbench send "
              "response --status TranscriptRequestReceived {sh}` — open {days} days, SLA {sla}"),
        _part("ack_overdue", waiting, "consumer", waiting["severity"],
              "Transcript from {source_org_name} {dated} has awaited our acknowledgment for "
              "{days} days (SLA {sla})",
              f"Acknowledge it: {_SEND_ACK} — waiting {{days}} days, SLA {{sla}}"),
    ]  # fmt: skip


def _late(frame: pd.DataFrame, id_column: str, sla: float) -> pd.DataFrame:
    """The rows of ``frame`` past the SLA, with what their messages read."""
    late = frame.loc[frame["sla_breached"].fillna(False),
                     [id_column, "age_days", "source_org_name", "request_date"]]  # fmt: skip
    dated = pd.Series(text(late["request_date"], missing=""), index=late.index)
    dated = ("dated " + dated).where(
        dated != "", "with no usable RequestDate (aged from when we first saw it)"
    )
    severity = np.where((late["age_days"] > 2 * sla).fillna(False), "high", "medium")
    return late.rename(columns={id_column: "id"}).assign(
        days=days_text(late["age_days"]), dated=dated, sla=f"{sla:g}", severity=severity
    )
