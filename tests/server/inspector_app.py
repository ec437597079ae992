"""The app the inspector's browser tests serve with ``tether serve``: the support example (its
flows move node by node with no model), the refund agent (an approval), a talker whose model
streams its reply in small pieces, and a frugal agent whose model reports its tokens (its session
has usage, warn entries and, in its ``boom`` flow, an error entry)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1] / "examples")]

from server_agents import frugal_agent, refund_agent, talker_agent  # noqa: E402
from support import agent as support_agent  # noqa: E402

TALKER_REPLIES = ("Hello! I am streaming this reply to you in small pieces.",
                  "And this is the second reply, also streamed.")

agents = [support_agent, refund_agent([]), talker_agent(*TALKER_REPLIES), frugal_agent()]
