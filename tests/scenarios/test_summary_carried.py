"""The window's summary rides on the understand call: no summary call on the customer's time.

When the window will soon have to fold (``CARRY_AHEAD`` messages before it must), the turn's
understand call (a call made anyway) also writes the summary, and the window folds at the end of
that turn. A separate ``summary`` call is made only when the fold cannot wait and no understand
call carried it. Figures over the 30-message support conversation are in ``bench/summary_calls.py``.
"""

from __future__ import annotations

import itertools

from harness import Conversation

from tether import Agent, Flow, on_message, reply
from tether.engine.turn.compaction import CARRY_AHEAD, HEADROOM
from tether.models.types import ModelRequest
from tether.testing import ScriptedModel, StrictModel, understood

WINDOW = 12
MESSAGES = [f"where is my order A-{1000 + i}?" if i % 2 else f"I want a refund for A-{1000 + i}" for i in range(16)]


def _agent() -> Agent:
    """Two scored flows and the idle voice: every message is judged by an understand call."""
    orders = Flow("orders", "Order status", nodes=[reply("status", instructions="Say where the order is.")],
                  on=[on_message("where is my order", repeat="always")])
    refund = Flow("refund", "Refunds", nodes=[reply("refund", instructions="Explain how refunds work.")],
                  on=[on_message("refund", repeat="always")])
    return Agent("Ava", flows=[orders, refund], history_window=WINDOW)


def _carries(request: ModelRequest) -> bool:
    return request.response_format is not None and "summary" in request.response_format.schema["properties"]


async def test_the_understand_call_carries_the_summary_and_no_summary_call_is_made() -> None:
    model = StrictModel(summary=[f"Summary {i}." for i in range(1, 9)])
    for text in MESSAGES:
        model.means(text, flows={"orders": 90} if "where" in text else {"refund": 90})
    convo = Conversation(_agent(), model)
    folds = 0
    for text in MESSAGES:
        before = len(convo.session.messages) + 1 if convo.session is not None else 1  # with this message
        calls = len(model.calls)
        result = await convo.say(text)
        made = model.calls[calls:]
        assert [c.call for c in made] == ["understand", "speak"] and result.llm_calls == 2
        carried = _carries(made[0].request)
        # offered from CARRY_AHEAD messages before the window must fold, never earlier
        assert not carried or before + HEADROOM + CARRY_AHEAD > WINDOW
        folded = [o for o in result.outcomes if o.kind == "compaction"]
        assert bool(folded) == carried  # a carried summary folds the window in the same turn
        if folded:
            folds += 1
            assert folded[0].detail is not None and folded[0].detail.endswith("in the understand call")
            assert folded[0].llm_calls == 0
        assert convo.session is not None
        window = convo.session.messages
        assert len(window) <= WINDOW and window[0].role == "user"
        # only what the summary covers left: this turn's customer message is still in the window
        assert any(m.role == "user" and m.text == text for m in window)
    assert model.count("summary") == 0  # never a call of its own
    assert folds >= 2 and convo.session is not None and convo.session.summary == f"Summary {folds}."
    understands = [c.request for c in model.calls if c.call == "understand"]
    # the summary's standing order is in the stable system text: the same on every call
    assert len({r.system for r in understands}) == 1 and "- summary: " in understands[0].system
    after_fold = [r for prev, r in itertools.pairwise(understands) if _carries(prev)]
    assert after_fold and all(r.messages[0].content.startswith("Summary of the earlier conversation: Summary ")
                              for r in after_fold)


async def test_a_fold_that_cannot_wait_makes_its_own_call_after_understand_and_before_speak() -> None:
    # the model leaves the summary section null: the fold waits until the window cannot, then a
    # summary call of its own folds it before the speak call reads the window
    turns = len(MESSAGES)
    model = ScriptedModel(understand=[understood(flows={"orders": 90})] * turns,
                          speak=[f"answer {i}" for i in range(turns)], summary=["Earlier: orders."] * turns)
    convo = Conversation(_agent(), model)
    for text in MESSAGES:
        before = len(convo.session.messages) + 1 if convo.session is not None else 1
        calls = len(model.calls)
        result = await convo.say(text)
        made = [c.call for c in model.calls[calls:]]
        if before + HEADROOM > WINDOW:
            assert made == ["understand", "summary", "speak"] and result.llm_calls == 3
            speak = model.calls[-1].request
            assert speak.messages[0].content == "Summary of the earlier conversation: Earlier: orders."
        else:
            assert made == ["understand", "speak"]  # due, but not yet forced: no call on the customer's time
        assert convo.session is not None and len(convo.session.messages) <= WINDOW
    assert model.count("summary") >= 1 and convo.session is not None and convo.session.summary == "Earlier: orders."

