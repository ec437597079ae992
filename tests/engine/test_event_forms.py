"""An event's stored form (``FlowEvent.as_dict``) and the view a checkpoint hands its host."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum

from pydantic_core import to_jsonable_python

from tether.engine.core.events import CollectUpdate, CustomEvent, FlowEnd, NodeEnter, StoredForms

AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


class Size(StrEnum):
    LARGE = "large"


def _converted(event: object) -> dict[str, object]:
    """The stored form as a full conversion makes it (what ``as_dict`` skips for plain values),
    with ``at`` as ``isoformat`` writes it."""
    raw = {"type": type(event).type, **{k: v for k, v in vars(event).items() if not k.startswith("_")}}  # type: ignore[attr-defined]
    return {**to_jsonable_python(raw), "at": raw["at"].isoformat()}


def test_plain_and_converted_events_have_the_same_stored_form_as_a_full_conversion() -> None:
    events = [
        NodeEnter(run_id="r1", flow="f", at=AT, node="ask"),
        NodeEnter(run_id="r1", flow="f", at=AT, node=Size.LARGE),  # a str subclass is converted
        NodeEnter(run_id=None, flow=None, at=datetime(2026, 3, 1, 10, tzinfo=timezone(timedelta(hours=2))), node="n"),
        CollectUpdate(run_id="r1", flow="f", at=AT, node="ask", collected={"size": Size.LARGE, "when": AT},
                      missing=["name"], sources={"size": "pattern"}),
        FlowEnd(run_id="r1", flow="f", at=AT, reason="completed", gates=[{"id": "g", "passed": True}]),
        CustomEvent(run_id="r1", flow="f", at=AT, name="paid", data={"amount": 1.5, "items": (1, 2)}),
    ]
    for event in events:
        assert event.as_dict() == _converted(event), event
    assert type(events[1].as_dict()["node"]) is str
    assert events[3].as_dict()["collected"] == {"size": "large", "when": "2026-03-01T09:30:00Z"}


def test_a_stored_form_is_a_copy_each_time() -> None:
    event = NodeEnter(run_id="r1", flow="f", at=AT, node="ask")
    first = event.as_dict()
    first["node"] = "changed"
    assert event.as_dict()["node"] == "ask"


def test_stored_forms_convert_only_what_is_read() -> None:
    events = [NodeEnter(run_id="r1", flow="f", at=AT, node=str(n)) for n in range(4)]
    forms = StoredForms(events)
    assert len(forms) == 4
    assert forms[3] == events[3].as_dict() and forms[-1]["node"] == "3"
    assert forms[2:] == [events[2].as_dict(), events[3].as_dict()]
    assert ["_record" in vars(e) for e in events] == [False, False, True, True]
