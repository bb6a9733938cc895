"""``serve_stdio``: an ``MCPServer`` over this process's stdin and stdout, on the event loop.

Pipes and sockets are read and written on the event loop, a regular file in a worker thread;
anything else (a terminal, a device, stdout and stderr on one pipe) is served by the SDK's
transport. While serving, fd 0 reads the null device and fd 1 writes to stderr, so stray
output cannot corrupt the protocol. One JSON-RPC message per UTF-8 line, blank lines skipped;
a line that is not a valid message is answered at once with the error ``assay.mcp.messages``
words. At the end of stdin it waits, up to ``DRAIN_AT_EOF_S``, for every request read to be
answered or cancelled. docs/mcp.md, "The stdio transport", has the rules and the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Final

import anyio
import mcp_types
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server import MCPServer
from mcp.shared.message import SessionMessage

from assay.mcp.messages import Refusal, read_message
from assay.output import OutputError, standard_output_name

_CHUNK = 1 << 16
DRAIN_AT_EOF_S = 120.0
"""How long the end of stdin waits for the answers still owed: longer than any tool's wait."""


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over stdin and stdout until stdin ends or the client goes away."""
    # The SDK runs an MCPServer over given streams only through its low-level server.
    lowlevel: Any = getattr(server, "_lowlevel_server", None)
    if lowlevel is None or not stdio_served_here():
        output = standard_output_name(1)
        try:
            await server.run_stdio_async()
        except Exception as error:
            full = _output_full(error)
            if full is None:
                raise
            raise OutputError(output, full) from error
        return
    sys.stdout.flush()
    with _claimed_stdio() as (wire_in, wire_out):
        async with _wire(wire_in, wire_out) as (read, write):
            await _serve(lowlevel, read, write, standard_output_name(wire_out))


_NO_ROOM: Final = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
"""What a write reports when the file it writes to cannot grow: a full disk, a file size
limit, a quota. Only a write can fail so, and the SDK's transport writes only stdout."""


def _output_full(error: BaseException) -> OSError | None:
    """The ``OSError`` saying that stdout could not grow, when ``error`` (or each of the
    errors a task group gathered in it) is one; else ``None``."""
    if isinstance(error, BaseExceptionGroup):
        found = [_output_full(inner) for inner in error.exceptions]
        return found[0] if found and all(found) else None
    return error if isinstance(error, OSError) and error.errno in _NO_ROOM else None


def stdio_served_here() -> bool:
    """Whether this transport serves fds 0 and 1: each a pipe, a socket or a regular file,
    and fd 1 not the same file as fd 2 (where diverted stray output would reach the wire)."""
    try:
        stdin, stdout, stderr = (os.fstat(fd) for fd in (0, 1, 2))
    except OSError:
        return False
    if (stdout.st_dev, stdout.st_ino) == (stderr.st_dev, stderr.st_ino):
        return False
    return _kind(stdin) is not None and _kind(stdout) is not None


def _kind(status: os.stat_result) -> str | None:
    if stat.S_ISFIFO(status.st_mode) or stat.S_ISSOCK(status.st_mode):
        return "stream"
    return "file" if stat.S_ISREG(status.st_mode) else None


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[int, int]]:
    """Fresh duplicates of fds 0 and 1 for the wire (the caller's to close), with fd 0 on
    the null device and fd 1 on stderr until the block ends."""
    saved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
    wire = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3) for fd in (0, 1)]
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield wire[0], wire[1]
    finally:
        for fd, original in zip((0, 1), saved, strict=True):
            os.dup2(original, fd)
            os.set_blocking(fd, True)  # the loop made a pipe's shared description non-blocking
            os.close(original)


ReadChunk = Callable[[], Awaitable[bytes]]
WriteLine = Callable[[bytes], Awaitable[None]]


@contextlib.asynccontextmanager
async def _wire(wire_in: int, wire_out: int) -> AsyncIterator[tuple[ReadChunk, WriteLine]]:
    """``(read, write)``: read a chunk (empty at the end), write a line; closes both fds."""
    loop = asyncio.get_running_loop()
    with contextlib.ExitStack() as closing:
        if _kind(os.fstat(wire_in)) == "stream":
            reader = asyncio.StreamReader()
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", 0)
            )
            closing.callback(transport.close)

            async def read() -> bytes:
                return await reader.read(_CHUNK)
        else:
            closing.callback(os.close, wire_in)

            async def read() -> bytes:
                return await anyio.to_thread.run_sync(os.read, wire_in, _CHUNK)

        if _kind(os.fstat(wire_out)) == "stream":
            out_transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()),
                os.fdopen(wire_out, "wb", 0),
            )
            closing.callback(out_transport.close)
            writer = asyncio.StreamWriter(out_transport, protocol, None, loop)

            async def write(line: bytes) -> None:
                writer.write(line)
                await writer.drain()
        else:
            closing.callback(os.close, wire_out)

            async def write(line: bytes) -> None:
                await anyio.to_thread.run_sync(_write_all, wire_out, line)

        yield read, write


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _serve(lowlevel: Any, read: ReadChunk, write: WriteLine, output: str) -> None:
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
    refusals = outgoing.clone()  # the reader's, for the requests the server cannot read
    owed = _Unanswered()
    async with anyio.create_task_group() as reading:
        reading.start_soon(_read_messages, read, incoming_send, refusals, owed)
        async with anyio.create_task_group() as serving:
            serving.start_soon(
                _write_messages, outgoing_receive, write, owed, reading.cancel_scope, output
            )
            async with outgoing:  # closed once the server is done: the writer drains
                await lowlevel.run(incoming, outgoing, lowlevel.create_initialization_options())
            refusals.close()  # the reader may still be waiting for stdin
        reading.cancel_scope.cancel()  # stdin may still be open


class _Unanswered:
    """The ids of the requests read and not yet answered or cancelled."""

    def __init__(self) -> None:
        self._ids: set[str | int] = set()
        self._emptied: anyio.Event | None = None

    def read(self, message: mcp_types.JSONRPCMessage) -> None:
        if isinstance(message, mcp_types.JSONRPCRequest):
            self._ids.add(message.id)
        elif (
            isinstance(message, mcp_types.JSONRPCNotification)
            and message.method == "notifications/cancelled"
            and isinstance(message.params, dict)
        ):
            self._settle(message.params.get("requestId"))

    def written(self, message: mcp_types.JSONRPCMessage) -> None:
        if isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            self._settle(message.id)

    async def drained(self) -> None:
        """Return once nothing is owed, or after ``DRAIN_AT_EOF_S``."""
        if self._ids:
            self._emptied = anyio.Event()
            with anyio.move_on_after(DRAIN_AT_EOF_S):
                await self._emptied.wait()

    def _settle(self, request_id: object) -> None:
        self._ids.discard(request_id)
        if not self._ids and self._emptied is not None:
            self._emptied.set()


async def _read_messages(
    read: ReadChunk,
    send: ObjectSendStream[SessionMessage | Exception],
    refusals: ObjectSendStream[SessionMessage],
    owed: _Unanswered,
) -> None:
    """Deliver each line read as a message (or its validation error) until stdin ends and
    every request read has been answered."""
    async with send, refusals:
        pending = bytearray()
        while chunk := await read():
            scanned = len(pending)  # no newline before here: search only the new bytes
            pending += chunk
            while (end := pending.find(b"\n", scanned)) >= 0:
                line = bytes(pending[:end])
                del pending[: end + 1]
                scanned = 0
                await _deliver(line, send, refusals, owed)
        await _deliver(bytes(pending), send, refusals, owed)  # a last line without its newline
        await owed.drained()


async def _deliver(
    line: bytes,
    send: ObjectSendStream[SessionMessage | Exception],
    refusals: ObjectSendStream[SessionMessage],
    owed: _Unanswered,
) -> None:
    if not line.strip():
        return
    message = read_message(line, "line")
    if isinstance(message, Refusal):
        with contextlib.suppress(anyio.ClosedResourceError):  # the server is done
            await refusals.send(SessionMessage(message.error))
        return
    owed.read(message)
    await send.send(SessionMessage(message))


async def _write_messages(
    receive: ObjectReceiveStream[SessionMessage],
    write: WriteLine,
    owed: _Unanswered,
    scope: anyio.CancelScope,
    output: str,
) -> None:
    """Write each outgoing message as a line; stop serving when the client has gone, and
    raise ``OutputError`` naming ``output`` when the line cannot be written."""
    async with receive:
        async for session_message in receive:
            message = session_message.message
            line = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            try:
                await write(line.encode())
            except (BrokenPipeError, ConnectionResetError):
                scope.cancel()
                return
            except OSError as error:  # a full disk: the answers are lost, as the CLI's would be
                raise OutputError(output, error) from error
            owed.written(message)
