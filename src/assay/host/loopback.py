"""``LoopbackServer``: an ASGI app served by uvicorn on a free loopback port, in this loop;
``listen``: the bound socket a server serves on, or an error saying what to change."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import logging
import socket
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

import uvicorn

from assay.errors import ApplicationError

KEEP_ALIVE_S = 75
"""How long an idle keep-alive connection stays open: longer than clients keep theirs (httpx:
5 s, uvicorn's own default), so a client never reuses a connection the server is closing."""


_WHY: dict[int, str] = {
    errno.EADDRINUSE: "another program listens there; choose another port, or 0 for a free one",
    errno.EADDRNOTAVAIL: "that address is not one of this machine's",
    errno.EACCES: "permission denied (ports below 1024 need privileges)",
}


def listen(host: str, port: int, *, name: str) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one), for uvicorn to serve on.

    Binding here, not in uvicorn, turns a port in use or an unknown address into an
    ``ApplicationError`` naming ``name``, the address and what to change, where uvicorn would
    log a traceback and exit the process.
    """
    if not 0 <= port <= 65535:
        raise ApplicationError(
            f"the {name} cannot listen on port {port}: a port is 0 to 65535 (0 picks a free one)"
        )
    # IPv6 for an address with a colon, else IPv4, as uvicorn chooses ("localhost": 127.0.0.1).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, family, socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as error:
        raise ApplicationError(
            f"the {name} cannot listen on {host!r}: not an address or a host name this machine "
            f"can resolve ({error})"
        ) from None
    listener = socket.socket(family, kind, protocol)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
    except OSError as error:
        listener.close()
        why = _WHY.get(error.errno or 0, error.strerror or str(error))
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        raise ApplicationError(f"the {name} cannot listen on {shown}: {why}") from None
    return listener


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside a loop someone else runs: the signals stay that program's own, and so
    does the log. uvicorn logs every server's start and stop through one logger, so a daemon
    logging at info would also announce the shutdown of each server embedded in it (an
    application's, an MCP endpoint's) as its own; an embedded server's records below
    warning are dropped."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        _embedded.set(True)  # in this task, and the tasks it starts for its connections
        await super().serve(sockets)


_embedded: contextvars.ContextVar[bool] = contextvars.ContextVar("embedded", default=False)


class _QuietWhenEmbedded(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not _embedded.get()


_UVICORN_LOG = logging.getLogger("uvicorn.error")
if not any(isinstance(f, _QuietWhenEmbedded) for f in _UVICORN_LOG.filters):
    _UVICORN_LOG.addFilter(_QuietWhenEmbedded())


class LoopbackServer:
    """Serve ``app`` on ``host`` (loopback; a free port unless given) until ``stop``.

    ``lifespan`` runs the app's startup and shutdown (an MCP endpoint needs them). A
    ``listener`` already bound (``listen``) is served instead of binding ``host:port`` at
    ``start``: a program binds first to refuse an address before it opens anything else.
    """

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "application",
        lifespan: bool = False,
        listener: socket.socket | None = None,
    ) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,  # the program's logging is its own to configure
            log_level=None,
            access_log=False,
            lifespan="on" if lifespan else "off",
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        self.name = name
        self._host = host
        self._port = port
        self._server = _EmbeddedServer(config)
        self._listener = listener
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
        """Start serving; returns once the socket listens (``ApplicationError`` if it cannot)."""
        listener = self._listener or listen(self._host, self._port, name=f"{self.name} server")
        self._task = asyncio.get_running_loop().create_task(self._server.serve([listener]))
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
