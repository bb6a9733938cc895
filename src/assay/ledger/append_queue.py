"""``AppendQueue``: the one route by which an event loop appends to a ledger.

A draft is queued at once; one writer thread stores the queue in order, in batches, one
durable commit each (the loop itself, for a lone caller), and a caller awaits its entries'
durability. ``Ledger.aappend`` and a host's ``DurableEvidence`` both append through one.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from assay.errors import LedgerError
from assay.ledger.entry import Entry, EntryDraft

BATCH: Final = 512
"""The most drafts the writer stores in one commit."""

Store = Callable[[Sequence[EntryDraft]], list[Entry]]
"""Store drafts in order as one durable commit and answer their entries (``Ledger.store``)."""

_Waiter = tuple[int, "asyncio.Future[Entry | None]"]
"""A ticket awaited, and the future its caller awaits: the entry of that ticket, once stored."""
_Settled = tuple["asyncio.Future[Entry | None]", Entry | None]
"""A waiter's future and what it is answered: its ticket's entry, or None."""


class AppendQueue:
    """Drafts queued for ``store`` without blocking, stored in the order queued.

    ``put`` answers a ticket and ``durable(ticket)`` returns once every draft queued up to it
    is durable; ``stored(draft)`` does both and answers the entry. With ``inline`` (a store
    that never waits, as memory's) each draft is stored at once on the caller's thread, with
    no writer thread at all. A store that fails stops the queue: every caller waiting, and
    every later ``put``, gets ``stopped(error)``, and nothing queued is stored, so that no
    caller is answered for entries stored after one of its own that was lost.
    """

    def __init__(
        self, store: Store, *, inline: bool, stopped: Callable[[Exception], LedgerError]
    ) -> None:
        self._store_drafts = store
        self._stopped = stopped
        self._queue: deque[EntryDraft] = deque()
        # Held with ``with self._lock`` (C code) rather than through the condition (Python code).
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._queued = 0  # drafts ever queued
        self._stored = 0  # drafts ever stored
        self.commits = 0  # batches stored, one durable commit each
        self.commits_in_place = 0  # of them, stored by the loop for a lone caller
        self._failure: LedgerError | None = None
        self._waiters: list[_Waiter] = []
        self._closing = False
        self._writer_waiting = False  # the writer waits for drafts: wake it (lock held)
        self._in_place = False  # the loop is storing a batch itself (see _kick)
        self._kick_loop: asyncio.AbstractEventLoop | None = None  # where a _kick is due
        self.inline = inline
        self._writer = threading.Thread(target=self._run, name="assay appends", daemon=True)
        if not inline:
            self._writer.start()

    def put(self, draft: EntryDraft) -> int:
        """Queue ``draft``; answers its ticket for ``durable``. Raises once the queue stopped."""
        with self._lock:
            return self._put(draft)[0]

    async def durable(self, ticket: int | None = None) -> None:
        """Return once every draft queued up to ``ticket`` (default: all so far) is stored
        durably; raises what the queue stopped with when it could not store them."""
        future: asyncio.Future[Entry | None] = asyncio.get_running_loop().create_future()
        with self._lock:
            target = self._queued if ticket is None else ticket
            if self._failure is not None:
                raise self._failure
            if self._stored >= target:
                return
            self._waiters.append((target, future))
        await future

    async def stored(self, draft: EntryDraft) -> Entry:
        """Queue ``draft`` and answer its entry once it is durable (``put``, ``durable``)."""
        future: asyncio.Future[Entry | None] = asyncio.get_running_loop().create_future()
        with self._lock:
            ticket, entry = self._put(draft)
            if entry is None:
                if self._failure is not None:
                    raise self._failure
                self._waiters.append((ticket, future))  # before the writer can store it
        if entry is None:
            entry = await future
            assert entry is not None  # a waiter's ticket is stored after it began waiting
        return entry

    def halt(self, failure: LedgerError) -> None:
        """Stop the queue as a failed store would: every caller waiting, and every later
        ``put``, gets ``failure``; nothing queued is stored."""
        self._fail(failure)

    @property
    def failure(self) -> LedgerError | None:
        """What the queue stopped with, once it has."""
        return self._failure

    @property
    def pending(self) -> int:
        """Drafts queued and not yet stored."""
        with self._lock:
            return self._queued - self._stored

    def close(self) -> None:
        """Store what is queued, then stop the writer."""
        with self._lock:
            self._closing = True
            self._wake.notify()
        if not self.inline:
            self._writer.join()

    def _put(self, draft: EntryDraft) -> tuple[int, Entry | None]:
        """Queue ``draft`` (lock held): its ticket, and its entry when stored at once."""
        if self._failure is not None:
            raise self._failure
        if self.inline:
            entries = self._store([draft])
            self._queued += 1
            return self._queued, entries[0] if entries else None
        self._queue.append(draft)
        self._queued += 1
        # Never waiting for the writer, which takes the queue whenever it next runs: a loop
        # that waited until an idle writer took half a round of drafts would let it sync one
        # half while the loop drafts the other, which speeds up tasks that only append, but
        # under HTTP load those waits cost the daemon about a fifth more CPU per request
        # (bench/http_verify.py), and serving requests is what the loop is for.
        if self._writer_waiting:
            self._wake_writer()
        return self._queued, None

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
        wake the writer.

        Handing a lone caller's draft to the writer and being woken by it costs two thread
        wake-ups, as much as the sync itself on a fast disk. So the loop wakes an idle writer
        only at the end of the iteration that queued the draft, after the other ready tasks
        had their turn to queue theirs, and stores the queue itself when it is exactly what
        one caller awaits and nobody else awaits anything: the loop is blocked for that one
        commit, when no other caller was waiting; as soon as two are, the writer commits.
        """
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
            if self._store(batch) is not None:
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
                batch = [self._queue.popleft() for _ in range(min(BATCH, len(self._queue)))]
            if self._store(batch) is None:
                return

    def _store(self, batch: list[EntryDraft]) -> list[Entry] | None:
        """Store ``batch`` and wake whoever waits on it; ``None`` once storing failed."""
        try:
            entries = self._store_drafts(batch)
        except Exception as error:
            self._fail(self._stopped(error))
            return None
        self._stored_as(entries)
        return entries

    def _stored_as(self, entries: list[Entry]) -> None:
        """The next drafts queued are stored as ``entries``: answer who waits on them."""
        with self._lock:
            self.commits += 1
            before = self._stored
            self._stored += len(entries)
            stored = self._stored
            done = [
                (future, entries[target - before - 1] if target > before else None)
                for target, future in self._waiters
                if target <= stored
            ]
            self._waiters = [(t, f) for t, f in self._waiters if t > stored]
        _resolve(done, None)

    def _fail(self, failure: LedgerError) -> None:
        with self._lock:
            self._failure = failure
            waiters, self._waiters = self._waiters, []
            self._queue.clear()
        _resolve([(future, None) for _, future in waiters], failure)


def _resolve(settled: list[_Settled], error: BaseException | None) -> None:
    """Settle each future with its entry, or ``error``, in its loop's thread: one call per
    loop, not per future, and a wake-up only for a loop other than the one running here."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Settled]] = {}
    for future, entry in settled:
        by_loop.setdefault(future.get_loop(), []).append((future, entry))

    def settle(batch: list[_Settled]) -> None:
        for future, entry in batch:
            if future.done():
                continue
            if error is None:
                future.set_result(entry)
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
