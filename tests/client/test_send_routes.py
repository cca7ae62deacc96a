"""The send routes as the partner spells them (DESIGN §3): the spec's ``/responses`` and
``/transcripts``, or the singular ``/response`` and ``/transcript`` OCAS' own clients post to.
A 404 or 405 there took nothing: the other spelling is tried once, and the store remembers the
one that took the send; a send no spelling takes is ``failed`` and may be sent again."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import workbench as wb
from tests.hostile.partner import HostilePartner
from tests.sandbox.helpers import FIXED_START
from tests.students import of_student, request_xml
from workbench import spec
from workbench.api.exchange import SEND_ROUTES_META
from workbench.sandbox import Sandbox, generator

from .documents import response_xml

KINDS = ("send_response", "send_transcript", "send_acknowledgment")


def _send(w: wb.Workbench, sb: Sandbox, kind: str, index: int = 0) -> str:
    """Send ``kind`` to the ``index``-th pending item of ``sb``; the item's id."""
    if kind == "send_acknowledgment":
        item = sb.pending_transcript_ids()[index]
        w.consumer.send_acknowledgment(item)
        return item
    item = sb.pending_request_ids()[index]
    if kind == "send_response":
        w.supplier.send_response(item, wb.pesc.build_response(request_xml(sb, item)))
    else:
        w.supplier.send_transcript(item, _transcript(sb, item))
    return item


def _transcript(sb: Sandbox, item: str) -> str:
    xml = generator.college_transcript_xml(
        5, 1, request_id=sb.state.requests[item].tracking, created=sb.state.now
    )
    return of_student(xml, request_xml(sb, item))


def _posts(sb: Sandbox, spelling: str) -> int:
    """How many POSTs reached ``spelling``'s send routes."""
    routes = [t.split("{id}")[1] for t in spec.SEND_ROUTES[spelling].values()]
    return sum(n for (m, p), n in sb.hits.items() if m == "POST" and p.endswith(tuple(routes)))


@pytest.mark.parametrize("kind", KINDS)
def test_a_singular_only_partner_takes_each_send_exactly_once(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    kind: str,
) -> None:
    sb = sandbox_factory(send_routes="singular")
    w = connect_to(sb, db=tmp_path / "w.db")
    item = _send(w, sb, kind)
    assert [(r["operation"], r["request_id"]) for r in sb.received] == [(kind, item)]
    assert w.store.table("outbox")["state"].tolist() == ["sent"]
    if kind == "send_acknowledgment":  # one spelling only: nothing to learn
        assert w.store.meta(SEND_ROUTES_META) is None
        return
    assert _posts(sb, "plural") == 1  # the spec's spelling first: a 404, nothing taken
    assert w.store.meta(SEND_ROUTES_META) == "singular"
    _send(w, sb, kind, index=1)  # the remembered spelling goes first
    assert _posts(sb, "plural") == 1 and _posts(sb, "singular") == 2
    assert len(sb.received) == 2


def test_the_remembered_spelling_outlives_the_workbench(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
) -> None:
    sb = sandbox_factory(send_routes="singular")
    _send(connect_to(sb, db=tmp_path / "w.db"), sb, "send_response")
    _send(connect_to(sb, db=tmp_path / "w.db"), sb, "send_transcript", index=1)
    assert _posts(sb, "plural") == 1 and len(sb.received) == 2


@pytest.mark.parametrize("spelling", ["plural", "singular"])
def test_the_profiles_spelling_goes_first(
    sandbox_factory: Callable[..., Sandbox],
    connect_to: Callable[..., wb.Workbench],
    tmp_path: Path,
    spelling: str,
) -> None:
    sb = sandbox_factory(send_routes=spelling)
    w = connect_to(sb, db=tmp_path / "w.db", WORKBENCH_SEND_ROUTES=spelling)
    _send(w, sb, "send_transcript")
    other = "plural" if spelling == "singular" else "singular"
    assert _posts(sb, other) == 0 and _posts(sb, spelling) == 1
    assert w.store.meta(SEND_ROUTES_META) == spelling


@pytest.fixture
def partner() -> Iterator[HostilePartner]:
    """A partner serving request R-1 and no send route at all (every other path: a 404)."""
    request = generator.transcript_request_xml(1, 0, request_id="R-1", created=FIXED_START)
    detail = [{"RequestID": "R-1", "RequestDate": "2026-03-02T09:00:00.000Z", "PESCXML": request}]
    with HostilePartner() as p:
        p.answer("GET", spec.SUPPLIER_REQUEST_PATH.format(id="R-1"), json.dumps(detail).encode())
        yield p


@pytest.mark.parametrize("status", [404, 405])
def test_a_send_no_spelling_takes_is_failed_names_the_setting_and_may_be_sent_again(
    partner: HostilePartner, tmp_path: Path, status: int
) -> None:
    refusal = json.dumps({"Message": "Cannot find transcript request ID."}).encode()
    for spelling in spec.SEND_ROUTES.values():
        partner.answer("POST", spelling["send_response"].format(id="R-1"), refusal, status)
    with wb.connect(env=partner.env, db=tmp_path / "db.sqlite") as w:
        with pytest.raises(wb.PartnerError) as refused:
            w.supplier.send_response("R-1", response_xml("R-1"))
        message = str(refused.value)
        assert "send_routes" in message and "WORKBENCH_SEND_ROUTES" in message
        assert "(Cannot find transcript request ID.)" in message  # what the partner said
        assert "base URL" not in message
        assert "Nothing was received" in message
        assert refused.value.status == status
        outbox = w.store.table("outbox")
        assert outbox["state"].tolist() == ["failed"]
        with pytest.raises(wb.PartnerError) as again:  # a resend is allowed, not a duplicate
            w.supplier.send_response("R-1", response_xml("R-1"))
        assert not isinstance(again.value, wb.DuplicateSend)
        assert w.store.table("outbox")["state"].tolist() == ["failed", "failed"]
        assert w.store.meta(SEND_ROUTES_META) is None
    posts = [path for method, path in partner.requests if method == "POST"]
    assert sorted(set(posts)) == sorted(
        s["send_response"].format(id="R-1") for s in spec.SEND_ROUTES.values()
    )
    assert len(posts) == 4  # each spelling once per send
