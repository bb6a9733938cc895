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
from datetime import datetime, timedelta

from assay.errors import LedgerError
from assay.ledger.backends.protocol import LedgerBackend
from assay.ledger.backends.query import EntryFilter, query_fields
from assay.ledger.backends.stored import CHECKPOINT_FIELDS, StoredCheckpoint, StoredRow
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import GENESIS_HASH, Entry, EntryDraft, entry_from_canonical, seal_all
from assay.ledger.lease import (
    ENDINGS,
    Closing,
    Lease,
    check_lease,
    closeable,
    local_now,
    taken_over,
)

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
        self._leases: dict[str, tuple[datetime, datetime]] = {}  # owner: renewed, expires

    @property
    def url(self) -> str:
        return "memory:"

    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        with self._lock:
            self._check_open()
            entries = self._store(list(drafts))
            listeners = list(self._listeners)
        self._tell(listeners, entries)
        return entries

    def _store(self, drafts: list[EntryDraft]) -> list[Entry]:
        """Seal and keep ``drafts`` after the head (lock held)."""
        entries = seal_all(drafts, len(self._entries), self._head_hash)
        self._entries.extend(map(_kept, entries))
        if entries:
            self._head_hash = entries[-1].hash
        return entries

    @staticmethod
    def _tell(listeners: list[Callable[[list[Entry]], None]], entries: list[Entry]) -> None:
        # Outside the lock (a listener may read this backend); stored entries stay stored
        # whatever a listener does.
        for listener in listeners:
            with contextlib.suppress(Exception):
                listener(entries)

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

    def open_fires(self) -> list[Entry]:
        with self._lock:
            rows = list(self._entries)
        fired: dict[tuple[str | None, str], int] = {}  # each pair's latest fire, by index
        ended: dict[tuple[str | None, str], int] = {}  # each pair's latest ending, by seq
        for index, (seq, _, kind, session, _, transition, _) in enumerate(rows):
            if transition is None:
                continue
            if kind == "fire":
                fired[session, transition] = index
            elif kind in ENDINGS:
                ended[session, transition] = seq
        left = sorted(i for pair, i in fired.items() if rows[i][0] > ended.get(pair, 0))
        return [entry_from_canonical(rows[i][-1], rows[i][0]) for i in left]

    def take_lease(self, owner: str, duration_s: float, *, now: datetime | None = None) -> Lease:
        check_lease(owner, duration_s)
        moment = local_now(now)
        with self._lock:
            self._check_open()
            return self._hold(owner, moment, duration_s)

    def renew_lease(
        self, owner: str, duration_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        check_lease(owner, duration_s)
        moment = local_now(now)
        with self._lock:
            self._check_open()
            if owner not in self._leases:
                return None
            return self._hold(owner, moment, duration_s)

    def _hold(self, owner: str, moment: datetime, duration_s: float) -> Lease:
        expires = moment + timedelta(seconds=duration_s)
        self._leases[owner] = (moment, expires)
        return Lease(owner, moment, expires, live=True)

    def release_lease(self, owner: str) -> None:
        with self._lock:
            self._check_open()
            self._leases.pop(owner, None)

    def leases(self, *, now: datetime | None = None) -> list[Lease]:
        moment = local_now(now)
        with self._lock:
            return self._leases_at(moment)

    def _leases_at(self, moment: datetime) -> list[Lease]:
        return [
            Lease(owner, renewed, expires, live=expires > moment)
            for owner, (renewed, expires) in sorted(self._leases.items())
        ]

    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        moment = local_now(now)
        with self._lock:
            self._check_open()
            leases = {lease.owner: lease for lease in self._leases_at(moment)}
            chosen = [
                closing
                for closing in closings
                if closeable(closing, ended=self._ended(closing), leases=leases, by=by)
            ]
            entries = self._store([closing.settlement for closing in chosen]) if chosen else []
            for owner in taken_over(chosen, leases):
                del self._leases[owner]
            listeners = list(self._listeners)
        if entries:
            self._tell(listeners, entries)
        return entries

    def _ended(self, closing: Closing) -> bool:
        """Whether a settlement or refusal of ``closing``'s pair follows its fire (lock held)."""
        session, transition = closing.settlement.session, closing.settlement.transition
        return any(
            row[2] in ENDINGS and row[3] == session and row[5] == transition
            for row in self._entries[max(closing.fire_seq, 0) :]
        )

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError("the ledger memory: is closed; open a new one", url="memory:")
