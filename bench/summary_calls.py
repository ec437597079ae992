"""Summary calls: what compaction costs the customer over the 30-message support conversation.

Drives ``examples/support.py`` through ``tether.models.openai_model.OpenAIModel`` over real HTTP,
pointed (``base_url``) at the logging OpenAI-compatible fake server on 127.0.0.1
(``tests/models/model_server.py``, answered by ``bench/tokens.py``'s rule-based responder), and
prints, from the server's log:

* model calls per customer message, summaries counted (mean, max; goal: mean <= 1.2, max <= 2),
  and how many were summary calls of their own;
* how many of the window's folds rode on an understand call (no call of their own), read off the
  turns' ``compaction`` outcomes;
* prompt tokens per call (about 4 characters a token over everything a request carries; summary
  calls left out), mean over messages 1-5 and over 26-30, and their ratio (goal <= 1.2);
* per call kind (understand, speak), the stable leading system text (goal >= 90%): the share of
  each call's system text that is byte-identical with the previous call of the kind (mean: what a
  provider's prompt cache reuses from one call to the next), and the prefix common to every call
  of the kind as a share of their mean system text.

The figures come from this tree's ``tether``; to compare with an older tree, run the same file with
``PYTHONPATH=<older tree>/src`` (the bench reads only the public API and the HTTP log).

    python bench/summary_calls.py [--dump requests.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tokens import (
    CONVERSATION,
    FakeProvider,
    _common_prefix,
    _load_agent,
    _system_text,
    call_kind,
    request_tokens,
    responder,
)

from tether import Message
from tether.models.openai_model import OpenAIModel
from tether.models.types import Capabilities
from tether.testing import FakeClock, SequentialIds


async def converse(server: FakeProvider) -> tuple[list[list[dict[str, Any]]], list[str]]:
    """The request bodies of each customer message, and the compaction outcome lines."""
    model = OpenAIModel("bench-model", base_url=f"{server.url}/v1", provider="local",
                        capabilities=Capabilities(native_json_schema=False))
    clock = FakeClock()
    agent = _load_agent().with_model(model).with_clock(clock, SequentialIds("s"))
    session = None
    per_message: list[list[dict[str, Any]]] = []
    folds: list[str] = []
    try:
        for i, text in enumerate(CONVERSATION):
            clock.advance("20s")
            before = len(server.requests)
            result = await agent.turn(session, Message(text, id=f"m{i}"))
            session = result.session
            per_message.append([r.body for r in server.requests[before:]])
            folds += [f"message {i + 1}: {o.detail}" for o in result.outcomes if o.kind == "compaction"]
    finally:
        await model.aclose()
    return per_message, folds


def prefix_shares(texts: list[str]) -> tuple[float, float]:
    """(mean share identical with the previous call, prefix common to all / mean length)."""
    if len(texts) < 2:
        return 1.0, 1.0
    pairwise = statistics.mean(_common_prefix(a, b) / len(b) for a, b in itertools.pairwise(texts))
    common = min(_common_prefix(texts[0], t) for t in texts)
    return pairwise, common / statistics.mean(len(t) for t in texts)


def report(per_message: list[list[dict[str, Any]]], folds: list[str]) -> None:
    calls = [len(bodies) for bodies in per_message]
    summaries = sum(1 for bodies in per_message for b in bodies if call_kind(b) == "summary")
    carried = sum(1 for line in folds if "understand call" in line)
    worst = max(range(len(calls)), key=lambda i: calls[i])
    print(f"calls per message (summaries counted): mean {statistics.mean(calls):.2f}, max {max(calls)} "
          f"(message {worst + 1}: {', '.join(call_kind(b) for b in per_message[worst])}); goal mean <= 1.2, max <= 2")
    print(f"  {sum(calls)} calls over {len(calls)} messages: {summaries} summary call(s) of their own; "
          f"folds: {len(folds)}, {carried} carried by an understand call; without the summary calls "
          f"{(sum(calls) - summaries) / len(calls):.2f} per message (the floor summaries alone can reach)")
    for line in folds:
        print(f"    {line}")

    def tokens(group: list[list[dict[str, Any]]]) -> list[int]:
        return [request_tokens(b) for bodies in group for b in bodies if call_kind(b) != "summary"]

    first, last = statistics.mean(tokens(per_message[:5])), statistics.mean(tokens(per_message[-5:]))
    print(f"prompt tokens per call: messages 1-5 {first:.0f}, 26-30 {last:.0f}, ratio {last / first:.2f} (goal <= 1.2)")
    print("stable leading system text per call kind (goal >= 90%):")
    for kind in ("understand", "speak"):
        texts = [_system_text(b) for bodies in per_message for b in bodies if call_kind(b) == kind]
        pairwise, common = prefix_shares(texts)
        print(f"  {kind}: {len(texts)} calls; identical with the previous call: mean {pairwise:.0%}; "
              f"common to every call: {common:.0%} of the mean {statistics.mean(len(t) for t in texts):.0f} chars")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dump", type=Path, help="write every request body to this JSON-lines file")
    args = parser.parse_args()
    server = FakeProvider(responder=responder)
    try:
        per_message, folds = asyncio.run(converse(server))
    finally:
        server.close()
    print(f"== examples/support.py, {len(CONVERSATION)} messages, OpenAI adapter over HTTP to a logging fake server")
    report(per_message, folds)
    if args.dump:
        args.dump.write_text("".join(json.dumps({"message": i, "kind": call_kind(b), "body": b}) + "\n"
                                     for i, bodies in enumerate(per_message, 1) for b in bodies))


if __name__ == "__main__":
    main()
