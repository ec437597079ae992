"""API keys and tenants: a key never reads, lists, streams or writes another tenant's session;
missing or bad keys are 401 JSON; an open server (no keys) serves everyone as ``public``."""

from __future__ import annotations

import httpx
import pytest
from server_client import ACME, GLOBEX

from tether.runtime import Runtime
from tether.server import KeyRing, hash_key, keys_from_env

ECHO = "/v1/agents/Echo/sessions"


async def test_no_key_or_a_bad_key_is_401_json(client: httpx.AsyncClient) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic a2V5LWFjbWU="},
                    {"X-API-Key": "wrong"}):
        response = await client.get("/v1/agents", headers=headers)
        assert response.status_code == 401, headers
        assert response.json()["code"] == "unauthenticated" and response.headers["www-authenticate"] == "Bearer"
    assert (await client.get("/v1/agents", headers={"X-API-Key": "key-acme"})).status_code == 200
    assert (await client.get("/healthz")).status_code == 200  # health needs no key


async def test_a_key_never_touches_another_tenants_session(client: httpx.AsyncClient) -> None:
    sid = (await client.post(ECHO, headers=ACME)).json()["session"]
    await client.post(f"{ECHO}/{sid}/messages", json={"text": "secret"}, headers=ACME)
    url = f"{ECHO}/{sid}"
    attempts = [
        await client.get(url, headers=GLOBEX),
        await client.get(f"{url}/transcript", headers=GLOBEX),
        await client.get(f"{url}/events", headers=GLOBEX),
        await client.post(f"{url}/messages", json={"text": "hi"}, headers=GLOBEX),
        await client.post(f"{url}/messages", json={"text": "hi"}, headers={**GLOBEX, "Accept": "text/event-stream"}),
        await client.post(f"{url}/events", json={"name": "crm-updated"}, headers=GLOBEX),
        await client.post(f"{url}/signals/paid", json={}, headers=GLOBEX),
        await client.post(f"{url}/approvals/a1", json={"decision": "approved"}, headers=GLOBEX),
        await client.post(f"{url}/release", headers=GLOBEX),
        await client.delete(url, headers=GLOBEX),
    ]
    for response in attempts:
        assert response.status_code == 403 and response.json()["code"] == "forbidden", response.request.url
        assert "secret" not in response.text
    assert (await client.get(ECHO, headers=GLOBEX)).json()["sessions"] == []
    (mine,) = (await client.get(ECHO, headers=ACME)).json()["sessions"]
    assert mine["id"] == sid
    transcript = (await client.get(f"{url}/transcript", headers=ACME)).json()["messages"]
    assert [m["text"] for m in transcript] == ["secret", "reply 1: secret"]  # nothing globex sent landed


async def test_a_session_that_ends_and_is_replaced_keeps_its_tenant(client: httpx.AsyncClient,
                                                                    runtime: Runtime) -> None:
    sid = (await client.post(ECHO, headers=ACME)).json()["session"]
    await runtime.complete(sid)
    answer = (await client.post(f"{ECHO}/{sid}/messages", json={"text": "again"}, headers=ACME)).json()
    assert answer["success"] and answer["session"] != sid
    assert (await client.get(f"{ECHO}/{answer['session']}", headers=ACME)).json()["tenant"] == "acme"
    assert (await client.get(f"{ECHO}/{answer['session']}", headers=GLOBEX)).status_code == 403


async def test_an_open_server_serves_the_public_tenant(open_client: httpx.AsyncClient) -> None:
    sid = (await open_client.post(ECHO)).json()["session"]
    state = (await open_client.get(f"{ECHO}/{sid}")).json()
    assert state["tenant"] == "public"


def test_keys_are_kept_hashed_and_read_from_the_environment() -> None:
    ring = KeyRing({"s3cret": "acme"})
    assert "s3cret" not in repr(vars(ring)) and hash_key("s3cret") in vars(ring)["_tenants"]
    assert ring.tenant("Bearer s3cret", None) == "acme"
    assert keys_from_env({"TETHER_API_KEYS": "acme:k1, globex:k2"}) == {"k1": "acme", "k2": "globex"}
    assert keys_from_env({}) == {}
    with pytest.raises(ValueError, match="entry 2 is not 'tenant:key'"):
        keys_from_env({"TETHER_API_KEYS": "acme:k1,oops"})
