"""The Merkle tree over a ledger's entries, held in memory so roots and proofs cost no reads.

``LedgerTree`` is built from the stored entries the first time it is needed (a root, a proof,
``refresh``), not when it is made: reading one entry, a query or an export never reads and
hashes the whole ledger for it. Once built, it takes in each batch this process commits and
reads back only what other writers stored.
"""

from __future__ import annotations

import threading

from assay.errors import LedgerEntryError, LedgerIntegrityError
from assay.ledger.backends.protocol import BATCH, LedgerBackend
from assay.ledger.entry import VERIFY_THE_LEDGER, Entry
from assay.ledger.merkle import MerkleTree, leaf_hash
from assay.ledger.proof import ConsistencyProof, InclusionProof, TreeHead


class LedgerTree:
    """The Merkle tree over every entry ``backend`` stores; thread-safe.

    Sizes and seqs are taken as given: ``Ledger`` checks that they are whole numbers.
    """

    def __init__(self, backend: LedgerBackend) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._merkle = MerkleTree()
        # Whether the tree has taken in the stored entries; until then appends leave it be.
        self._built = False
        # Entries appended here whose predecessors are not in the tree yet.
        self._arrived: dict[int, Entry] = {}
        # Take in each committed batch whole, in the writer's thread, so that appenders
        # answered together need not read back each other's entries.
        backend.add_commit_listener(self._take_in)

    @property
    def backend(self) -> LedgerBackend:
        """Where the entries the tree covers are stored."""
        return self._backend

    def absorb(self, entry: Entry) -> None:
        """Take in ``entry``, just stored here, once the entries before it are in the tree."""
        if entry.seq <= self._merkle.size:
            return  # taken in with its batch, as it mostly is: no need to wait for the lock
        with self._lock:
            if self._built and entry.seq > self._merkle.size:
                self._arrived[entry.seq] = entry
                self._grow(entry.seq)

    def refresh(self) -> TreeHead:
        """Take in entries other writers (other processes) stored; return the tree head.

        The first call (or the first root or proof) builds the tree from every stored entry.
        """
        size = self._backend.size()
        with self._lock:
            self._built = True
            self._grow(size)
            return TreeHead(self._merkle.size, self._merkle.root().hex())

    @property
    def size(self) -> int:
        """How many entries the tree holds (``refresh`` takes in other writers' entries)."""
        with self._lock:
            self._reach(None)
            return self._merkle.size

    def root(self, size: int | None = None) -> str:
        """The Merkle root (hex) of the first ``size`` entries, all of them by default."""
        with self._lock:
            self._reach(size)
            return self._merkle.root(size).hex()

    def prove(self, seq: int, size: int | None = None) -> InclusionProof:
        """Proof that entry ``seq`` is in the tree of ``size`` entries (the current tree)."""
        with self._lock:
            self._reach(max(seq, size or 0))
            merkle = self._merkle
            size = merkle.size if size is None else size
            if not 1 <= seq <= size:
                raise LedgerEntryError(
                    f"seq must be between 1 and the tree's size ({size}), not {seq}", field="seq"
                )
            path = merkle.inclusion_proof(seq - 1, size)
            return InclusionProof(
                seq=seq,
                size=size,
                leaf_hash=merkle.leaf(seq - 1).hex(),
                root=merkle.root(size).hex(),
                path=tuple(element.hex() for element in path),
            )

    def consistency(self, old_size: int, new_size: int | None = None) -> ConsistencyProof:
        """Proof that the tree of ``old_size`` entries is a prefix of that of ``new_size``."""
        with self._lock:
            self._reach(new_size)
            merkle = self._merkle
            new_size = merkle.size if new_size is None else new_size
            path = merkle.consistency_proof(old_size, new_size)
            return ConsistencyProof(
                old_size=old_size,
                old_root=merkle.root(old_size).hex(),
                new_size=new_size,
                new_root=merkle.root(new_size).hex(),
                path=tuple(element.hex() for element in path),
            )

    def leaf_hashes(self, start: int, stop: int) -> list[bytes]:
        """The leaf hashes the tree holds for the entries with ``start <= seq < stop``: what
        its roots and proofs are made of, taken in when each entry was stored or read."""
        with self._lock:
            self._reach(stop - 1)
            last = min(stop - 1, self._merkle.size)
            return [self._merkle.leaf(seq - 1) for seq in range(max(start, 1), last + 1)]

    def _take_in(self, entries: list[Entry]) -> None:
        """Add a committed batch to the tree as far as it follows on without a gap; nothing
        before the tree is built, which reads the batch back with every other entry."""
        with self._lock:
            if not self._built:
                return
            merkle, arrived = self._merkle, self._arrived
            if not arrived and entries and entries[0].seq == merkle.size + 1:
                # The batch follows on: the usual case, in one process.
                merkle.extend([entry.leaf_hash for entry in entries])
                return
            for entry in entries:
                if entry.seq > merkle.size:
                    arrived[entry.seq] = entry
            while (following := arrived.pop(merkle.size + 1, None)) is not None:
                merkle.append(following.leaf_hash)

    def _reach(self, size: int | None) -> None:
        """Take in stored entries up to ``size`` if the tree is smaller, and every stored
        entry if the tree is not built yet (lock held)."""
        if not self._built:
            self._built = True
            self._grow(self._backend.size())
        if size is not None and size > self._merkle.size:
            self._grow(min(size, self._backend.size()))

    def _grow(self, size: int) -> None:
        """Add leaves up to ``size``: from entries appended here, else read back (lock held).

        An entry missing here was stored by another process, or by a thread of this one that
        has not taken its entry in yet; either way it is durable, so it can be read.
        """
        merkle = self._merkle
        while merkle.size < size:
            following = merkle.size + 1
            entry = self._arrived.pop(following, None)
            if entry is not None:
                merkle.append(entry.leaf_hash)
                continue
            stop = min((seq for seq in self._arrived if seq > following), default=size + 1)
            # The leaves only: no need to parse what is stored to hash it.
            batch = self._backend.read_canonical(following, min(stop, following + BATCH))
            if not batch or batch[0][0] != following:
                raise LedgerIntegrityError(
                    f"entry {following} is missing from {self._backend.url}; {VERIFY_THE_LEDGER}",
                    seq=following,
                    reason="missing",
                    field="seq",
                )
            following_on: list[bytes] = []
            for seq, canonical in batch:
                if seq != following + len(following_on):
                    break
                following_on.append(leaf_hash(canonical))
            merkle.extend(following_on)
        for seq in [seq for seq in self._arrived if seq <= merkle.size]:
            del self._arrived[seq]
