"""``Store.list(agent_prefix=...)``: the sessions of every agent whose name starts with a prefix,
newest first, in one query; LIKE's wildcards in the prefix match only themselves."""

from __future__ import annotations

from collections.abc import Callable

from tether.engine.core.session import Session
from tether.stores import Store
from tether.testing import FakeClock

NewSession = Callable[..., Session]


async def test_list_filters_by_agent_prefix_newest_first(
    store: Store, new_session: NewSession, clock: FakeClock
) -> None:
    made: dict[str, str] = {}
    for agent in ("workflow:a", "support", "workflow:b", "workflowx", "work", "workflow:a"):
        clock.advance("1s")
        made[(await store.create(new_session(agent=agent))).id] = agent
    rows = await store.list(agent_prefix="workflow:")
    assert [made[r.id] for r in rows] == ["workflow:a", "workflow:b", "workflow:a"]
    assert [r.saved_at for r in rows] == sorted((r.saved_at for r in rows), reverse=True)
    assert len(await store.list(agent_prefix="workflow:", limit=2)) == 2
    assert [made[r.id] for r in await store.list(agent_prefix="workflow:", agent="workflow:b")] == ["workflow:b"]
    assert len(await store.list(agent_prefix="w")) == 5
    assert len(await store.list(agent_prefix="")) == 6


async def test_an_agent_prefix_with_like_wildcards_matches_them_literally(
    store: Store, new_session: NewSession
) -> None:
    for agent in ("a_b%c", "axb%c", "a_bzc", "a_b%cd", "a\\b"):
        await store.create(new_session(agent=agent))
    assert sorted(r.agent for r in await store.list(agent_prefix="a_b%")) == ["a_b%c", "a_b%cd"]
    assert [r.agent for r in await store.list(agent_prefix="a\\")] == ["a\\b"]
