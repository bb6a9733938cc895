"""Where a ledger keeps its entries: the small interface every storage backend implements.

A backend stores sealed entries in one gapless order and never changes or drops one: it
assigns ``seq`` and ``prev_hash`` and computes the hash inside ``append``, atomically with
storing, and returns only once the entries are durable. ``read``/``iterate``/``query`` give
entries trusting them; ``stored_rows``/``stored_checkpoints`` give rows exactly as stored, for
``verify_ledger``. Beside the entries it keeps the hosts' leases (``assay.ledger.lease``).
``tests/test_ledger_conformance.py`` runs against every backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from types import TracebackType
from typing import Final, Self

from assay.ledger.backends.query import EntryFilter
from assay.ledger.backends.stored import StoredCheckpoint, StoredRow
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import Entry, EntryDraft, entry_from_canonical
from assay.ledger.lease import Closing, Lease

BATCH: Final = 1000
"""How many rows a backend reads per round trip when iterating."""


class LedgerBackend(ABC):
    """Storage for one ledger. Thread-safe; ``close`` releases it (also on ``with`` exit)."""

    appends_wait: bool = True
    """Whether ``append`` waits on a disk or a server (a sync, a round trip). Where it does
    not (memory), an event loop may append itself instead of handing entries to a thread."""

    @property
    @abstractmethod
    def url(self) -> str:
        """Where the ledger lives, as an ``open_ledger`` URL, any password hidden."""

    @abstractmethod
    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        """Seal and store ``drafts`` consecutively, in order; return them once durable."""

    @abstractmethod
    def read_canonical(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        """``(seq, canonical JSON)`` of the entries with ``start <= seq < stop``, in order,
        as stored: what ``read`` parses, and all a Merkle leaf covers."""

    def read(self, start: int, stop: int) -> list[Entry]:
        """The entries with ``start <= seq < stop``, in order."""
        return [entry_from_canonical(text, seq) for seq, text in self.read_canonical(start, stop)]

    @abstractmethod
    def size(self) -> int:
        """How many entries there are: the seq of the last one, 0 when empty."""

    @abstractmethod
    def select(self, where: EntryFilter) -> list[Entry]:
        """The entries ``where`` matches, in seq order, at most ``where.limit`` of them."""

    @abstractmethod
    def stored_rows(self) -> Iterator[StoredRow]:
        """Every stored entry row as it is, in the store's seq order, trusting nothing."""

    @abstractmethod
    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Store a signed tree head, durably."""

    @abstractmethod
    def stored_checkpoints(self) -> list[StoredCheckpoint]:
        """Every stored checkpoint as it is, in the order they were added."""

    @abstractmethod
    def open_fires(self) -> list[Entry]:
        """The fires left open: for each (session, transition), its latest fire entry when
        no settlement or refusal of the same pair follows it; in seq order. One pass over
        the fires, settlements and refusals, reading the bodies of the open fires only."""

    @abstractmethod
    def take_lease(self, owner: str, duration_s: float, *, now: datetime | None = None) -> Lease:
        """Hold ``owner``'s lease from now until ``duration_s`` later, making it if there is
        none; durable on return. ``now`` stands in for the store's clock (see
        ``assay.ledger.lease``)."""

    @abstractmethod
    def renew_lease(
        self, owner: str, duration_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        """``take_lease`` for a lease ``owner`` still holds, expired or not; ``None``, and
        nothing made, when it holds none: it released it, or another host closed its fires
        and dropped it (``close_fires``)."""

    @abstractmethod
    def release_lease(self, owner: str) -> None:
        """Drop ``owner``'s lease, if it holds one."""

    @abstractmethod
    def leases(self, *, now: datetime | None = None) -> list[Lease]:
        """Every lease held, by owner, each saying whether it is live now."""

    @abstractmethod
    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        """Append the settlement of each closing host ``by`` may make (``closeable``: its
        fire still open, its owner's lease expired or gone), in order, as one durable
        commit, and drop the leases of the owners whose fires it closed; answer the entries
        stored. Checked and done under the lock every append takes, so that two hosts
        closing one fire store one settlement, and none for an owner that renewed first."""

    @abstractmethod
    def close(self) -> None:
        """Wait for appends in progress, then release connections; safe to call twice."""

    def add_commit_listener(self, listener: Callable[[list[Entry]], None]) -> None:
        """Ask to be handed every batch of entries this process commits, in order, before
        their appenders are answered; a backend that cannot may ignore it (the default)."""
        del listener

    def iterate(self, start: int = 1) -> Iterator[Entry]:
        """Every entry from ``start`` on, in order, read a batch at a time."""
        while True:
            batch = self.read(start, start + BATCH)
            yield from batch
            if len(batch) < BATCH:
                return
            start += BATCH

    def query(
        self,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
        kind: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[Entry]:
        """The entries matching every criterion given, in seq order (see ``EntryFilter``)."""
        return self.select(
            EntryFilter.of(
                session=session,
                transition=transition,
                run=run,
                kind=kind,
                since=since,
                until=until,
                after=after,
                limit=limit,
            )
        )

    def head(self) -> Entry | None:
        """The last entry, or ``None`` when the ledger is empty."""
        size = self.size()
        if size == 0:
            return None
        entries = self.read(size, size + 1)
        return entries[0] if entries else None

    def checkpoints(self) -> list[Checkpoint]:
        """The stored checkpoints, validated; ``CheckpointError`` if one is malformed."""
        return [stored.checkpoint() for stored in self.stored_checkpoints()]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
