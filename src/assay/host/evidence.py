"""``DurableEvidence``: a session's evidence log for an event loop that must never block.

Sessions record evidence synchronously, from inside ``fire`` and settlement callbacks, which
on a server run on the event loop. The log queues each entry on the ledger's one async route,
an ``AppendQueue``, and a port answers a caller only after ``await durable()``.
"""

from __future__ import annotations

from typing import Any

from assay.errors import EvidenceStoppedError, LedgerError
from assay.host.keyed import BODY_FIELD, KEYED
from assay.ledger.append_queue import AppendQueue
from assay.ledger.ledger import Ledger


class DurableEvidence:
    """Queue evidence for ``ledger`` without blocking; entries keep the order appended.

    A store that fails stops the log: every caller waiting, and every later ``append``, gets
    an ``EvidenceStoppedError``. A session records an action's fire before running its
    handler, so from then on no action runs without its evidence; the handlers that already
    ran have their callers told that nothing was acknowledged. Recording again takes a new
    log (for the daemon, a restart) once the ledger is back: a log that went on after a gap
    could answer a caller for entries stored after one of its own that was lost.

    Each fire the log records names its ``owner``, the host's id (the fire body's
    ``owner``): the lease of that id on the ledger says whether the host that fired is still
    alive, so that a fire it left open when it was killed can be closed by another
    (``assay.host.recovery``); a fire made under an idempotency key names it too
    (``assay.host.keyed``).
    """

    def __init__(self, ledger: Ledger, *, owner: str | None = None) -> None:
        self.ledger = ledger
        self.owner = owner
        self._queue = AppendQueue(
            ledger.store, inline=not ledger.backend.appends_wait, stopped=_stopped
        )

    @property
    def inline(self) -> bool:
        """Whether entries are stored at once, on the caller's thread (a ledger whose appends
        never wait, as memory's), with no writer thread."""
        return self._queue.inline

    @property
    def commits(self) -> int:
        """Batches stored, one durable commit each."""
        return self._queue.commits

    @property
    def commits_in_place(self) -> int:
        """Of ``commits``, those the event loop stored itself for a lone caller."""
        return self._queue.commits_in_place

    def append(
        self,
        kind: str,
        body: Any,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
    ) -> int:
        """Queue one entry; answers its ticket for ``durable``. Raises if it is malformed."""
        if kind == "fire" and isinstance(body, dict):
            if self.owner is not None:
                body = {**body, "owner": self.owner}
            keyed = KEYED.get()
            if keyed is not None:
                body = {**body, BODY_FIELD: keyed}
        draft = self.ledger.draft(kind, body, session=session, transition=transition, run=run)
        return self._queue.put(draft)

    async def durable(self, ticket: int | None = None) -> None:
        """Return once every entry queued up to ``ticket`` (default: all so far) is stored
        durably; raises ``EvidenceStoppedError`` when the ledger could not store them, and
        from then on."""
        await self._queue.durable(ticket)

    def halt(self, failure: LedgerError) -> None:
        """Stop the log as a failed store would: every caller waiting, and every later
        ``append``, gets ``failure``; nothing queued is stored."""
        self._queue.halt(failure)

    @property
    def failure(self) -> LedgerError | None:
        """Why evidence stopped being recorded, once it has."""
        return self._queue.failure

    @property
    def pending(self) -> int:
        """Entries queued and not yet stored."""
        return self._queue.pending

    def close(self) -> None:
        """Store what is queued, then stop the writer."""
        self._queue.close()


def _stopped(error: Exception) -> EvidenceStoppedError:
    """What every caller is told once a store failed with ``error``."""
    failure = EvidenceStoppedError(
        f"{error}; evidence stopped being recorded at that failure, and actions with it, so "
        "that none runs unrecorded: restart once the ledger is back",
        url=error.url if isinstance(error, LedgerError) else None,
    )
    failure.__cause__ = error
    return failure
