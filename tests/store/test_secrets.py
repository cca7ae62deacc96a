"""No secret reaches the database file, even when the session forgot to redact one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.store.helpers import SECRETS, exchange, store_detail
from workbench.http.masking import MASK, Redactor
from workbench.store import Store

JWT = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ3b3JrYmVuY2gifQ.c2lnbmF0dXJlLWJ5dGVz"
OPAQUE = "opaque-token-7f3a9c2e1b"  # not JWT-shaped: caught by field name, or once learned
LEARNED = "issued-later-5d1e"


def unredacted_token_exchange() -> object:
    """A token request and answer exactly as they went over the wire."""
    return exchange(
        interface="identity",
        operation="token",
        method="POST",
        url=f"https://id.example/auth/connect/token?access_token={OPAQUE}",
        request_headers={
            "Authorization": f"Bearer {JWT}",
            "Subscription-Key": SECRETS[2],
            "Content-Type": "application/x-www-form-urlencoded",
        },
        request_body=(
            f"client_id=wb&client_secret={SECRETS[0]}&username=ana&password={SECRETS[1]}"
            "&grant_type=password&scope=intl_api.public"
        ),
        response_headers={"content-type": "application/json", "Set-Cookie": "s=abc123456"},
        response_body=f'{{"access_token": "{OPAQUE}", "expires_in": 3600, "token_type": "Bearer"}}',
        error=f"echoed: bearer {OPAQUE} and {SECRETS[1]}",
    )


def test_no_secret_said_or_sent_as_a_credential_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "wb.db"
    store = Store(path, secrets=[*SECRETS, LEARNED])
    run = store.begin_run()
    store.record_call(unredacted_token_exchange(), run_id=run)
    store.record_call(exchange(request_headers={"authorization": f"bearer {JWT}"}), run_id=run)
    store.record_call(exchange(status=401, response_body=f'{{"Message": "{SECRETS[1]} {JWT}"}}'))
    store.record_call(exchange(response_body=f'{{"Message": "token {LEARNED} expired"}}'))
    store.record_snapshot(run, "supplier_requests", [{"RequestID": "R-2", "Echo": LEARNED}])
    store.record_detail_failure("supplier_requests", "R-2", f"401 for {JWT}", run_id=run)
    entry = store.outbox.begin("send_response", "R-1", {"PESCXML": "<TResp/>"})
    store.outbox.mark(entry, "failed", error=f"refused: {SECRETS[0]}", status=400)
    store.finish_run(run, status="ok", summary={"password": SECRETS[1], "note": JWT})
    # What must survive the scrubbing does.
    call = store.table("calls").iloc[0]
    assert "expires_in" in call["response_body"] and "grant_type=password" in call["request_body"]
    store.close()
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert path in files
    for file in files:
        data = file.read_bytes()
        for secret in [*SECRETS, JWT, OPAQUE, LEARNED, "abc123456"]:
            assert secret.encode() not in data, f"{secret!r} found in {file.name}"


def test_documents_keep_what_they_spell_but_an_echo_of_ours(tmp_path: Path) -> None:
    """A document is the partner's data: a short configured secret it spells is kept
    (partners issue short credentials that dates and ids spell); a secret or an issued token
    of 16 characters or more, which no document spells by chance, is masked as an echo."""
    short = ["2024-01", "Pw#26", "AB12"]
    store = Store(tmp_path / "wb.db", secrets=[*SECRETS, *short, LEARNED])
    store.record_call(exchange(response_body=f'[{{"RequestID": "R-1", "N": "{short[0]}"}}]'))
    store.record_snapshot(None, "placement_events", [{"eventId": "E", "password": short[1]}])
    store.record_snapshot(
        None, "domestic_events", [{"eventId": "D", "note": f"{short[2]} {SECRETS[2]}"}]
    )
    courses = [{"title": f"Course {i}", "grade": "A", "credit_value": 3.0} for i in range(3)]
    store_detail(
        store,
        "consumer_transcripts",
        "T-1",
        detail={"PESCXML": f"<CollegeTranscript>{short[0]} {LEARNED}</CollegeTranscript>"},
        flat={"student_last_name": LEARNED, "school_name": short[2]},
        children={
            "courses": [*courses, {"title": f"Bearer {LEARNED}", "grade": short[0]}],
            "sessions": [{"session_name": SECRETS[0]}],
        },
    )
    entry = store.outbox.begin("send_response", "T-1", {"PESCXML": f"<TResp>{short[1]}</TResp>"})
    store.outbox.mark_sent(entry, status=200, response_body=f'{{"PESCXML": "{SECRETS[1]}"}}')
    row = store.table("transcripts_received").iloc[0]
    assert row["student_last_name"] == MASK and row["school_name"] == short[2]
    got = store.table("courses")
    assert got["title"].tolist() == ["Course 0", "Course 1", "Course 2", f"Bearer {MASK}"]
    assert got["grade"].tolist() == ["A", "A", "A", short[0]]
    assert got["credit_value"].tolist()[:3] == [3.0, 3.0, 3.0]
    assert SECRETS[0] not in store.table("document_records")["record_json"].iloc[0]
    assert store.document("T-1", list_name="consumer_transcripts") == (
        f"<CollegeTranscript>{short[0]} {MASK}</CollegeTranscript>"
    )
    store.close()
    data = b"".join(f.read_bytes() for f in tmp_path.iterdir())
    assert not [s for s in (LEARNED, *SECRETS) if s.encode() in data]
    assert all(secret.encode() in data for secret in short)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"access_token": "abc", "n": 1}', '{"access_token": "[REDACTED]", "n": 1}'),
        ('{"Password": "p4ss"}', '{"Password": "[REDACTED]"}'),
        ("grant_type=password&password=p4ss", "grant_type=password&password=[REDACTED]"),
        ('truncated {"client_secret": "zzz", ', 'truncated {"client_secret": "[REDACTED]", '),
        ("Authorization: Bearer abcdefgh12", "Authorization: Bearer [REDACTED]"),
        (f"token {JWT} here", "token [REDACTED] here"),
        (f"x{SECRETS[0]}y", "x[REDACTED]y"),
        ("<Course>Token Ring Networks</Course>", "<Course>Token Ring Networks</Course>"),
        ("a bearer of good news", "a bearer of good news"),
        ("", ""),
    ],
)
def test_the_scrubber(text: str, expected: str) -> None:
    assert Redactor(SECRETS).text(text) == expected


def test_the_scrubber_masks_sensitive_headers_whatever_their_value() -> None:
    headers = Redactor().headers({"Cookie": "a=1", "X-Api-Key": "k", "Accept": "*/*"})
    assert headers == {"Cookie": "[REDACTED]", "X-Api-Key": "[REDACTED]", "Accept": "*/*"}


def test_the_fast_path_hints_cover_every_sensitive_field_name() -> None:
    from workbench.http.masking import SENSITIVE_FIELDS

    for name in SENSITIVE_FIELDS:
        assert Redactor().text(f'{{"{name}": "value-1234"}}') != f'{{"{name}": "value-1234"}}'
