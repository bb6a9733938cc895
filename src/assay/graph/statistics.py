"""``SessionStatistics``: what a session holds and runs at one moment, as a frozen record
(trio's ``statistics()``), so that a host reads counts without reaching into the session."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SessionStatistics:
    """A session's counts as of one moment."""

    fired: int
    """How many transitions the session has made, held or not."""
    held: int
    """How many transitions it holds: every pending one, and its latest settled ones."""
    pending: int
    """How many of those it holds are still pending."""
    queued: int
    """How many writes-only fires await a state report."""
    tasks: int
    """How many pieces of background work run: verifications, async handlers, probe reads."""

    @property
    def busy(self) -> bool:
        """Whether something of the session is still under way: a pending transition or
        background work."""
        return self.pending > 0 or self.tasks > 0
