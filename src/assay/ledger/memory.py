"""The in-memory backend: a list behind a lock, for tests and throwaway ledgers.

An entry is kept as a plain tuple of its seq, the fields queries filter on and its canonical
JSON, not as the ``Entry`` it was appended as: the garbage collector stops tracking a tuple
that holds only strings, bytes, numbers and ``None``, where it would walk every dict and list
of every body kept (a full collection with 200,000 entries kept took 1.1 s). Reads parse the
canonical JSON again, as the database backends do.
"""

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
    query_fields,
)
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import GENESIS_HASH, Entry, EntryDraft, entry_from_canonical, seal_all

_Kept = tuple[int, str, str, str | None, str | None, str | None, bytes]
"""An entry as kept: its ``QueryFields``, then its canonical JSON."""


def _kept(entry: Entry) -> _Kept:
    return (*query_fields(entry), entry.canonical)


class MemoryBackend(LedgerBackend):
    """Entries in a Python list; gone when the process ends, so "durable" means stored."""

    appends_wait = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[_Kept] = []
        self._head_hash = GENESIS_HASH
        self._checkpoints: list[Checkpoint] = []
        self._closed = False
        self._listeners: list[Callable[[list[Entry]], None]] = []

    @property
    def url(self) -> str:
        return "memory:"

    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        with self._lock:
            self._check_open()
            entries = seal_all(list(drafts), len(self._entries), self._head_hash)
            self._entries.extend(map(_kept, entries))
            if entries:
                self._head_hash = entries[-1].hash
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

    def read_canonical(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        with self._lock:
            kept = self._entries[max(start, 1) - 1 : max(stop, 1) - 1]
        return [(row[0], row[-1]) for row in kept]

    def size(self) -> int:
        with self._lock:
            return len(self._entries)

    def select(self, where: EntryFilter) -> list[Entry]:
        found: list[_Kept] = []
        if where.limit == 0:
            return []
        with self._lock:
            for row in self._entries[max(where.after, 0) :]:
                if where.matches(row[:-1]):
                    found.append(row)
                    if len(found) == where.limit:
                        break
        return [entry_from_canonical(row[-1], row[0]) for row in found]

    def stored_rows(self) -> Iterator[StoredRow]:
        with self._lock:
            entries = list(self._entries)
        for row in entries:
            yield StoredRow(row[0], row[-1], {})

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
