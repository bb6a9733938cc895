"""Group commit: many appenders, one writer at a time, one transaction and one sync per batch.

Every ``submit`` puts its drafts on a queue. If no one is writing, the caller becomes the
writer: it takes everything waiting, hands it to the backend's ``write`` as one batch (one
transaction, one durable commit) and wakes each caller in the batch with its own entries.
Callers that arrive while a commit is syncing queue up behind it; when the commit is done,
the writer hands the role to the first of them, which commits the whole queue at once. So
under load one sync serves every entry that arrived during the last one, and with no load
an append is written by its own thread, with no hand-off to another thread and back.

The callers of a committed batch are woken one after another, each by the one before it,
rather than all at once by the writer: a thread woken while many others also wait for the
GIL waits for it a second time, and with many threads those waits cost more than the work
(docs/ledger.md has the figures).
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from assay.errors import LedgerError
from assay.ledger.backend import LedgerBackend
from assay.ledger.entry import Entry, EntryDraft


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
        # Called with the group's lock held (handing on the role), or once per request by
        # the chain that wakes a committed batch, never twice at once; the flag makes a
        # second call harmless.
        if not self._flag:
            self._flag = True
            self._lock.release()

    def wait(self) -> bool:
        self._lock.acquire()
        self._lock.release()
        return True


class _Request:
    __slots__ = ("abandoned", "drafts", "entries", "error", "finished", "following", "wake")

    def __init__(self, drafts: list[EntryDraft]) -> None:
        self.drafts = drafts
        self.wake: _Wake | threading.Event = _Wake()  # set when written, or given the role
        self.finished = False
        self.abandoned = False  # its caller stopped waiting while its batch was written
        self.entries: list[Entry] = []
        self.error: BaseException | None = None
        # Its batch's callers not woken yet, shared by them: each woken one wakes the next.
        self.following: deque[_Request] | None = None


class GroupCommit:
    """Serializes appends into batches, each written by one caller on behalf of all in it.

    ``write(drafts)`` is called by one thread at a time: it must seal and store the drafts
    in one transaction and return once that is durable, or raise and store nothing.
    """

    def __init__(self, write: Callable[[list[EntryDraft]], list[Entry]], *, name: str) -> None:
        self._write = write
        self._name = name
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: list[_Request] = []
        self._writing_now = False
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
            self._queue.append(request)
            lead = not self._writing_now
            self._writing_now = True
        if not lead:
            try:
                request.wake.wait()
                if request.finished:
                    _wake_next(request.following)
            except BaseException:
                self._abandon(request)
                raise
        if not request.finished:
            self._lead(request)
        if request.error is not None:
            raise request.error
        return request.entries

    def add_listener(self, listener: Callable[[list[Entry]], None]) -> None:
        """Call ``listener`` with every committed batch's entries, in commit order, before any
        caller in the batch is answered. It runs in the writer's thread and must not block."""
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
            while self._writing_now:
                self._idle.wait()

    def _lead(self, own: _Request) -> None:
        """Write everything queued (``own`` request among it) as one batch, then pass the
        writer's role on."""
        with self._lock:
            batch, self._queue = self._queue, []
            self._writing = sum(len(request.drafts) for request in batch)
        try:
            self._commit(batch, own)
        finally:
            with self._lock:
                self._writing = 0
                self._pass_on()

    def _pass_on(self) -> None:
        """Hand the writer's role to the first caller still waiting, if any (lock held)."""
        if self._queue:
            self._queue[0].wake.set()
        else:
            self._writing_now = False
            self._idle.notify_all()

    def _abandon(self, request: _Request) -> None:
        """The caller stopped waiting (an interrupt): never strand the role, its drafts, or
        the callers of its batch still to be woken."""
        with self._lock:
            if request in self._queue:
                self._queue.remove(request)
                if request.wake.is_set() and not request.finished:
                    self._pass_on()
                return
            if not request.finished:
                request.abandoned = True  # its batch, being written, will not wait for it
                return
        # Its batch is written: wake the next of it in its stead. Waking one more than the
        # chain needs (it had already woken the next) only wakes a finished caller sooner.
        _wake_next(request.following)

    def _commit(self, batch: list[_Request], own: _Request) -> None:
        drafts = [draft for request in batch for draft in request.drafts]
        try:
            entries = self._write(drafts)
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
        with self._lock:
            following = deque(r for r in batch if r is not own and not r.abandoned)
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
