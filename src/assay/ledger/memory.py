"""The in-memory backend: a list behind a lock, for tests and throwaway ledgers."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence

from assay.errors import LedgerError
from assay.ledger.backend import (
    CHECKPOINT_FIELDS,
    EntryFilter,
    LedgerBackend,
    StoredCheckpoint,
    StoredRow,
)
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import GENESIS_HASH, Entry, EntryDraft, seal_all


class MemoryBackend(LedgerBackend):
    """Entries in a Python list; gone when the process ends, so "durable" means stored."""

    appends_wait = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[Entry] = []
        self._checkpoints: list[Checkpoint] = []
        self._closed = False
        self._listeners: list[Callable[[list[Entry]], None]] = []

    @property
    def url(self) -> str:
        return "memory:"

    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        with self._lock:
            self._check_open()
            head = self._entries[-1].hash if self._entries else GENESIS_HASH
            entries = seal_all(list(drafts), len(self._entries), head)
            self._entries.extend(entries)
            listeners = list(self._listeners)
        # Outside the lock (a listener may read this backend); stored entries stay stored
        # whatever a listener does.
        for listener in listeners:
            with contextlib.suppress(Exception):
                listener(entries)
        return entries

    def add_commit_listener(self, listener: Callable[[list[Entry]], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def read(self, start: int, stop: int) -> list[Entry]:
        with self._lock:
            return self._entries[max(start, 1) - 1 : max(stop, 1) - 1]

    def size(self) -> int:
        with self._lock:
            return len(self._entries)

    def select(self, where: EntryFilter) -> list[Entry]:
        found: list[Entry] = []
        if where.limit == 0:
            return found
        with self._lock:
            for entry in self._entries[max(where.after, 0) :]:
                if where.matches(entry):
                    found.append(entry)
                    if len(found) == where.limit:
                        break
        return found

    def stored_rows(self) -> Iterator[StoredRow]:
        with self._lock:
            entries = list(self._entries)
        for entry in entries:
            yield StoredRow(entry.seq, entry.canonical, {})

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._lock:
            self._check_open()
            self._checkpoints.append(checkpoint)

    def stored_checkpoints(self) -> list[StoredCheckpoint]:
        with self._lock:
            return [
                StoredCheckpoint(number, {name: getattr(cp, name) for name in CHECKPOINT_FIELDS})
                for number, cp in enumerate(self._checkpoints, start=1)
            ]

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError("the ledger memory: is closed; open a new one", url="memory:")
