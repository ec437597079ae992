"""Model economy: what a real model would be sent over two 30-message conversations.

Each agent talks to ``tether.models.openai_model.OpenAIModel`` pointed (``base_url``) at a local
OpenAI-compatible wire server on 127.0.0.1 (``tests/models/model_server.py``) that logs every
request and answers it from a small rule-based responder (scores by keyword, reads order numbers
with a regex, answers questions with a short sentence, calls the forced extraction tool). Nothing
leaves the machine.

- ``examples/support.py`` makes ``understand`` calls on every message and ``speak`` calls for the
  questions typed mid-form ("how long do refunds usually take?"), which are answered before the
  step asks again;
- an intake form defined here (one catch-all flow: nothing to score) makes ``extract`` calls on
  every message and a ``decide`` call per report.

The adapter runs without native JSON Schema support (``json_object`` mode), as with many local
servers: the response schema then travels in the system text, where it costs tokens and where
its position decides what a provider's prompt cache can reuse.

Tokens are estimated at 4 characters a token over everything the request carries (system and
conversation messages, tools, the response schema); ratios are what matter. Reported per agent:
calls per customer message (mean, max), summaries made, prompt tokens per call over messages 1-5
and 26-30 and their ratio; and per call kind (understand, speak, extract, decide):

* calls, and calls per customer message (mean, max);
* prompt tokens per call, mean over messages 1-5 and over messages 26-30, and their ratio;
* the share of the system text (every system message: the stable part, the schema when it
  travels there, a summary note, the per-turn part) that is a byte-identical prefix of the
  previous call of the kind (mean and minimum), the same against the best earlier call (what a
  prefix cache can reuse), and the prefix common to every call of the kind;
* requests that carry the customer's latest message more than once (the extraction tool's
  description quotes it, as seed 000 requires) and requests whose conversation (after system
  messages) starts with an assistant message; for speak, requests that offer tools.

    python bench/tokens.py [--dump requests.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "models"))

from model_server import FakeProvider, Recorded, Reply, chat_completion, openai_chunk  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from tether import Agent, Compaction, Field, Flow, Message, collect, decide, end, goto, on_message, reply  # noqa: E402
from tether.models.openai_model import OpenAIModel  # noqa: E402
from tether.models.types import Capabilities  # noqa: E402
from tether.testing import FakeClock, SequentialIds  # noqa: E402

CHARS_PER_TOKEN = 4
SUMMARY = "The customer asked about their orders, a refund and a delivery address; every request was handled."
ORDER = re.compile(r"\b([A-Z]-\d{4})\b")
KEYWORDS = {
    "orders": ("where is", "order status", "what about", "and a-"),
    "address": ("address",),
    "refund": ("refund", "money back"),
    "human": ("person", "human"),
}
TOPICS = {"address": "address", "refund": "refund", "person": "person", "order": "order"}
# Questions typed mid-form ("how do I find my order number?") are answered by a speak call before
# the step asks again, so the figures cover speak calls too; the confirmations (a reused order
# number, a refund, an address) are answered as a customer would.
CONVERSATION = [
    "hi",
    "where is my order?",
    "how do I find my order number?",
    "A-1001",
    "thanks! and what about A-1002?",
    "I want a refund for order A-1003",
    "how long do refunds usually take?",
    "it arrived broken",
    "yes",
    "do you ship abroad?",
    "I need to change the delivery address of A-1002",
    "is there a fee for changing it?",
    "5 Elm Street, Springfield",
    "yes",
    "ok, where is order A-1004?",
    "can I get a refund for A-1001",
    "what counts as a valid reason?",
    "the colour is wrong",
    "no",
    "please change the address of my order",
    "yes",
    "22 Baker Street, London",
    "no",
    "where is my order A-1002",
    "and A-1001?",
    "refund please, order A-1002",
    "will I get the shipping cost back too?",
    "it never arrived",
    "yes",
    "thanks, bye",
]


# A second agent makes the call kinds support never needs: an intake form whose one flow is a
# catch-all (nothing to score, so no understand call) reads each message with an ``extract`` call
# and triages each report with a ``decide`` call.
DEVICES = ("laptop", "printer", "phone", "monitor", "router", "keyboard", "tablet", "headset")
PROBLEMS = ("won't", "broken", "jams", "cracked", "slow", "dead", "flickers", "drops", "stuck", "noise", "hot",
            "smoke", "blank", "lost")
URGENT = ("won't", "dead", "smoke", "hot")


class Triage(BaseModel):
    priority: str


def form_agent() -> Agent:
    fields = {"device": Field("string", description="The device that has the problem", extract="asked"),
              "problem": Field("string", description="What is wrong with it", extract="asked")}
    intake = Flow("intake", "Report a broken device", nodes=[
        collect("details", fields=["device", "problem"], ask="Which device is it, and what is wrong with it?",
                max_turns=3),
        decide("triage", schema=Triage,
               instructions="How urgent is this: the ${device}, ${problem}? priority: low or high.",
               decide=lambda d, s: goto("urgent" if d.priority == "high" else "queued"), targets=["urgent", "queued"]),
        reply("urgent", response="Ticket opened for your ${device}: a technician calls you within the hour.",
              next=end("urgent")),
        reply("queued", response="Ticket opened for your ${device}: we'll answer by email within two days.",
              next=end("queued")),
    ], on=[on_message(repeat="always")], clear_on_start=["device", "problem"])
    return Agent("Iris", persona="An IT help-desk assistant.", goal="Open a ticket for each broken device.",
                 fields=fields, flows=[intake], idle="silent", history_window=16,
                 compaction=Compaction(max_tokens=4000, preserve_recent=4))


FORM_CONVERSATION = [
    "my laptop won't turn on", "the printer", "it jams on every page", "my phone screen is cracked",
    "the monitor flickers", "hello", "the router", "it drops the connection every hour", "keyboard",
    "some keys are stuck", "my tablet is dead", "the headset makes a noise", "the laptop again",
    "it gets very hot", "printer", "the paper tray is broken", "my phone is slow", "the monitor",
    "it stays blank", "the router smells of smoke", "my keyboard is broken", "the tablet",
    "it lost all its apps", "the headset", "the microphone is broken", "my laptop is slow",
    "the printer jams again", "phone", "it won't charge", "the monitor is cracked",
]


# ---------------------------------------------------------------------------------------------- the wire server


def _system_text(body: dict[str, Any]) -> str:
    return "\n\n".join(m["content"] for m in body["messages"] if m["role"] == "system" and m.get("content"))


def _latest_user(body: dict[str, Any]) -> str:
    users = [m.get("content") or "" for m in body["messages"] if m["role"] == "user"]
    return users[-1] if users else ""


def call_kind(body: dict[str, Any]) -> str:
    """understand, speak, extract (a forced ``submit_<node>_data`` tool), decide (any other
    named reply format: the decide node's id) or summary."""
    if any(t["function"]["name"].startswith("submit_") for t in body.get("tools", [])):
        return "extract"
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        name = str(fmt["json_schema"]["name"])
    else:
        named = re.search(r"\(named '(\w+)'\)", _system_text(body))
        name = named.group(1) if named else "summary"
    return name if name in ("understand", "speak", "summary") else "decide"


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt["json_schema"]["schema"])
    text = _system_text(body)
    start = text.find("JSON Schema, and nothing else:\n")
    if start < 0:
        return {}
    decoder = json.JSONDecoder()
    value, _ = decoder.raw_decode(text[start + len("JSON Schema, and nothing else:\n"):])
    return dict(value)


def _value(name: str, message: str) -> Any:
    lowered = message.lower()
    if name == "order_number":
        found = ORDER.search(message.upper())
        return found.group(1) if found else None
    if message.rstrip().endswith("?"):
        return None  # a question is not an answer (an order number in it aside)
    if name == "topic":
        return next((t for k, t in TOPICS.items() if k in lowered), None)
    if name.startswith("confirm"):
        return lowered if lowered in ("yes", "no") else None
    if name == "new_address":
        return message if re.search(r"\d+ \w+", message) and not ORDER.search(message.upper()) else None
    if name == "refund_reason":
        return message if not ORDER.search(message.upper()) and "refund" not in lowered else None
    return None


def _answer(kind: str, body: dict[str, Any]) -> Any:
    message = _latest_user(body)
    lowered = message.lower()
    if kind == "summary":
        return SUMMARY
    schema = _schema(body)
    props = schema.get("properties", {})
    if kind == "understand":
        reply: dict[str, Any] = {}
        for section, spec in props.items():
            inner = spec.get("properties", {})
            if section == "flows":
                reply[section] = {k: 90 if any(w in lowered for w in KEYWORDS.get(k, ())) else 5 for k in inner}
            elif section in ("mentions", "branches"):
                reply[section] = {k: False for k in inner}
            elif section == "fields":
                reply[section] = {k: _value(k, message) for k in inner}
            elif section == "collect":
                reply[section] = {alias: {n: _value(n, message) for n in group.get("properties", {})}
                                  for alias, group in inner.items()}
            elif section == "summary":  # the window folds soon: the understand call writes the summary
                reply[section] = SUMMARY
            elif section == "asks":
                reply[section] = message.rstrip().endswith("?")
            else:
                reply[section] = None
        return reply
    if kind == "extract":
        return {"device": next((d for d in DEVICES if d in lowered), None),
                "problem": message if any(w in lowered for w in PROBLEMS) else None}
    if kind == "decide":
        urgent = any(w in _system_text(body).lower() for w in URGENT)
        return {"priority": "high" if urgent else "low"}
    reply = {name: _value(name, message) for name in props if name != "message"}
    reply["message"] = "Happy to help with that. Is there anything else I can do for you?"
    return reply


def responder(recorded: Recorded) -> Reply:
    body = recorded.body
    kind = call_kind(body)
    answer = _answer(kind, body)
    content = answer if isinstance(answer, str) else json.dumps(answer)
    usage = {"prompt_tokens": request_tokens(body), "completion_tokens": len(content) // CHARS_PER_TOKEN,
             "total_tokens": request_tokens(body) + len(content) // CHARS_PER_TOKEN}
    if kind == "extract":  # the forced tool is called with the values as its arguments
        call = {"id": "call_1", "name": body["tools"][0]["function"]["name"], "arguments": content}
        if body.get("stream"):
            delta = {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                          "function": {"name": call["name"], "arguments": content}}]}
            return Reply(sse=[(None, openai_chunk(delta)), (None, openai_chunk({}, finish="tool_calls")),
                              (None, openai_chunk(None, usage=usage)), (None, "[DONE]")])
        return Reply(body=chat_completion(None, tool_calls=[call], finish="tool_calls", usage=usage))
    if body.get("stream"):
        return Reply(sse=[(None, openai_chunk({"role": "assistant", "content": content})),
                          (None, openai_chunk({}, finish="stop")), (None, openai_chunk(None, usage=usage)),
                          (None, "[DONE]")])
    return Reply(body=chat_completion(content, usage=usage))


def request_tokens(body: dict[str, Any]) -> int:
    chars = sum(len(m.get("content") or "") for m in body["messages"])
    chars += len(json.dumps(body.get("tools", []))) if body.get("tools") else 0
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        chars += len(json.dumps(fmt["json_schema"]["schema"]))
    return chars // CHARS_PER_TOKEN


# ---------------------------------------------------------------------------------------------- the figures


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _load_agent() -> Any:
    spec = importlib.util.spec_from_file_location("support_example", ROOT / "examples" / "support.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.agent


async def run_conversation(server: FakeProvider, agent: Any, conversation: list[str]) -> list[list[dict[str, Any]]]:
    """The requests of each customer message, in order."""
    model = OpenAIModel("bench-model", base_url=f"{server.url}/v1", provider="local",
                        capabilities=Capabilities(native_json_schema=False))
    clock = FakeClock()
    agent = agent.with_model(model).with_clock(clock, SequentialIds("s"))
    session = None
    per_message: list[list[dict[str, Any]]] = []
    try:
        for i, text in enumerate(conversation):
            clock.advance("20s")
            before = len(server.requests)
            result = await agent.turn(session, Message(text, id=f"m{i}"))
            session = result.session
            if result.status == "handoff" or not result.messages:
                print(f"message {i + 1} ({text!r}): {result.status}, {len(result.messages)} message(s)")
            per_message.append([r.body for r in server.requests[before:]])
    finally:
        await model.aclose()
    return per_message


def _twice(body: dict[str, Any], text: str) -> bool:
    """Does the request carry ``text`` more than once? Anywhere it could be repeated, as a line of
    its own (or quoted "> ..."): the system text and the tools' descriptions, besides the user turn."""
    lines = _system_text(body).splitlines()
    for tool in body.get("tools", []):
        lines += str(tool["function"].get("description", "")).splitlines()
    quoted = [line.strip().removeprefix("> ") for line in lines].count(text)
    sent = sum(1 for m in body["messages"] if m["role"] == "user" and m.get("content") == text)
    return quoted + min(sent, 1) > 1


def report(per_message: list[list[dict[str, Any]]], conversation: list[str]) -> None:
    calls = [len(requests) for requests in per_message]
    requests = [body for bodies in per_message for body in bodies]
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for body in requests:
        by_kind[call_kind(body)].append(body)
    print(f"customer messages: {len(per_message)}, requests: {len(requests)}; calls per message: mean "
          f"{statistics.mean(calls):.2f}, max {max(calls)}; summaries made: {len(by_kind.get('summary', []))}")

    def tokens(bodies: list[list[dict[str, Any]]], kind: str | None = None) -> list[int]:
        return [request_tokens(b) for group in bodies for b in group
                if call_kind(b) != "summary" and kind in (None, call_kind(b))]

    first, last = tokens(per_message[:5]), tokens(per_message[-5:])
    print(f"prompt tokens per call (summaries excluded): messages 1-5 {statistics.mean(first):.0f}, "
          f"messages 26-30 {statistics.mean(last):.0f}, ratio {statistics.mean(last) / statistics.mean(first):.2f}")
    print("per call kind (prefix: the share of the system text byte-identical with the previous call of the kind; "
          "'any earlier': with the best earlier call, what a prefix cache can reuse):")
    for kind, bodies in sorted(by_kind.items()):
        if kind == "summary":
            continue
        per = [sum(1 for b in group if call_kind(b) == kind) for group in per_message]
        early, late = tokens(per_message[:5], kind), tokens(per_message[-5:], kind)
        growth = (f"{statistics.mean(early):.0f} -> {statistics.mean(late):.0f} "
                  f"({statistics.mean(late) / statistics.mean(early):.2f}x; {len(early)} and {len(late)} calls)"
                  if early and late else f"no calls in messages {'1-5' if not early else '26-30'}")
        twice = sum(1 for group, text in zip(per_message, conversation, strict=True)
                    for b in group if call_kind(b) == kind and _twice(b, text))
        opens = sum(1 for b in bodies if (chat := [m for m in b["messages"] if m["role"] != "system"])
                    and chat[0]["role"] == "assistant")
        print(f"  {kind}: {len(bodies)} calls, {statistics.mean(per):.2f} per message (max {max(per)}); "
              f"tokens messages 1-5 -> 26-30: {growth}")
        if len(bodies) >= 2:
            texts = [_system_text(b) for b in bodies]
            shares = [_common_prefix(a, b) / len(b) for a, b in itertools.pairwise(texts)]
            reusable = [max(_common_prefix(t, earlier) for earlier in texts[:i]) / len(t)
                        for i, t in enumerate(texts) if i > 0]
            common = min(_common_prefix(texts[0], t) for t in texts)
            mean_len = statistics.mean(len(t) for t in texts)
            print(f"    prefix: mean {statistics.mean(shares):.0%}, min {min(shares):.0%}; any earlier: mean "
                  f"{statistics.mean(reusable):.0%}, min {min(reusable):.0%}; common to all {common} chars "
                  f"({common / mean_len:.0%} of the mean {mean_len:.0f})")
        note = " (the submit tool's description quotes it, as seed 000 requires)" if kind == "extract" and twice else ""
        offered = sum(1 for b in bodies if b.get("tools")) if kind == "speak" else None
        print(f"    latest message more than once: {twice}{note}; conversation opening with an assistant message: "
              f"{opens}" + (f"; offering tools: {offered}" if offered is not None else ""))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", type=Path, help="write every request body to this JSON-lines file")
    args = parser.parse_args()
    runs = [("examples/support.py: understand and speak calls", _load_agent(), CONVERSATION),
            ("an intake form: extract and decide calls", form_agent(), FORM_CONVERSATION)]
    dumped: list[str] = []
    for title, agent, conversation in runs:
        server = FakeProvider(responder=responder)
        try:
            per_message = asyncio.run(run_conversation(server, agent, conversation))
        finally:
            server.close()
        for i, bodies in enumerate(per_message, 1):
            dumped += [json.dumps({"agent": agent.name, "message": i, "kind": call_kind(b), "body": b}) for b in bodies]
        print(f"== {title}")
        report(per_message, conversation)
    if args.dump:
        args.dump.write_text("\n".join(dumped) + "\n")


if __name__ == "__main__":
    main()
