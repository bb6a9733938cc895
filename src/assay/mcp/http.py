"""``StreamableHttpEndpoint``: an ``MCPServer`` over streamable HTTP, on a loopback address.

The MCP port has no authentication of its own, so it binds to loopback only, as the HTTP
daemon does without tokens: a non-loopback host is refused before anything listens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from types import TracebackType
from typing import Final, Self

import uvicorn
from mcp.server import MCPServer

from assay.errors import ApplicationError, RequestError

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


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside a loop someone else runs: the signals stay that program's own."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class StreamableHttpEndpoint:
    """Serve ``server`` at ``http://HOST:PORT/mcp`` (a free port unless given) until stopped;
    ``host`` must be a loopback address (``require_loopback``)."""

    def __init__(self, server: MCPServer, *, host: str = "127.0.0.1", port: int = 0) -> None:
        require_loopback(host)
        app = server.streamable_http_app(streamable_http_path=PATH, host=host)
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", access_log=False, lifespan="on"
        )
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """``http://HOST:PORT/mcp``, once started."""
        sockets = [s for server in self._server.servers for s in server.sockets]
        if not sockets:
            raise ApplicationError("the MCP endpoint is not listening")
        host, port = sockets[0].getsockname()[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}{PATH}"

    async def start(self) -> None:
        """Start serving; returns once the socket listens."""
        self._task = asyncio.get_running_loop().create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                error = self._task.exception()
                raise ApplicationError(f"the MCP endpoint did not start: {error}")
            await asyncio.sleep(0.01)

    async def wait(self) -> None:
        """Return when the server stops (it runs until cancelled or ``stop``)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Stop serving and wait for open requests and the server to finish."""
        if self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
