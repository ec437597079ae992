"""The web inspector in a real browser (Debian's chromium through Playwright) against a real
``tether serve`` subprocess: the key prompt and the session list, a streamed reply, the highlighted
node moving, an approval decided and a signal sent from the page, a turn run by another client
showing up live, and what a session spent and logged. Screenshots go to ``test-artifacts/inspector/``."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from inspector_app import TALKER_REPLIES
from inspector_browser import find_chromium, inspector_page, shot, tether_serve
from server_agents import BOOM, NOTHING_FOUND

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extra)")
expect = playwright_api.expect

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium found (apt-get install -y chromium)")

KEY = "inspector-key"
HERE = Path(__file__).resolve().parent
WAIT = 20_000  # ms: a loaded CI machine is slow, never this slow


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("inspector") / "sessions.db"
    # the frugal agent's model is priced: $1,000 per million tokens in, $2,000 out
    env = {"TETHER_API_KEYS": f"acme:{KEY}", "TETHER_PRICES": "function:model=1000/2000"}
    with tether_serve(HERE / "inspector_app.py", store, env) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Any, base_url: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page with the API key already typed in (the key prompt has its own test)."""
    with inspector_page(browser, base_url, {"tether.inspector.key": KEY}) as page:
        yield page


def new_session(page: Any, agent: str, flow: str = "") -> str:
    """Creates a session from the list page's form; returns its id (the page is then on it)."""
    page.goto("/inspect")
    page.select_option("#new-session select[name=agent]", agent)
    if flow:
        page.select_option("#new-session select[name=flow]", flow)
    page.click("#new-session button[type=submit]")
    page.wait_for_url(re.compile(rf"/inspect/{agent}/[0-9a-f-]+$"), timeout=WAIT)
    expect(page.locator("#s-status")).to_have_text("running", timeout=WAIT)
    return str(page.url.rsplit("/", 1)[1])


def say(page: Any, text: str) -> None:
    page.fill("#chat-input", text)
    page.click("#chat-send")


def current(page: Any, node: str) -> Any:
    return page.locator(f'svg.flow g.node.current[data-node="{node}"]')


def test_the_page_asks_for_the_key_then_lists_the_sessions(browser: Any, base_url: str) -> None:
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {KEY}"}) as api:
        made = api.post("/v1/agents/Sam/sessions").json()["session"]
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=base_url)
    try:
        page = context.new_page()
        page.goto("/inspect")
        expect(page.locator("#banner")).to_contain_text("unauthenticated", timeout=WAIT)
        expect(page.locator("#key-form")).to_be_visible()
        page.fill("#key-input", KEY)
        page.click("#key-form button")
        row = page.locator("#sessions tbody tr", has=page.locator(f'a[href$="/{made}"]'))
        expect(row).to_contain_text("Sam", timeout=WAIT)
        expect(page.locator("#banner")).to_be_hidden()
        page.select_option("#filters select[name=status]", "completed")
        page.click("#filters button")
        expect(row).to_have_count(0, timeout=WAIT)
        shot(page, "session-list")
    finally:
        context.close()


def test_a_sent_message_streams_its_reply_into_the_page(page: Any) -> None:
    new_session(page, "Talker")
    # the streaming bubble's text at every change (a mutation record per delta): the reply arrives in pieces
    page.evaluate("""() => {
        window.seen = [];
        new MutationObserver((records) => {
            for (const record of records) {
                const bubble = record.target;
                if (bubble.matches && bubble.matches('.msg.streaming .bubble')) {
                    for (const node of record.addedNodes) window.seen.push(node.textContent);
                }
            }
        }).observe(document.querySelector('#transcript'), {childList: true, subtree: true});
    }""")
    say(page, "hi there")
    reply = page.locator(".msg.assistant:not(.streaming) .bubble", has_text=TALKER_REPLIES[0])
    expect(reply).to_have_count(1, timeout=WAIT)
    expect(page.locator(".msg.user .bubble", has_text="hi there")).to_have_count(1)
    seen = [text for text in page.evaluate("window.seen") if text]
    assert seen[-1] == TALKER_REPLIES[0]
    assert len(set(seen)) >= 3, f"the reply did not arrive in pieces: {seen}"
    assert all(TALKER_REPLIES[0].startswith(text) for text in seen)
    shot(page, "streamed-reply")


def test_the_highlighted_node_moves_as_turns_run(page: Any) -> None:
    new_session(page, "Sam")
    say(page, "I want a refund")
    expect(current(page, "refund_order")).to_have_count(1, timeout=WAIT)
    expect(page.locator("#flow-tabs .tab.active")).to_have_text("refund")
    shot(page, "node-refund_order")
    say(page, "A-1001")
    expect(current(page, "refund_reason")).to_have_count(1, timeout=WAIT)
    expect(current(page, "refund_order")).to_have_count(0)
    expect(page.locator("#fields")).to_contain_text("A-1001")
    shot(page, "node-refund_reason")
    say(page, "it arrived broken")
    expect(current(page, "refund_confirm")).to_have_count(1, timeout=WAIT)
    expect(current(page, "refund_reason")).to_have_count(0)
    say(page, "yes")
    expect(page.locator(".msg.assistant .bubble", has_text="opened refund request")).to_have_count(1, timeout=WAIT)
    expect(page.locator("svg.flow g.node.current")).to_have_count(0)
    expect(page.locator("#no-runs")).to_be_visible()


def test_approving_in_the_page_continues_the_run(page: Any) -> None:
    new_session(page, "Refunder", flow="refund")
    approval = page.locator(".approval")
    expect(approval).to_contain_text("Refund 30?", timeout=WAIT)
    expect(approval.locator("pre.payload")).to_contain_text('"amount": 30')
    expect(current(page, "ask")).to_have_count(1)
    shot(page, "approval-pending")
    approval.locator("textarea").fill("checked the receipt")
    approval.locator("button.approve").click()
    expect(page.locator(".msg.assistant .bubble", has_text="refund approved by inspector")).to_have_count(
        1, timeout=WAIT)
    expect(page.locator(".approval")).to_have_count(0)
    expect(page.locator("#events")).to_contain_text("flow-end")
    shot(page, "approval-decided")


def test_a_typed_input_form_sends_the_signal_a_run_waits_on(page: Any) -> None:
    new_session(page, "Refunder")
    say(page, "I paid")
    form = page.locator(".input-form")
    expect(form).to_contain_text("signal paid", timeout=WAIT)
    form.locator("select[name=type]").select_option("JSON")
    form.locator("textarea[name=value]").fill("{not json")
    form.locator("button[type=submit]").click()
    expect(page.locator("#banner")).to_contain_text("invalid-json")
    form.locator("textarea[name=value]").fill('{"amount": 12}')
    form.locator("button[type=submit]").click()
    try:
        expect(page.locator(".msg.assistant .bubble", has_text="payment of 12 received")).to_have_count(
            1, timeout=WAIT)
    except AssertionError as exc:  # seen once under load in CI: say what the page showed instead
        raise AssertionError(f"{exc}\nbanner: {page.locator('#banner').inner_text()!r}\n"
                             f"inputs: {page.locator('#inputs').inner_text()!r}\n"
                             f"transcript: {page.locator('.msg .bubble').all_inner_texts()!r}") from exc
    expect(page.locator(".input-form")).to_have_count(0)
    shot(page, "signal-sent")


def test_a_turn_run_by_another_client_shows_up_live(page: Any, base_url: str) -> None:
    session = new_session(page, "Sam")
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=30) as api:
        answer = api.post(f"/v1/agents/Sam/sessions/{session}/messages", json={"text": "where is my order"})
    assert answer.json()["success"] is True
    expect(current(page, "ask_order")).to_have_count(1, timeout=WAIT)
    expect(page.locator(".msg.user .bubble", has_text="where is my order")).to_have_count(1)
    expect(page.locator("#s-live.on")).to_have_count(1)


def test_a_handed_off_session_is_given_back_to_the_bot_from_the_page(page: Any) -> None:
    new_session(page, "Sam")
    expect(page.locator("#s-release")).to_be_hidden()
    say(page, "I want to talk to a person")
    expect(page.locator("#s-status")).to_have_text("handed off", timeout=WAIT)
    shot(page, "handed-off")
    page.click("#s-release")
    expect(page.locator("#s-status")).to_have_text("running", timeout=WAIT)
    expect(page.locator("#s-release")).to_be_hidden()


def _customer_stream(base_url: str, session: str, after: int, got: list[dict[str, Any]]) -> None:
    """The customer's client: reads the session's event stream until a person's message arrives."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as client, \
            client.stream("GET", f"/v1/agents/Sam/sessions/{session}/stream", params={"after": after}) as stream:
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: ") and kind == "operator-message":
                got.append(json.loads(line.removeprefix("data: ")))
                return


def test_a_person_takes_over_answers_and_gives_the_conversation_back(page: Any, base_url: str) -> None:
    session = new_session(page, "Sam")
    expect(page.locator("#operator-form")).to_be_hidden()
    say(page, "I want to talk to a person")
    expect(page.locator("#s-status")).to_have_text("handed off", timeout=WAIT)
    page.goto("/inspect")  # the list of sessions waiting for a person, with the reason
    waiting = page.locator(f'#handoffs tbody tr[data-session="{session}"]')
    expect(waiting).to_contain_text("customer asked for a person", timeout=WAIT)
    waiting.locator("a").click()
    expect(page.locator("#operator-form")).to_be_visible(timeout=WAIT)
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {KEY}"}) as api:
        seen = api.get(f"/v1/agents/Sam/sessions/{session}/events").json()["events"][-1]["seq"]
    got: list[dict[str, Any]] = []
    customer = threading.Thread(target=_customer_stream, args=(base_url, session, seen, got), daemon=True)
    customer.start()
    page.fill("#operator-name", "Ann")
    expect(page.locator("#operator-send")).to_have_text("Reply as Ann")
    page.fill("#operator-input", "Hi, I'm Ann from Acme. I'll sort this out.")
    page.click("#operator-send")
    answered = page.locator(".msg.agent", has_text="I'll sort this out.")
    expect(answered).to_have_count(1, timeout=WAIT)
    expect(answered.locator(".meta")).to_contain_text("Ann (a person)")
    customer.join(timeout=60)
    said = "Hi, I'm Ann from Acme. I'll sort this out."
    assert [(e["data"]["by"], e["data"]["text"]) for e in got] == [("Ann", said)]
    shot(page, "person-answers")
    page.click("#s-release")
    expect(page.locator("#s-status")).to_have_text("running", timeout=WAIT)
    expect(page.locator("#operator-form")).to_be_hidden()
    say(page, "where is my order")  # the bot has the conversation again and answers
    expect(page.locator(".msg.assistant .bubble", has_text="What's your order number?")).to_have_count(1, timeout=WAIT)


def test_the_session_page_shows_what_the_session_spent_and_logged(page: Any) -> None:
    new_session(page, "Frugal")
    expect(page.locator("#log")).to_contain_text("Nothing logged.")
    expect(page.locator("#s-usage")).to_have_text("0 model calls")
    say(page, "hi")
    expect(page.locator(".msg.assistant .bubble", has_text="What is your name?")).to_have_count(1, timeout=WAIT)
    say(page, "it is a secret")
    expect(page.locator("#usage [data-usage=llm_calls]")).to_have_text("2", timeout=WAIT)
    assert NOTHING_FOUND.prompt_tokens is not None and NOTHING_FOUND.completion_tokens is not None
    assert NOTHING_FOUND.cached_input_tokens is not None
    expect(page.locator("#usage [data-usage=prompt_tokens]")).to_have_text(str(2 * NOTHING_FOUND.prompt_tokens))
    expect(page.locator("#usage [data-usage=completion_tokens]")).to_have_text(
        str(2 * NOTHING_FOUND.completion_tokens))
    expect(page.locator("#usage [data-usage=cached_input_tokens]")).to_have_text(
        str(2 * NOTHING_FOUND.cached_input_tokens))
    expect(page.locator("#usage [data-usage=workflow_calls]")).to_have_count(0)  # nothing to say
    total = 2 * (NOTHING_FOUND.prompt_tokens + NOTHING_FOUND.completion_tokens)
    dollars = (2 * NOTHING_FOUND.prompt_tokens * 1000 + 2 * NOTHING_FOUND.completion_tokens * 2000) / 1e6
    expect(page.locator("#s-usage")).to_have_text(f"2 model calls · {total} tokens · ~${dollars:.4f}")
    expect(page.locator("#usage [data-usage=estimated_cost]")).to_have_text(f"${dollars:.6f}")
    warns = page.locator("#log .entry.warn")
    expect(warns).to_have_count(2)
    expect(warns.first.locator(".message")).to_have_text("extraction for 'ask_name' returned no usable data")
    expect(page.locator("#log-counts")).to_have_text("0 log · 2 warn · 0 error")
    shot(page, "usage-and-log")


def test_a_logged_error_is_shown_as_text_never_as_markup(page: Any) -> None:
    new_session(page, "Frugal", flow="boom")
    error = page.locator("#log .entry.error")
    expect(error).to_have_count(1, timeout=WAIT)
    expect(error.locator(".message")).to_contain_text(BOOM)
    expect(error.locator("details pre")).to_contain_text('"node": "explode"')
    assert page.locator("#log img").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None
