"""``StreamableHttpEndpoint``: an ``MCPServer`` over streamable HTTP, on a loopback address.

The MCP port has no authentication of its own, so a non-loopback host is refused before
anything listens. A posted body that is not a message the server can act on is answered with
status 400 and the JSON-RPC error ``assay.mcp.messages`` words, as stdio answers the same
line. A request the client cancels while in flight is not answered: its event stream ends,
as the MCP spec has it.
"""

from __future__ import annotations

import socket
from typing import Final

import mcp_types
from mcp.server import MCPServer
from mcp.server.streamable_http import REQUEST_CANCELLED
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.errors import RequestError
from assay.host.loopback import LoopbackServer
from assay.mcp.messages import Refusal, read_message

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
            RefuseInvalidMessages(app),
            host=host,
            port=port,
            name="MCP endpoint",
            lifespan=True,
            listener=listener,
        )

    @property
    def url(self) -> str:
        """``http://HOST:PORT/mcp``, once started."""
        return super().url + PATH


class RefuseInvalidMessages:
    """ASGI middleware: answer a JSON body posted to ``PATH`` that ``read_message`` refuses
    with 400 and its error; pass everything else, the body replayed, to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _posted_json(scope):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        read = read_message(body, "body")
        if isinstance(read, Refusal):
            await _answer(send, read.error.model_dump_json(by_alias=True, exclude_unset=True))
            return
        replayed = False
        if isinstance(read, mcp_types.JSONRPCRequest):
            send = _unanswered_when_cancelled(send, read.id)

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


def _unanswered_when_cancelled(send: Send, request_id: mcp_types.RequestId) -> Send:
    """``send`` for the event stream answering request ``request_id``, leaving out the
    ``-32800`` error the SDK's transport ends it with once the client cancelled the
    request: the MCP spec has the server send no response for a cancelled request, so the
    stream ends without one."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.body" and _cancelled(message, request_id):
            message = {**message, "body": b""}
        await send(message)

    return sending


def _cancelled(message: Message, request_id: mcp_types.RequestId) -> bool:
    """Whether ``message`` carries the event answering ``request_id`` as cancelled."""
    body: bytes = message.get("body", b"")
    if str(REQUEST_CANCELLED).encode() not in body:
        return False
    for line in body.splitlines():
        if not line.startswith(b"data: "):
            continue
        try:
            event = mcp_types.jsonrpc_message_adapter.validate_json(line[len(b"data: ") :])
        except ValueError:
            return False
        return (
            isinstance(event, mcp_types.JSONRPCError)
            and event.id == request_id
            and event.error.code == REQUEST_CANCELLED
        )
    return False


def _posted_json(scope: Scope) -> bool:
    """Whether ``scope`` posts a JSON body to the MCP path (the SDK answers other media
    types with 415 itself)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH:
        return False
    for name, value in scope["headers"]:
        if name == b"content-type":
            media_type: bytes = value.split(b";")[0].strip().lower()
            return media_type == b"application/json"
    return False


async def _answer(send: Send, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
