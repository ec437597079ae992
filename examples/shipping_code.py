"""The code shipping.yaml names: its registry of tools (a flow file holds no code)."""

from __future__ import annotations

from tether import tool
from tether.dialect import Registry


@tool
async def book_shipment(address: str) -> dict[str, str]:
    """Book a shipment to the given address."""
    return {"id": f"trk_{len(address)}"}


registry = Registry.of(tools=[book_shipment])
