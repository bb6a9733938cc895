"""``DurableEvidence``: a session's evidence log for an event loop that must never block.

Sessions record evidence synchronously, from inside ``fire`` and settlement callbacks. On a
server those run on the event loop, where a disk sync would stall every other request. Here
``append`` only validates, redacts and queues the entry (a malformed one raises at once and
nothing is queued); one writer thread stores the queue in order, in batches, one durable
commit per batch. A port answers a caller only after ``await durable()``, so nothing it
acknowledged can be lost to a crash. A ledger whose appends never wait (memory) is stored
to at once, on the caller's thread, with no writer thread at all.

A store that fails stops the log: every caller waiting, and every later ``append``, gets an
``EvidenceStoppedError``. A session records an action's fire before running its handler, so
from then on no action runs without its evidence; the handlers that already ran have their
callers told that nothing was acknowledged. Recording again takes a new log (for the daemon,
a restart) once the ledger is back: a log that went on after a gap could answer a caller for
entries stored after one of its own that was lost.

A lone caller is the exception. Handing its entry to the writer and being woken by it
costs two thread wake-ups, as much as the sync itself on a fast disk. So when the writer is
idle, the loop wakes it only at the end of the iteration that queued the entry, after the
other ready tasks had their turn to queue theirs; if by then the queue is exactly what one
caller awaits, and nobody else awaits anything, the loop stores it itself. The loop is
blocked for that one commit, when no other caller was waiting on the ledger; as soon as two
are, the writer commits for them.

A host's log is given the host's ``owner`` id, and each fire it records names it (the fire
body's ``owner``): the lease of that id on the ledger says whether the host that fired is
still alive, so that a fire it left open when it was killed can be closed by another
(``assay.host.recovery``).

``append`` never waits for the writer, which takes the queue whenever it next runs. A loop
that waited until an idle writer took half a round of drafts would let the writer sync one
half while the loop drafts the other, which speeds up tasks that do nothing but append; but
under HTTP load those waits cost the daemon about a fifth more CPU per request
(``bench/http_verify.py``), and serving requests is what the loop is for.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

from assay.errors import EvidenceStoppedError, LedgerError
from assay.ledger.entry import EntryDraft
from assay.ledger.ledger import Ledger

_BATCH = 512


class DurableEvidence:
    """Queue evidence for ``ledger`` without blocking; entries keep the order appended."""

    def __init__(self, ledger: Ledger, *, owner: str | None = None) -> None:
        self.ledger = ledger
        self.owner = owner
        self._queue: deque[EntryDraft] = deque()
        # Held with ``with self._lock`` (C code) rather than through the condition (Python code).
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._queued = 0  # entries ever queued
        self._stored = 0  # entries ever stored
        self.commits = 0  # batches stored, one durable commit each
        self.commits_in_place = 0  # of them, stored by the loop for a lone caller
        self._failure: LedgerError | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._closing = False
        self._writer_waiting = False  # the writer waits for entries: wake it (lock held)
        self._in_place = False  # the loop is storing a batch itself (see _kick)
        self._kick_loop: asyncio.AbstractEventLoop | None = None  # where a _kick is due
        self.inline = not ledger.backend.appends_wait  # stored at once, no writer thread
        self._writer = threading.Thread(target=self._run, name="assay evidence", daemon=True)
        if not self.inline:
            self._writer.start()

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
        if kind == "fire" and self.owner is not None and isinstance(body, dict):
            body = {**body, "owner": self.owner}
        draft = self.ledger.draft(kind, body, session=session, transition=transition, run=run)
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self.inline:
                self._store([draft])
                self._queued += 1
                return self._queued
            self._queue.append(draft)
            self._queued += 1
            if self._writer_waiting:
                self._wake_writer()
            return self._queued

    async def durable(self, ticket: int | None = None) -> None:
        """Return once every entry queued up to ``ticket`` (default: all so far) is stored
        durably; raises ``EvidenceStoppedError`` when the ledger could not store them, and
        from then on (see the module's notes)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            target = self._queued if ticket is None else ticket
            if self._failure is not None:
                raise self._failure
            if self._stored >= target:
                return
            self._waiters.append((target, future))
        await future

    def halt(self, failure: LedgerError) -> None:
        """Stop the log as a failed store would: every caller waiting, and every later
        ``append``, gets ``failure``; nothing queued is stored."""
        self._fail(failure)

    @property
    def failure(self) -> LedgerError | None:
        """Why evidence stopped being recorded, once it has (see the module's notes)."""
        return self._failure

    @property
    def pending(self) -> int:
        """Entries queued and not yet stored."""
        with self._lock:
            return self._queued - self._stored

    def close(self) -> None:
        """Store what is queued, then stop the writer."""
        with self._lock:
            self._closing = True
            self._wake.notify()
        if not self.inline:
            self._writer.join()

    def _wake_writer(self) -> None:
        """Have the idle writer take the queue (lock held): at once from a thread without a
        running event loop, else in ``_kick`` at the end of this loop iteration."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._wake.notify()
            return
        if self._kick_loop is not loop:  # else a kick is due on this loop already
            self._kick_loop = loop
            loop.call_soon(self._kick)

    def _kick(self) -> None:
        """Store the queue here if it is exactly what the one waiting caller awaits, else
        wake the writer (see the module's notes)."""
        with self._lock:
            self._kick_loop = None
            if not self._queue or not self._writer_waiting or self._in_place:
                return  # stored already, or the writer is busy and takes the queue next
            if len(self._waiters) != 1 or self._waiters[0][0] < self._queued:
                self._wake.notify()
                return
            batch = list(self._queue)
            self._queue.clear()
            self._in_place = True
        try:
            if self._store(batch):
                self.commits_in_place += 1
        finally:
            with self._lock:
                self._in_place = False
                if self._queue or self._closing:
                    self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._lock:
                while (not self._queue and not self._closing) or self._in_place:
                    self._writer_waiting = True
                    self._wake.wait()
                    self._writer_waiting = False
                if not self._queue:
                    return
                batch = [self._queue.popleft() for _ in range(min(_BATCH, len(self._queue)))]
            if not self._store(batch):
                return

    def _store(self, batch: list[EntryDraft]) -> bool:
        """Store ``batch`` and wake whoever waits on it; ``False`` once storing failed."""
        try:
            self.ledger.store(batch)
        except Exception as error:
            failure = EvidenceStoppedError(
                f"{error}; evidence stopped being recorded at that failure, and actions with "
                "it, so that none runs unrecorded: restart once the ledger is back",
                url=error.url if isinstance(error, LedgerError) else None,
            )
            failure.__cause__ = error
            self._fail(failure)
            return False
        self._stored_up_to(len(batch))
        return True

    def _stored_up_to(self, count: int) -> None:
        with self._lock:
            self.commits += 1
            self._stored += count
            stored = self._stored
            done = [future for target, future in self._waiters if target <= stored]
            self._waiters = [(t, f) for t, f in self._waiters if t > stored]
        _resolve(done, None)

    def _fail(self, failure: LedgerError) -> None:
        with self._lock:
            self._failure = failure
            waiters, self._waiters = self._waiters, []
            self._queue.clear()
        _resolve([future for _, future in waiters], failure)


def _resolve(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    """Settle ``futures`` in their loops' threads: one call per loop, not per future, and a
    wake-up only for a loop other than the one running here."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for future in futures:
        by_loop.setdefault(future.get_loop(), []).append(future)

    def settle(batch: list[asyncio.Future[None]]) -> None:
        for future in batch:
            if future.done():
                continue
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    for loop, batch in by_loop.items():
        if loop is running:
            loop.call_soon(settle, batch)
            continue
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, batch)
