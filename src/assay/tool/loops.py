"""Which event loop a substrate's verified tools run on, and assay's own loop for sync ones.

A session and its substrate belong to one event loop. ``LoopBinding`` (one per substrate,
held by it) records that loop, the first one a verified tool used, and the sessions of the
tools on it; ``background_loop`` is the loop assay runs for sync tools called where no loop
of the substrate's is running: one per process, on a daemon thread, started on first use.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from assay.errors import SessionError
from assay.graph.session import Session
from assay.state.substrate import Substrate


class _Background:
    """assay's one event loop for sync tools, and the lock that makes it once."""

    lock = threading.Lock()
    loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """assay's event loop for sync tools, running on its own daemon thread."""
    with _Background.lock:
        if _Background.loop is None or _Background.loop.is_closed():
            loop = asyncio.new_event_loop()
            started = threading.Event()
            loop.call_soon(started.set)
            thread = threading.Thread(
                target=loop.run_forever, name="assay verified tools", daemon=True
            )
            thread.start()
            started.wait()
            _Background.loop = loop
        return _Background.loop


class LoopBinding:
    """The event loop a substrate is bound to, and the session of each tool on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self._sessions: dict[object, Session] = {}
        self._started = False

    def bind(self, loop: asyncio.AbstractEventLoop, tool: str) -> None:
        """Bind to ``loop`` unless bound to another (one closed since is let go, with its
        sessions); ``SessionError`` naming both otherwise."""
        with self._lock:
            if self.loop is not None and self.loop is not loop and self.loop.is_closed():
                self.loop, self._sessions, self._started = None, {}, False
            if self.loop is None:
                self.loop = loop
            elif self.loop is not loop:
                raise SessionError(two_loops(tool, self.loop))

    def target(self) -> asyncio.AbstractEventLoop:
        """The loop a sync call runs on: the bound one, else assay's, bound now."""
        with self._lock:
            if self.loop is not None and not self.loop.is_closed():
                return self.loop
        loop = background_loop()
        self.bind(loop, "")
        return loop

    async def session(
        self, tool: object, substrate: Substrate, make: Callable[[], Session]
    ) -> Session:
        """``tool``'s session on the bound loop (made on first ask), with a polled
        substrate's polling started on it."""
        held = self._sessions.get(tool)
        if held is None or held.closed:
            held = self._sessions[tool] = make()
        if substrate.polled and not self._started:
            self._started = True
            await substrate.start()
        return held


def two_loops(tool: str, bound: asyncio.AbstractEventLoop) -> str:
    """Why ``tool`` cannot run on the caller's loop: its substrate is bound to ``bound``."""
    which = "assay's own loop for sync tools" if bound is _Background.loop else "another event loop"
    return (
        f"the verified tool {tool!r} was called on an event loop other than the one its "
        f"substrate is bound to ({which}); a substrate, its sessions and its probes belong to "
        "one event loop, so call every verified tool on that substrate from the same loop, "
        "or give each loop a substrate of its own"
    )


def blocked_loop(tool: str) -> str:
    """Why sync ``tool`` cannot run here: waiting would block the loop that verifies it."""
    return (
        f"the sync verified tool {tool!r} was called on the event loop its substrate is bound "
        "to, and waiting for its verification there would block the loop that verifies it; "
        "make the tool async, or call it through asyncio.to_thread"
    )


def resolve(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    """Settle ``future`` (on its own loop) with ``value`` or ``error``, unless cancelled."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
