"""The uvicorn server of ``tether serve``: it prints the model and the inspector's URL once bound."""

from __future__ import annotations

import socket
from types import FrameType

import typer
import uvicorn

from tether.server.stream import close_streams

__all__ = ["BannerServer", "base_url"]


def base_url(host: str, port: int) -> str:
    """``http://host:port`` (an IPv6 host in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class BannerServer(uvicorn.Server):
    """A uvicorn server that prints ``tether serve: <banner>; inspector <url>/inspect`` once its
    socket is bound (with ``--port 0`` only then is the port known)."""

    def __init__(self, config: uvicorn.Config, banner: str) -> None:
        super().__init__(config)
        self.banner = banner

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Shut down as uvicorn does, first ending the event streams (see ``close_streams``)."""
        close_streams()
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Bind as uvicorn does, then print the banner with each bound address."""
        await super().startup(sockets=sockets)
        for server in self.servers:
            for bound in server.sockets:
                host, port = bound.getsockname()[:2]
                typer.echo(f"tether serve: {self.banner}; inspector {base_url(host, port)}/inspect", err=True)
