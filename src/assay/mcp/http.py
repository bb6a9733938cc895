"""``StreamableHttpEndpoint``: an ``MCPServer`` over streamable HTTP, on a loopback address.

The MCP port has no authentication of its own, so it binds to loopback only, as the HTTP
daemon does without tokens: a non-loopback host is refused before anything listens.
"""

from __future__ import annotations

import socket
from typing import Final

from mcp.server import MCPServer

from assay.errors import RequestError
from assay.host.loopback import LoopbackServer

LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
PATH: Final = "/mcp"


def require_loopback(host: str) -> None:
    """``RequestError`` (naming ``host``) unless ``host`` is a loopback address."""
    if host not in LOOPBACK:
        raise RequestError(
            f"--host {host}: the MCP port has no authentication, so it binds to loopback "
            f"only ({', '.join(LOOPBACK)}); put an authenticating proxy in front of it to "
            "reach it from elsewhere",
            field="host",
        )


class StreamableHttpEndpoint(LoopbackServer):
    """Serve ``server`` at ``http://HOST:PORT/mcp`` (a free port unless given) until stopped;
    ``host`` must be a loopback address (``require_loopback``)."""

    def __init__(
        self,
        server: MCPServer,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        listener: socket.socket | None = None,
    ) -> None:
        require_loopback(host)
        app = server.streamable_http_app(streamable_http_path=PATH, host=host)
        super().__init__(
            app, host=host, port=port, name="MCP endpoint", lifespan=True, listener=listener
        )

    @property
    def url(self) -> str:
        """``http://HOST:PORT/mcp``, once started."""
        return super().url + PATH
