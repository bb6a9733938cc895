"""``Tenure``: a host's lease on its ledger, which says to other hosts that it is alive.

A host takes its lease at start, under an owner id of its own that every fire it records
names, renews it every third of its duration and releases it when it stops cleanly (after
its sessions have closed and settled what they held). A host killed mid-fire leaves its
lease to expire: from then on, another host (or the next run on the same ledger) may close
the fires it left open (``assay.host.recovery``).

A renewal that finds the lease gone means another host judged this one dead, after the lease
expired unrenewed (the process was paused, or could not reach the ledger, for longer than the
lease), and closed its open fires; a settlement this host recorded for one of them now would
be its second. So the host stops recording evidence, as after a failed store.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from assay.clock import Clock, SystemClock
from assay.errors import EvidenceStoppedError
from assay.ledger.lease import check_seconds
from assay.ledger.ledger import Ledger

_T = TypeVar("_T")


def new_owner() -> str:
    """A new owner id: this machine's name, the process id and a random part, so that an
    operator can tell which daemon a closed fire was left by, and no two hosts share one."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


def lease_now(clock: Clock) -> datetime | None:
    """The ``now`` lease operations are judged by: ``None`` on real time, for the store's own
    clock (PostgreSQL's is the one clock that daemons on several machines share); else the
    clock's wall time (a virtual clock in tests, shared by every host in the test)."""
    return None if isinstance(clock, SystemClock) else clock.wall()


class Tenure:
    """``owner``'s lease on ``ledger``, ``duration_s`` long, renewed every third of it on
    ``clock``. Its ledger calls run in a worker thread unless the backend never waits."""

    def __init__(self, ledger: Ledger, owner: str, duration_s: float, clock: Clock) -> None:
        check_seconds(duration_s, "lease_s")
        self.ledger = ledger
        self.owner = owner
        self.duration_s = float(duration_s)
        self.clock = clock
        self.held = False

    @property
    def every_s(self) -> float:
        """How often the lease is renewed: a third of its duration, so that two renewals
        can fail (a ledger restarting) before it expires."""
        return self.duration_s / 3

    @property
    def now(self) -> datetime | None:
        """What the lease's expiry is judged by (see ``lease_now``)."""
        return lease_now(self.clock)

    async def take(self) -> None:
        """Hold the lease (at start, before anything is fired)."""
        backend = self.ledger.backend
        await self.run(backend.take_lease, self.owner, self.duration_s, now=self.now)
        self.held = True

    async def renew(self) -> bool:
        """Renew the lease; ``False`` once it is gone (see the module's notes)."""
        backend = self.ledger.backend
        renewed = await self.run(backend.renew_lease, self.owner, self.duration_s, now=self.now)
        self.held = renewed is not None
        return self.held

    async def release(self) -> None:
        """Drop the lease (a clean stop: nothing this host fired is left open)."""
        if self.held:
            await self.run(self.ledger.backend.release_lease, self.owner)
            self.held = False

    def lost(self) -> EvidenceStoppedError:
        """The error evidence stops with once the lease was found gone."""
        return EvidenceStoppedError(
            f"this daemon ({self.owner}) lost its lease on the ledger {self.ledger.url}: it was "
            f"not renewed within {self.duration_s:g} s (the process was paused, or could not "
            "reach the ledger), so another daemon took it for stopped and closed its open "
            "fires as unobservable; it records no more evidence, so that no fire is settled "
            "twice: restart it",
            url=self.ledger.url,
        )

    async def run(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``call`` in a worker thread, or here when the backend never waits (memory)."""
        if not self.ledger.backend.appends_wait:
            return call(*args, **kwargs)
        return await asyncio.to_thread(call, *args, **kwargs)
