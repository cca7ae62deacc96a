"""Events in the store: every event an answer gives is kept, whatever its ids say."""

from __future__ import annotations


def test_events_one_answer_gives_one_id_are_kept_apart_and_said(tmp_path, caplog) -> None:
    """A number of its kind under eventId beside the event's own GUID under id: taking the
    former for the id must never merge nine events into three."""
    import uuid

    from workbench.store import Store

    events = [
        {"id": str(uuid.UUID(int=i)), "eventId": i % 3, "kind": "Offer", "at": f"2026-03-0{i + 1}"}
        for i in range(9)
    ]
    with Store(tmp_path / "wb.db") as store:
        store.record_snapshot(None, "domestic_events", events)
        store.record_snapshot(None, "placement_events", events)
        kept = store.table("events")
    assert (kept["source"] == "domestic").sum() == 9 and (kept["source"] == "placement").sum() == 9
    assert "share an id" in caplog.text and "event_fields" in caplog.text
