"""Document parts (``TurnRecords.parts``): kept beside the document, written only when given, put
back into it when it loads, under the document's compare-and-swap, removed with the session."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from pydantic import ValidationError
from store_backends import Backend

from tether.engine.core.session import Session
from tether.errors import SessionConflict, SessionFlowInvariant
from tether.stores import Store, TurnRecords
from tether.testing import FakeClock

NewSession = Callable[..., Session]
PATH = "run.nodes"


def parts(**members: object) -> TurnRecords:
    return TurnRecords(parts={PATH: {name: json.dumps(value) for name, value in members.items()}})


async def test_parts_load_back_into_the_document_and_a_save_writes_only_those_it_is_given(
    store: Store, new_session: NewSession
) -> None:
    doc = await store.create(new_session(data={"run": {"status": "a", "nodes": {}}}),
                             parts(a={"n": 1}, b={"n": 1}, c={"n": 1}))
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.data == {"run": {"status": "a", "nodes": {"a": {"n": 1}, "b": {"n": 1},
                                                                                   "c": {"n": 1}}}}
    await store.save(doc.model_copy(update={"data": {"run": {"status": "b", "nodes": {}}}}), 0, parts(b={"n": 2}))
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.revision == 1
    assert loaded.data["run"] == {"status": "b", "nodes": {"a": {"n": 1}, "b": {"n": 2}, "c": {"n": 1}}}


async def test_a_save_that_loses_the_swap_writes_no_part(store: Store, new_session: NewSession) -> None:
    doc = await store.create(new_session(data={"run": {}}), parts(a=1))
    await store.save(doc, 0, parts(a=2))
    with pytest.raises(SessionConflict):
        await store.save(doc, 0, parts(a=3, b=3))
    loaded = await store.load(doc.id)
    assert loaded is not None and loaded.data == {"run": {"nodes": {"a": 2}}}


async def test_parts_are_read_with_the_lease_and_removed_with_their_session(
    backend: Backend, new_session: NewSession, clock: FakeClock
) -> None:
    store = await backend.make()
    doc = await store.create(new_session(data={}), parts(a=1))
    async with store.lease_and_load(doc.id) as held:
        leased = await held.load()
    assert leased is not None and leased.data == {"run": {"nodes": {"a": 1}}}
    await store.delete(doc.id)
    again = await store.create(doc.model_copy(update={"data": {}}))
    loaded = await store.load(again.id)
    assert loaded is not None and loaded.data == {}  # the old parts went with the deleted session

    ended = await store.create(new_session(data={}, status="completed"), parts(z=1))
    clock.advance("1h")
    assert await store.prune(older_than=clock.now() - timedelta(minutes=1)) >= 1
    await store.create(ended.model_copy(update={"data": {}}))
    reborn = await store.load(ended.id)
    assert reborn is not None and reborn.data == {}


async def test_a_part_where_the_document_holds_no_object_fails_the_load(
    store: Store, new_session: NewSession
) -> None:
    doc = await store.create(new_session(data={"run": "text"}), parts(a=1))
    with pytest.raises(SessionFlowInvariant, match=r"run\.nodes"):
        await store.load(doc.id)


def test_a_part_must_be_json_under_a_dotted_path() -> None:
    with pytest.raises(ValidationError, match="is not JSON"):
        TurnRecords(parts={PATH: {"a": "{oops"}})
    with pytest.raises(ValidationError, match="dotted names"):
        TurnRecords(parts={"run..nodes": {"a": "1"}})


async def test_the_stores_say_they_keep_parts(store: Store) -> None:
    assert store.document_parts
