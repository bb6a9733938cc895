"""The Evidence Ledger (SPEC §7): append evidence, prove it, sign tree heads, query it.

``Ledger`` wraps a backend. It stamps each entry with the clock's wall time, withholds the
values of redacted keys from its body, and answers roots and proofs from its ``LedgerTree``.
Appends are thread-safe and durable on return; ``aappend`` takes the route an event loop's
appends take, an ``AppendQueue``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Self

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import LedgerEntryError, LedgerError, WrongTypeError
from assay.ledger.append_queue import AppendQueue
from assay.ledger.backends.protocol import BATCH, LedgerBackend
from assay.ledger.checkpoint import Checkpoint, SigningKey
from assay.ledger.entry import Entry, EntryDraft, draft_now
from assay.ledger.lease import Closing
from assay.ledger.proof import ConsistencyProof, InclusionProof, TreeHead
from assay.ledger.soundness import sound_head
from assay.ledger.tree import LedgerTree
from assay.ledger.verification import LedgerReport, Progress, PublicKeys, verify_ledger
from assay.redaction import REDACTED, Redaction


class Ledger:
    """An append-only, hash-linked, Merkle-proved record of evidence on ``backend``."""

    def __init__(
        self,
        backend: LedgerBackend,
        *,
        redaction: Redaction | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._backend = backend
        self._redaction = redaction or Redaction.none()
        self._clock = clock
        self._tree = LedgerTree(backend)
        self._appends_lock = threading.Lock()
        self._appends: AppendQueue | None = None  # made by the first aappend

    @property
    def backend(self) -> LedgerBackend:
        """Where the entries are stored."""
        return self._backend

    @property
    def url(self) -> str:
        """The backend's URL, any password hidden."""
        return self._backend.url

    def draft(
        self,
        kind: str,
        body: Any,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
    ) -> EntryDraft:
        """The entry ``append`` would store, redacted and stamped, before it has a place."""
        return draft_now(
            self._clock,
            kind,
            redact_body(body, self._redaction),
            session=session,
            run=run,
            transition=transition,
        )

    def append(
        self,
        kind: str,
        body: Any,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
    ) -> Entry:
        """Store one entry and return it once durable; ``LedgerEntryError`` if malformed."""
        draft = self.draft(kind, body, session=session, transition=transition, run=run)
        (entry,) = self._backend.append([draft])
        self._tree.absorb(entry)
        return entry

    async def aappend(
        self,
        kind: str,
        body: Any,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
    ) -> Entry:
        """``append`` for an event loop: the entry is queued on the ledger's ``AppendQueue``
        and returned once durable, stored in order with the other callers' entries in one
        commit. ``LedgerEntryError`` if malformed, before anything is queued; a store that
        fails fails every ``aappend`` waiting on it, and the next starts a new queue."""
        draft = self.draft(kind, body, session=session, transition=transition, run=run)
        return await self._append_queue().stored(draft)

    def store(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        """Store ``draft``s in order as one durable commit; answers them as entries."""
        entries = self._backend.append(list(drafts))
        for entry in entries:
            self._tree.absorb(entry)
        return entries

    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        """Store the settlements of ``closings`` that host ``by`` may make, atomically with
        every other append (``LedgerBackend.close_fires``); answers the entries stored."""
        entries = self._backend.close_fires(closings, by=by, now=now)
        for entry in entries:
            self._tree.absorb(entry)
        return entries

    def refresh(self) -> TreeHead:
        """Take in entries other writers (other processes) stored; return the tree head.

        The first call (or the first root or proof) builds the tree from every stored entry.
        """
        return self._tree.refresh()

    @property
    def size(self) -> int:
        """How many entries the tree holds (``refresh`` takes in other writers' entries).
        ``backend.size()`` counts the stored entries without building the tree."""
        return self._tree.size

    def tree_head(self) -> TreeHead:
        """The current size and Merkle root, after taking in other writers' entries."""
        return self.refresh()

    def root(self, size: int | None = None) -> str:
        """The Merkle root (hex) of the first ``size`` entries, all of them by default."""
        _whole("size", size, optional=True)
        return self._tree.root(size)

    def prove(self, seq: int, size: int | None = None) -> InclusionProof:
        """Proof that entry ``seq`` is in the tree of ``size`` entries (the current tree)."""
        _whole("seq", seq)
        _whole("size", size, optional=True)
        return self._tree.prove(seq, size)

    def consistency(self, old_size: int, new_size: int | None = None) -> ConsistencyProof:
        """Proof that the tree of ``old_size`` entries is a prefix of that of ``new_size``."""
        _whole("old_size", old_size)
        _whole("new_size", new_size, optional=True)
        return self._tree.consistency(old_size, new_size)

    def leaf_hashes(self, start: int, stop: int) -> list[bytes]:
        """The Merkle leaf hashes the tree holds for the entries with ``start <= seq < stop``:
        what its roots and proofs are made of, taken in when each entry was stored or read."""
        _whole("start", start)
        _whole("stop", stop)
        return self._tree.leaf_hashes(start, stop)

    def checkpoint(self, signing_key: SigningKey) -> Checkpoint:
        """Check the ledger, then sign its tree head with ``signing_key``, store the signed
        head and return it.

        ``LedgerIntegrityError`` names the first thing wrong, and nothing is signed. Each
        stored checkpoint must be extended by the head; past the latest checkpoint this key
        signed (whose signature must hold), each entry must parse strictly, chain and be the
        tree's leaf. Before this key has signed one, the whole ledger is verified. See
        ``soundness`` for what that costs.
        """
        if not isinstance(signing_key, SigningKey):
            raise WrongTypeError(
                f"signing_key must be a SigningKey (SigningKey.from_file(path), for one), not "
                f"{type(signing_key).__name__}",
                parameter="signing_key",
            )
        head = sound_head(self._tree, signing_key)
        checkpoint = signing_key.sign(head.size, head.root, self._clock.wall())
        self._backend.add_checkpoint(checkpoint)
        return checkpoint

    def checkpoints(self) -> list[Checkpoint]:
        """The stored checkpoints, oldest first."""
        return self._backend.checkpoints()

    def verify(
        self,
        public_key: PublicKeys | None = None,
        *,
        trusted: TreeHead | None = None,
        progress: Progress | None = None,
    ) -> LedgerReport:
        """Re-check every stored entry and checkpoint (each against the key its key id names,
        when several keys are given), and that the entries extend the ``trusted`` head if one
        is given (see ``verify_ledger``)."""
        return verify_ledger(self._backend, public_key, trusted=trusted, progress=progress)

    def read(self, start: int, stop: int) -> list[Entry]:
        """The entries with ``start <= seq < stop``."""
        _whole("start", start)
        _whole("stop", stop)
        return self._backend.read(start, stop)

    def entry(self, seq: int) -> Entry | None:
        """Entry ``seq``, or ``None`` when there is none."""
        _whole("seq", seq)
        found = self._backend.read(seq, seq + 1)
        return found[0] if found else None

    def iterate(self, start: int = 1) -> Iterator[Entry]:
        """Every entry from ``start`` on, in order."""
        _whole("start", start)
        return self._backend.iterate(start)

    def head(self) -> Entry | None:
        """The last stored entry, or ``None`` when there is none."""
        return self._backend.head()

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
        """The entries matching every criterion given, in seq order."""
        _whole("after", after)
        _whole("limit", limit, optional=True)
        return self._backend.query(
            session=session,
            transition=transition,
            run=run,
            kind=kind,
            since=since,
            until=until,
            after=after,
            limit=limit,
        )

    async def follow(self, after: int = 0, *, interval: float = 0.5) -> AsyncIterator[Entry]:
        """Yield every entry after seq ``after``, then each new one as it is stored, forever.

        Polls the backend every ``interval`` seconds of the ledger's clock while idle.
        """
        while True:
            batch = await asyncio.to_thread(self._backend.read, after + 1, after + 1 + BATCH)
            for entry in batch:
                yield entry
            if batch:
                after = batch[-1].seq
            else:
                await self._clock.sleep(interval)

    def close(self) -> None:
        """Store what ``aappend`` queued, then close the backend."""
        with self._appends_lock:
            appends, self._appends = self._appends, None
        if appends is not None:
            appends.close()
        self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.url!r}, size={self.size})"

    def _append_queue(self) -> AppendQueue:
        """The queue ``aappend`` stores through: made when first needed, and again once a
        failed store stopped it."""
        with self._appends_lock:
            appends = self._appends
            if appends is None or appends.failure is not None:
                appends = self._appends = AppendQueue(
                    self.store, inline=not self._backend.appends_wait, stopped=_as_raised
                )
            return appends


def _as_raised(error: Exception) -> LedgerError:
    """A failed store's ``error`` as ``aappend`` raises it: as ``append`` would have."""
    if isinstance(error, LedgerError):
        return error
    failure = LedgerError(f"{type(error).__name__}: {error}")
    failure.__cause__ = error
    return failure


def _whole(name: str, value: object, *, optional: bool = False) -> None:
    """``WrongTypeError`` naming the parameter ``name`` unless ``value`` is a whole number
    (or, when ``optional``, None)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        kind = "a whole number or None" if optional else "a whole number"
        raise WrongTypeError(f"{name} must be {kind}, not {type(value).__name__}", parameter=name)


def redact_body(body: Any, redaction: Redaction, prefix: tuple[str, ...] = ()) -> Any:
    """A copy of ``body`` with the value of every key ``redaction`` covers as ``[redacted]``.

    Array items are addressed by their index, so ``items.*.card`` covers each item's card.
    """
    if not redaction.patterns:
        return body
    try:
        return _redact(body, redaction, prefix)
    except RecursionError:
        raise LedgerEntryError("body nests too deeply to store", field="body") from None


def _redact(value: Any, redaction: Redaction, prefix: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if redaction.covers(path := (*prefix, str(key)))
            else _redact(item, redaction, path)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [
            REDACTED
            if redaction.covers(path := (*prefix, str(index)))
            else _redact(item, redaction, path)
            for index, item in enumerate(value)
        ]
    return value
