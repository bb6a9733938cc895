"""Group commit: many appenders, one writer at a time, one transaction and one sync per batch.

An append that finds no one writing and nothing queued is written at once by its own thread.
One that arrives while a batch is being written is sealed (given its seq and hash) by its own
thread, after the last entry sealed, and queued; a writer thread of the group's own commits
everything queued as one batch as soon as the batch before is done. When a write fails, or
another process moved the head, the writer seals the next batch itself after the head it
knows. A batch's callers are woken one after another, each by the one before (docs/ledger.md,
"What it takes", says why).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assay.errors import LedgerError
from assay.ledger.backends.protocol import LedgerBackend
from assay.ledger.entry import Entry, EntryDraft, seal_all

Head = tuple[int, str]
"""An entry's ``(seq, hash)``: what the next entry is sealed after."""

Store = Callable[[list[EntryDraft], list[Entry] | None], list[Entry]]
"""A backend's write: store ``drafts`` as one durable transaction and return their entries.
Given ``sealed`` (the drafts sealed after the head the group believes stored), store those
if they follow the stored head; otherwise, or given ``None``, seal the drafts after the
head read inside the transaction. Raise, storing nothing, if it cannot."""


@dataclass(frozen=True, slots=True)
class GroupCommitStatistics:
    """What the writers have done: ``batches`` committed, ``entries`` in them, the largest
    batch, and how many drafts are ``queued`` or being ``written`` right now."""

    batches: int
    entries: int
    largest_batch: int
    queued: int
    writing: int


class _Wake:
    """A one-shot ``threading.Event`` on one bare lock: an appender waits on one per append,
    and an ``Event`` (a ``Condition``, its lock and a waiter lock per wait) costs several
    times as much to make, wait on and set."""

    __slots__ = ("_flag", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        # Called once per request, by the writer or by the chain that wakes a committed
        # batch, never twice at once; the flag makes a second call harmless.
        if not self._flag:
            self._flag = True
            self._lock.release()

    def wait(self) -> bool:
        self._lock.acquire()
        self._lock.release()
        return True


class _Request:
    __slots__ = (
        "abandoned",
        "drafts",
        "entries",
        "error",
        "finished",
        "following",
        "sealed",
        "wake",
    )

    def __init__(self, drafts: list[EntryDraft]) -> None:
        self.drafts = drafts
        self.sealed: list[Entry] | None = None  # sealed ahead, as submitted
        self.wake: _Wake | threading.Event = _Wake()  # set once its batch is written
        self.finished = False
        self.abandoned = False  # its caller stopped waiting while its batch was written
        self.entries: list[Entry] = []
        self.error: BaseException | None = None
        # Its batch's callers not woken yet, shared by them: each woken one wakes the next.
        self.following: deque[_Request] | None = None


class GroupCommit:
    """Serializes appends into batches, each written by one thread on behalf of all in it.

    ``write`` (a ``Store``) is called by one thread at a time and returns once the batch is
    durable.
    """

    def __init__(self, write: Store, *, name: str) -> None:
        self._write = write
        self._head: Head | None = None  # the last entry stored, once a write has told it
        self._tail: Head | None = None  # the last entry sealed ahead; None: seal none ahead
        self._name = name
        self._lock = threading.Lock()
        self._has_work = threading.Condition(self._lock)  # the writer thread waits on it
        self._idle = threading.Condition(self._lock)  # close waits on it
        self._queue: list[_Request] = []
        self._busy = False  # a batch is being written, by a caller or the writer thread
        self._writer: threading.Thread | None = None  # started by the first queued request
        self._writer_waiting = False
        self._closed = False
        self._batches = 0
        self._entries = 0
        self._largest = 0
        self._writing = 0
        self._listeners: list[Callable[[list[Entry]], None]] = []

    def submit(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        """Store ``drafts`` consecutively in the next batch; return their entries once durable."""
        request = _Request(list(drafts))
        with self._lock:
            if self._closed:
                raise LedgerError(
                    f"the ledger {self._name} is closed; open it again to append", url=self._name
                )
            alone = not self._busy and not self._queue
            # Alone, the entry follows the stored head; queued, the last entry sealed ahead.
            follows = self._head if alone else self._tail
            if follows is not None and request.drafts:
                ahead = seal_all(request.drafts, *follows)  # leaf hashes included
                request.sealed = ahead
                self._tail = (ahead[-1].seq, ahead[-1].hash)
            if alone:
                self._busy = True
                self._writing = len(request.drafts)
            else:
                self._queue.append(request)
                if self._writer is None:
                    self._writer = threading.Thread(
                        target=self._run, name=f"assay ledger writer {self._name}", daemon=True
                    )
                    self._writer.start()
                elif self._writer_waiting and not self._busy:
                    self._has_work.notify()
        if alone:
            sealed = request.sealed
            try:
                self._commit([request], sealed)
            finally:
                self._done_writing(request.entries if request.error is None else None, sealed)
        else:
            try:
                request.wake.wait()
                _wake_next(request.following)
            except BaseException:
                self._abandon(request)
                raise
        if request.error is not None:
            raise request.error
        return request.entries

    def add_listener(self, listener: Callable[[list[Entry]], None]) -> None:
        """Call ``listener`` with every committed batch's entries, in commit order, before any
        caller in the batch is answered. It runs in the writing thread and must not block."""
        with self._lock:
            self._listeners.append(listener)

    def statistics(self) -> GroupCommitStatistics:
        """A snapshot of the counters."""
        with self._lock:
            return GroupCommitStatistics(
                self._batches,
                self._entries,
                self._largest,
                sum(len(request.drafts) for request in self._queue),
                self._writing,
            )

    def close(self) -> None:
        """Refuse new appends and wait for every batch already submitted; safe to call twice."""
        with self._lock:
            self._closed = True
            self._has_work.notify()
            while self._busy or self._queue:
                self._idle.wait()
            writer = self._writer
        if writer is not None and writer is not threading.current_thread():
            writer.join()

    def _run(self) -> None:
        """The writer thread: commit what is queued, batch after batch, until closed."""
        while True:
            with self._lock:
                while self._busy or not self._queue:
                    if self._closed and not self._busy:
                        return
                    self._writer_waiting = True
                    self._has_work.wait()
                    self._writer_waiting = False
                batch, self._queue = self._queue, []
                self._busy = True
                self._writing = sum(len(request.drafts) for request in batch)
                sealed = self._sealed(batch)
            entries: list[Entry] | None = None
            try:
                self._commit(batch, sealed)
                if batch[0].error is None:
                    entries = [entry for request in batch for entry in request.entries]
            finally:
                self._done_writing(entries, sealed)

    def _sealed(self, batch: list[_Request]) -> list[Entry] | None:
        """``batch`` sealed after the stored head: as sealed ahead when each request follows
        on from the one before, else sealed again here; ``None`` when no head is known
        (lock held; the queue is empty, so the tail becomes the batch's last entry)."""
        head = self._head
        if head is None:
            self._tail = None
            return None
        follows = head
        for request in batch:
            sealed = request.sealed
            if sealed is None or (sealed[0].seq - 1, sealed[0].prev_hash) != follows:
                break
            follows = (sealed[-1].seq, sealed[-1].hash)
        else:
            return [entry for request in batch for entry in request.sealed or ()]
        entries = seal_all([draft for request in batch for draft in request.drafts], *head)
        self._tail = (entries[-1].seq, entries[-1].hash)
        return entries

    def _done_writing(self, stored: list[Entry] | None, sealed: list[Entry] | None) -> None:
        """The batch sealed as ``sealed`` is done: ``stored`` as these entries, or not at all
        (``None``). What is sealed ahead stays good only if it was stored as sealed."""
        with self._lock:
            self._busy = False
            self._writing = 0
            if stored is None:
                self._head = self._tail = None  # nothing is known of the head any more
            else:
                self._head = (stored[-1].seq, stored[-1].hash)
                if sealed is None or stored[-1].hash != sealed[-1].hash:
                    # The store sealed the batch itself: what is queued was sealed after a
                    # head that is not the stored one, and the writer seals it again.
                    self._tail = None if self._queue else self._head
            if self._queue:
                self._has_work.notify()  # a no-op when the writer thread itself calls it
            else:
                self._idle.notify_all()
                if self._closed:
                    self._has_work.notify()  # let the writer thread see it and end

    def _abandon(self, request: _Request) -> None:
        """The caller stopped waiting (an interrupt): never strand its drafts, or the callers
        of its batch still to be woken."""
        with self._lock:
            if request in self._queue:
                self._queue.remove(request)  # not written, and now it never will be
                if not self._queue and not self._busy:
                    self._idle.notify_all()
                return
            if not request.finished:
                request.abandoned = True  # its batch, being written, will not wait for it
                return
        # Its batch is written: wake the next of it in its stead. Waking one more than the
        # chain needs (it had already woken the next) only wakes a finished caller sooner.
        _wake_next(request.following)

    def _commit(self, batch: list[_Request], sealed: list[Entry] | None) -> None:
        drafts = [draft for request in batch for draft in request.drafts]
        try:
            entries = self._write(drafts, sealed)
        except BaseException as exc:  # every caller in the batch must wake, whatever happened
            for request in batch:
                request.error = _wrap(exc, self._name)
        else:
            start = 0
            for request in batch:
                request.entries = entries[start : start + len(request.drafts)]
                start += len(request.drafts)
            with self._lock:
                self._batches += 1
                self._entries += len(entries)
                self._largest = max(self._largest, len(entries))
                listeners = list(self._listeners)
            for listener in listeners:
                # The entries are durable: a listener's failure must not turn their
                # acknowledgement into an error (the ledger catches up by reading).
                with contextlib.suppress(Exception):
                    listener(entries)
        if len(batch) == 1:
            batch[0].finished = True
            batch[0].wake.set()  # an appender writing its own entry waits on nothing
            return
        with self._lock:
            following = deque(r for r in batch if not r.abandoned)
            for request in batch:
                request.finished = True
                request.following = following
        _wake_next(following)


def _wake_next(following: deque[_Request] | None) -> None:
    """Wake the next caller of a committed batch (each caller is taken from it once)."""
    if following:
        try:
            waiting = following.popleft()
        except IndexError:  # another thread took the last one
            return
        waiting.wake.set()


def _wrap(exc: BaseException, name: str) -> LedgerError:
    """A fresh error for each caller (one instance raised in many threads would share a
    traceback), saying that nothing in the batch was stored."""
    reason = str(exc) if isinstance(exc, LedgerError) else f"{type(exc).__name__}: {exc}"
    error = LedgerError(f"{reason}; nothing in this batch was stored", url=name)
    error.__cause__ = exc
    return error


class GroupCommittedBackend(LedgerBackend):
    """A database backend whose appends go through one ``GroupCommit`` (``self._group``)."""

    _group: GroupCommit

    def statistics(self) -> GroupCommitStatistics:
        """How this process's appends have been grouped into commits."""
        return self._group.statistics()

    def add_commit_listener(self, listener: Callable[[list[Entry]], None]) -> None:
        self._group.add_listener(listener)

    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        if not drafts:
            return []
        return self._group.submit(drafts)
