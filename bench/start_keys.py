"""Lost starts when messages without ids share a millisecond.

``--conversations`` conversations of ``--turns`` messages without ids, each message a booking that
starts its flow (``repeat="always"``) and ends it. The clock moves 0, 1 or 2 ms between messages
(seeded), as a fast client or a batch replay does. A start is lost when the flow did not start for
a message. ``--legacy`` keys messages by their millisecond alone (tether before start keys came
from the session sequence), to show what was lost.

    python bench/start_keys.py [--conversations 100] [--turns 40] [--legacy]
"""

from __future__ import annotations

import argparse
import asyncio
import random

from tether import Agent, Flow, Message, end, on_message, reply
from tether.engine.core.state import TurnState
from tether.engine.turn import keys
from tether.testing import FakeClock, SequentialIds


def _legacy_key(ts: TurnState) -> str:
    message = ts.message
    if message is not None and message.id:
        return message.id
    at = message.at if message is not None and message.at is not None else ts.now
    return str(int(at.timestamp() * 1000))


async def conversation(turns: int, rng: random.Random) -> int:
    book = reply("book", response="Booked.", next=lambda turn, state: end("booked"))
    clock = FakeClock()
    agent = Agent("Ava", flows=[Flow("booking", "Booking", nodes=[book], on=[on_message(repeat="always")])])
    agent = agent.with_clock(clock, SequentialIds("s"))
    session = None
    lost = 0
    for _ in range(turns):
        clock.advance(rng.choice([0, 1, 2]))
        result = await agent.turn(session, Message("book a table"))
        lost += not result.started
        session = result.session
    return lost


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--legacy", action="store_true", help="key messages by their millisecond alone")
    args = parser.parse_args()
    if args.legacy:
        keys.message_key = _legacy_key  # type: ignore[assignment]
        import tether.engine.turn.route as route
        import tether.engine.turn.settle as settle

        route.message_key = _legacy_key  # type: ignore[assignment]
        settle.message_key = _legacy_key  # type: ignore[assignment]
    rng = random.Random(7)
    losses = [await conversation(args.turns, rng) for _ in range(args.conversations)]
    print(f"{'legacy ms keys' if args.legacy else 'sequence keys'}: {sum(losses)} starts lost; "
          f"{sum(1 for n in losses if n)} of {args.conversations} conversations of {args.turns} turns lost a booking")


if __name__ == "__main__":
    asyncio.run(main())
