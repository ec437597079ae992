"""The clarification repair pattern: a message fits two or more flows about equally ("my card":
freeze it, or report it lost). Instead of starting the first, the agent asks which one, with a
fixed text built from the flows' names or descriptions (``Repair.clarify``; no model needed), and
remembers the options (``Session.clarifying``): the next message that names one of them starts it
(see :func:`tether.engine.turn.repair.clarified_choice`).

Scores within ``Repair.clarify_margin`` of the best (at the routing threshold or more) are a tie.
Keyword scores (no model) are all-or-nothing, so among flows whose phrases match, the one whose
matching phrases cover more of the message's words leads ("I lost my card" is a lost-card report,
though "my card" is a phrase of both flows).
"""

from __future__ import annotations

from tether.engine.core.state import TurnState
from tether.engine.turn.keys import message_key
from tether.engine.turn.keywords import covered_words
from tether.flow.flow import Flow
from tether.flow.repair import task_name
from tether.templating import fill_names

__all__ = ["ask_which", "close_candidates"]


def close_candidates(ts: TurnState, candidates: list[Flow], scores: dict[str, float], *,
                     floor_score: float) -> list[Flow]:
    """The flows tied for the message, best first (one flow: no tie)."""
    top = max((scores.get(f.id, 0.0) for f in candidates), default=0.0)
    close = [f for f in candidates if scores.get(f.id, 0.0) >= floor_score
             and top - scores.get(f.id, 0.0) <= ts.agent.repair.clarify_margin]
    close.sort(key=lambda f: -scores.get(f.id, 0.0))
    if len(close) > 1 and not ts.judgement.called:
        cover = {f.id: len(covered_words(ts.message_text, f)) for f in close}
        most = max(cover.values())
        close = [f for f in close if cover[f.id] == most]
    return close


def ask_which(ts: TurnState, close: list[Flow]) -> bool:
    """Ask which of ``close`` the customer means (two or more, with the pattern on); True when it asked."""
    repair = ts.agent.repair
    if len(close) < 2 or not repair.on("clarify"):
        return False
    names = [task_name(f) for f in close]
    options = ", ".join(names[:-1]) + " or " + names[-1]
    ts.say(fill_names(repair.clarify, {"options": options}), kind="verbatim", key=f"repair:clarify:{message_key(ts)}")
    ts.session.clarifying = [f.id for f in close]
    ts.repaired = "clarify"
    ts.outcome(None, code="repair-clarify", kind="collect", detail=", ".join(f.id for f in close))
    return True
