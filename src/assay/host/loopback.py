"""``LoopbackServer``: an ASGI app served by uvicorn on a free loopback port, in this loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

import uvicorn

from assay.errors import ApplicationError

KEEP_ALIVE_S = 75
"""How long an idle keep-alive connection stays open: longer than clients keep theirs (httpx:
5 s, uvicorn's own default), so a client never reuses a connection the server is closing."""


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside a loop someone else runs: the signals stay that program's own."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class LoopbackServer:
    """Serve ``app`` on ``host`` (loopback; a free port unless given) until ``stop``.

    ``lifespan`` runs the app's startup and shutdown (an MCP endpoint needs them).
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "application",
        lifespan: bool = False,
    ) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on" if lifespan else "off",
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        self.name = name
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, once started."""
        sockets = [s for server in self._server.servers for s in server.sockets]
        if not sockets:
            raise ApplicationError(f"the {self.name} server is not listening")
        host, port = sockets[0].getsockname()[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"

    async def start(self) -> None:
        """Start serving; returns once the socket listens."""
        self._task = asyncio.get_running_loop().create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                error = self._task.exception()
                raise ApplicationError(f"the {self.name} server did not start: {error}")
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
