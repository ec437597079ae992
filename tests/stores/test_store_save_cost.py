"""A save serializes and validates the document once, and stores it without null fields."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from tether.engine.core.session import Session, TranscriptMessage
from tether.stores import MemoryStore, Store


def _counting(monkeypatch: pytest.MonkeyPatch, calls: list[str], name: str) -> None:
    original = getattr(Session, name)
    if name.startswith("model_validate"):
        def class_wrapper(cls: type[Session], *args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(Session, name, classmethod(class_wrapper))
    else:
        def wrapper(self: Session, *args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(Session, name, wrapper)


async def test_a_save_serializes_and_validates_the_document_once(
    store: Store, new_session: Callable[..., Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    created = await store.create(new_session(data={"n": 1}))
    calls: list[str] = []
    for name in ("model_dump", "model_dump_json", "model_validate", "model_validate_json"):
        _counting(monkeypatch, calls, name)
    created.data["n"] = 2
    saved = await store.save(created, created.revision)
    assert sorted(calls) == ["model_dump_json", "model_validate_json"]
    assert saved.data == {"n": 2} and saved.revision == created.revision + 1
    created.data["n"] = 3
    assert saved.data == {"n": 2}  # the stored copy shares nothing with the session passed in


async def test_the_stored_document_has_no_null_fields_and_loads_back_equal() -> None:
    store = MemoryStore()
    at = datetime(2026, 1, 1, tzinfo=UTC)
    message = TranscriptMessage(seq=1, role="user", text="hi", at=at, input_id="m1")
    session = Session(id="s1", agent="a", created_at=at, messages=[message], message_seq=1, data={"gone": None})
    stored = await store.create(session)
    raw = store._docs["s1"]
    assert ":null" not in raw.replace('"gone":null', "")  # a field's None is left out; user data keeps it
    assert json.loads(raw)["schema_version"] == stored.schema_version  # always written, whatever its value
    loaded = await store.load("s1")
    assert loaded == stored and loaded is not None and loaded.messages == [message]
    assert loaded.data == {"gone": None}
