"""Agents for the effect-journal, suspend and hand-off tests (each records its tool calls in a
list the test holds)."""

from __future__ import annotations

from typing import Any

from tether import Agent, Flow, Verify, action, end, escalate, goto, on_message, reply, tool
from tether.flow.tools import InDoubtPolicy


class Crash(BaseException):
    """Stands for the process dying: nothing catches it, the turn stops where it is."""


def booking_agent(calls: list[str]) -> Agent:
    """``book`` calls ``book_shipment`` and takes a ctx.uuid()/ctx.now(); its verify blocks until the
    node was dispatched twice (``tries``), so the second message re-dispatches the same visit."""

    @tool
    def book_shipment(address: str, idempotency_key: str) -> dict[str, Any]:
        """Book a shipment."""
        calls.append(idempotency_key)
        return {"id": f"trk_{len(calls)}"}

    @action("book", verify=Verify(check=lambda state, data: state.get("tries", 0) >= 2))
    async def book(state: dict[str, Any], ctx: Any) -> Any:
        receipt = await ctx.tool("book_shipment", address="1 Main St")
        stamps = [*ctx.data.get("stamps", []), [ctx.uuid(), ctx.now().isoformat()]]
        ctx.set(tracking=receipt["id"], stamps=stamps, tries=int(ctx.data.get("tries", 0)) + 1,
                dedupe=ctx.dedupe_key, key=ctx.idempotency_key)
        return goto("done")

    done = reply("done", response=lambda state: f"booked {state['tracking']}", next=end("booked"))
    flow = Flow("ship", start=book, nodes=[book, done], on=[on_message(repeat="always")])
    return Agent("Shippy", flows=[flow], tools=[book_shipment])


def charging_agent(calls: list[str], crash: list[bool], policy: InDoubtPolicy) -> Agent:
    """``charge`` calls a ``charge`` tool with the in-doubt ``policy``; while ``crash[0]`` is true the
    tool raises ``Crash`` after its started record was written. ``on_fail`` says ``could not charge``."""

    @tool(in_doubt=policy)
    def charge(amount: int, idempotency_key: str) -> str:
        """Charge an amount."""
        calls.append(idempotency_key)
        if crash[0]:
            raise Crash()
        return f"ch_{amount}"

    @action("charge", on_fail="sorry")
    async def charge_step(state: dict[str, Any], ctx: Any) -> Any:
        ctx.set(charge_id=await ctx.tool("charge", amount=30))
        return goto("done")

    done = reply("done", response=lambda state: f"charged {state['charge_id']}", next=end("charged"))
    sorry = reply("sorry", response="could not charge", next=end("failed"))
    flow = Flow("pay", start=charge_step, nodes=[charge_step, done, sorry], on=[on_message(repeat="always")])
    return Agent("Payer", flows=[flow], tools=[charge])


def refund_agent(refunds: list[int]) -> Agent:
    """``refund`` asks for an approval (inside an ``except Exception`` that must not swallow the
    suspend), refunds when approved, and answers with the decision."""

    @tool
    def refund(amount: int) -> str:
        """Refund an amount."""
        refunds.append(amount)
        return f"rf_{amount}"

    @action("refund")
    async def refund_step(state: dict[str, Any], ctx: Any) -> Any:
        try:
            decision = await ctx.approve("Refund 30 to the customer?", payload={"amount": 30, "order": "A1"})
        except Exception:  # a suspend is not an Exception: this must never run
            return goto("done", data={"outcome": "swallowed"})
        if decision.approved:
            await ctx.tool("refund", amount=decision.payload["amount"])
        return goto("done", data={"outcome": f"{decision.decision} by {decision.decided_by}: {decision.feedback}"})

    done = reply("done", response=lambda state: f"refund {state['outcome']}", next=end("done"))
    flow = Flow("refund", start=refund_step, nodes=[refund_step, done], on=[on_message(repeat="always")])
    return Agent("Refunder", flows=[flow], tools=[refund])


def payment_agent() -> Agent:
    """``wait_payment`` waits for the ``paid`` signal for an hour."""

    @action("wait_payment")
    async def wait_payment(state: dict[str, Any], ctx: Any) -> Any:
        signal = await ctx.signal("paid", timeout="1h")
        if signal.timed_out:
            return goto("late")
        return goto("done", data={"amount": signal.payload["amount"]})

    done = reply("done", response=lambda state: f"payment of {state['amount']} received", next=end("paid"))
    late = reply("late", response="no payment arrived", next=end("late"))
    flow = Flow("pay", start=wait_payment, nodes=[wait_payment, done, late], on=[on_message()])
    return Agent("Cashier", flows=[flow])


def desk_agent() -> Agent:
    """``human`` escalates to a person; anything else is answered ``bot here``."""

    @action("route")
    async def route(state: dict[str, Any], ctx: Any) -> Any:
        return escalate("the customer asked for a person") if ctx.message == "human" else goto("answer")

    answer = reply("answer", response="bot here", next=end("answered"))
    flow = Flow("desk", start=route, nodes=[route, answer], on=[on_message(repeat="always")])
    return Agent("Desk", flows=[flow])
