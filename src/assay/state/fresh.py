"""``FreshReads``: reads of a polling substrate's probes, each one started after it was asked for.

A fire's pre-action snapshot must hold what the probes can see when it fires, not what they
saw at the last poll: a lamp switched on between a poll and the fire would otherwise be a
change the fire is credited with. And a fire must not settle on "no change observed" before
a read that began after its handler returned. Callers who ask while a read is under way
share the next read, started as soon as that one has ended, so that concurrent fires cost
one read each at most, not one each in turn. A read is bounded by the probes' own
deadlines, and a failed one is recorded in the probes' health (so in the confidence a fire
is judged with); it never raises.
"""

from __future__ import annotations

import asyncio

from assay.state.probes import Poller


class FreshReads:
    """Fresh reads of every probe ``poller`` polls, shared among concurrent callers."""

    def __init__(self, poller: Poller) -> None:
        self._poller = poller
        self._latest: asyncio.Task[None] | None = None  # the last read, started or queued
        self._queued: asyncio.Task[None] | None = None  # a read that has not started yet

    async def read(self) -> None:
        """Return once a read of every probe that started after this call has ended."""
        task = self._queued
        if task is None:
            task = asyncio.ensure_future(self._read_after(self._latest))
            self._queued = self._latest = task
        # Shielded: a caller that leaves does not cancel the read others wait on.
        await asyncio.shield(task)

    async def stop(self) -> None:
        """Cancel the read under way or queued, and return once it has ended: no read
        outlives the probes it reads (those waiting on it are cancelled too)."""
        tasks = [task for task in (self._queued, self._latest) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _read_after(self, previous: asyncio.Task[None] | None) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait((previous,))
        self._queued = None  # started: whoever asks from now on needs the next read
        await self._poller.read_once()
