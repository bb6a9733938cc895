"""``DurableEvidence``: a session's evidence log for an event loop that must never block.

Sessions record evidence synchronously, from inside ``fire`` and settlement callbacks. On a
server those run on the event loop, where a disk sync would stall every other request. Here
``append`` only validates, redacts and queues the entry (a malformed one raises at once and
nothing is queued); one writer thread stores the queue in order, in batches, one durable
commit per batch. A port answers a caller only after ``await durable()``, so nothing it
acknowledges can be lost to a crash. A ledger whose appends never wait (memory) is stored
to at once, on the caller's thread, with no writer thread at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

from assay.errors import LedgerError
from assay.ledger.entry import EntryDraft
from assay.ledger.ledger import Ledger

_BATCH = 512


class DurableEvidence:
    """Queue evidence for ``ledger`` without blocking; entries keep the order appended."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._queue: deque[EntryDraft] = deque()
        self._wake = threading.Condition()
        self._queued = 0  # entries ever queued
        self._stored = 0  # entries ever stored
        self.commits = 0  # batches stored, one durable commit each
        self._failure: LedgerError | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._closing = False
        self._writer_waiting = False  # the writer waits for entries: wake it (lock held)
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
        draft = self.ledger.draft(kind, body, session=session, transition=transition, run=run)
        with self._wake:
            if self._failure is not None:
                raise self._failure
            if self.inline:
                self._store([draft])
                self._queued += 1
                return self._queued
            self._queue.append(draft)
            self._queued += 1
            if self._writer_waiting:
                self._wake.notify()
            return self._queued

    async def durable(self, ticket: int | None = None) -> None:
        """Return once every entry queued up to ``ticket`` (default: all so far) is stored
        durably; raises ``LedgerError`` when the ledger could not store them."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._wake:
            target = self._queued if ticket is None else ticket
            if self._failure is not None:
                raise self._failure
            if self._stored >= target:
                return
            self._waiters.append((target, future))
        await future

    @property
    def pending(self) -> int:
        """Entries queued and not yet stored."""
        with self._wake:
            return self._queued - self._stored

    def close(self) -> None:
        """Store what is queued, then stop the writer."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        if not self.inline:
            self._writer.join()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closing:
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
            failure = error if isinstance(error, LedgerError) else LedgerError(str(error))
            self._fail(failure)
            return False
        self._stored_up_to(len(batch))
        return True

    def _stored_up_to(self, count: int) -> None:
        with self._wake:
            self.commits += 1
            self._stored += count
            stored = self._stored
            done = [future for target, future in self._waiters if target <= stored]
            self._waiters = [(t, f) for t, f in self._waiters if t > stored]
        _resolve(done, None)

    def _fail(self, failure: LedgerError) -> None:
        with self._wake:
            self._failure = failure
            waiters, self._waiters = self._waiters, []
            self._queue.clear()
        _resolve([future for _, future in waiters], failure)


def _resolve(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    """Settle ``futures`` from the writer thread: one wake-up per event loop, not per future."""
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

    for loop, batch in by_loop.items():
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, batch)
