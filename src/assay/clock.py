"""Time, injected: everything in assay that waits or measures takes a ``Clock``.

``SystemClock`` is real time. ``VirtualClock`` is time that moves only when a test says so,
so loops that sleep, poll and time out run deterministically and instantly in tests.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


class Timer(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """A source of time and of sleeping."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences mean anything."""
        ...

    def wall(self) -> datetime:
        """The current UTC time, for timestamps shown to people."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return after ``seconds`` of this clock's time have passed."""
        ...

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        """Call ``callback`` on the running event loop after ``seconds``; cheaper than a task."""
        ...


class SystemClock:
    """Real time: ``time.monotonic`` and ``asyncio.sleep``."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(seconds, 0.0), callback)


SYSTEM_CLOCK = SystemClock()


class _VirtualTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """Time that advances only through ``advance``; sleepers wake in deadline order.

    ``await clock.advance(s)`` moves time forward in steps, waking each sleeper whose deadline
    has come and letting the event loop run what it woke before moving on.
    """

    def __init__(self, start: float = 0.0, wall_start: datetime | None = None) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start or datetime(2026, 1, 1, tzinfo=UTC)
        self._sleepers: list[tuple[float, int, asyncio.Future[None] | _VirtualTimer]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + max(seconds, 0.0), next(self._order), future))
        await future

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        timer = _VirtualTimer(callback)
        heapq.heappush(self._sleepers, (self._now + max(seconds, 0.0), next(self._order), timer))
        return timer

    @property
    def sleepers(self) -> int:
        """How many sleeps and timers are still waiting."""
        return sum(1 for *_, waiter in self._sleepers if not _finished(waiter))

    async def settle(self) -> None:
        """Let every task that can run at the current time run until it blocks."""
        for _ in range(64):
            await asyncio.sleep(0)

    def stall(self, seconds: float) -> None:
        """Move time forward by ``seconds`` at once and run nothing, as an event loop busy
        elsewhere does: sleepers and timers that came due meanwhile wake, late, at the next
        ``advance`` or ``settle``-and-``advance``."""
        self._now += max(seconds, 0.0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking sleepers in order along the way."""
        target = self._now + seconds
        await self.settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, waiter = heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            if isinstance(waiter, _VirtualTimer):
                if not waiter.cancelled:
                    waiter.callback()
            elif not waiter.done():
                waiter.set_result(None)
            await self.settle()
        self._now = target
        await self.settle()


def _finished(waiter: asyncio.Future[None] | _VirtualTimer) -> bool:
    if isinstance(waiter, _VirtualTimer):
        return waiter.cancelled
    return waiter.done()
