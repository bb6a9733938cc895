"""The ledger's Merkle tree, in the shape of RFC 6962 / RFC 9162 §2.1, with SHA-256.

A leaf hashes as ``SHA-256(0x00 || data)`` and an interior node as
``SHA-256(0x01 || left || right)``; the distinct prefixes keep a leaf from passing for a node.
``MerkleTree`` makes roots, inclusion proofs (§2.1.3) and consistency proofs (§2.1.4), each
in at most ``log2 n`` hashes; ``verify_inclusion`` and ``verify_consistency`` check them
without trusting any tree, step by step as §2.1.3.2 and §2.1.4.2 have it, and raise
``ProofError`` saying what did not hold.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence

from assay.errors import ProofError
from assay.ledger.compiled import node_hashes

HASH_SIZE = 32
"""Bytes in a SHA-256 digest: every leaf hash, node hash, root and proof element."""

EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The root of the tree with no leaves (RFC 9162 §2.1.1)."""

_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"


def leaf_hash(data: bytes) -> bytes:
    """The hash of one leaf: ``SHA-256(0x00 || data)``."""
    return hashlib.sha256(_LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an interior node: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


class MerkleTree:
    """An append-only Merkle tree over leaf hashes, answering for its current and past sizes.

    ``MerkleTree(hashes)`` rebuilds a tree from stored leaf hashes in order, as the ledger does
    when it opens.
    """

    __slots__ = ("_levels",)

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        # _levels[k] holds the roots of the complete aligned blocks of 2**k leaves, back to back.
        self._levels: list[bytearray] = [bytearray()]
        self.extend(leaf_hashes)

    @property
    def size(self) -> int:
        """The number of leaves."""
        return len(self._levels[0]) // HASH_SIZE

    def append(self, leaf_hash: bytes) -> int:
        """Add a leaf by its hash (see ``leaf_hash``) and return its 0-based index."""
        if len(leaf_hash) != HASH_SIZE:
            raise ProofError(
                f"leaf_hash must be a {HASH_SIZE}-byte SHA-256 digest, not {len(leaf_hash)} bytes",
                parameter="leaf_hash",
            )
        levels = self._levels
        index = self.size
        levels[0] += leaf_hash
        node = bytes(leaf_hash)
        position, level = index, 0
        # While the new node is a right child, its parent's block has just become complete.
        while position & 1:
            left = _slot(levels[level], position - 1)
            node = node_hash(left, node)
            level += 1
            position >>= 1
            if level == len(levels):
                levels.append(bytearray())
            levels[level] += node
        return index

    def extend(self, leaf_hashes: Iterable[bytes]) -> None:
        """``append`` each of ``leaf_hashes`` in order, a level at a time: the same tree, with
        the same hashes, for a fraction of the calls (each level's new nodes are hashed by
        ``compiled.node_hashes``, in C with OpenSSL where it was built; ``append`` and the
        proof verifiers use hashlib)."""
        added = list(leaf_hashes)
        joined = b"".join(added)
        if len(joined) != HASH_SIZE * len(added):
            for leaf_hash in added:
                self.append(leaf_hash)  # raises for the first that is not a digest
            return
        levels = self._levels
        levels[0] += joined
        pair = 2 * HASH_SIZE
        for level in itertools.count():
            below = levels[level]
            complete = len(below) // pair  # blocks of the level above that are full now
            if level + 1 == len(levels):
                if not complete:
                    return
                levels.append(bytearray())
            above = levels[level + 1]
            stored = len(above) // HASH_SIZE
            if stored == complete:
                return  # nothing new here, so nothing new above
            above += node_hashes(below, stored * pair, complete * pair)

    def leaf(self, index: int) -> bytes:
        """The hash of leaf ``index``."""
        _check_index(index, self.size)
        return _slot(self._levels[0], index)

    def root(self, size: int | None = None) -> bytes:
        """The root of the first ``size`` leaves (all of them by default): MTH(D[0:size])."""
        size = self._check_size(size, "size")
        return self._subtree_root(0, size) if size else EMPTY_ROOT

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        """The audit path of leaf ``index`` in the tree of the first ``size`` leaves.

        RFC 9162 §2.1.3.1, PATH(index, D[0:size]): sibling hashes from the leaf up to the root.
        """
        size = self._check_size(size, "size")
        _check_index(index, size)
        siblings: list[bytes] = []
        start, end = 0, size
        while end - start > 1:
            middle = start + _largest_power_of_two_below(end - start)
            if index < middle:
                siblings.append(self._subtree_root(middle, end))
                end = middle
            else:
                siblings.append(self._subtree_root(start, middle))
                start = middle
        siblings.reverse()
        return siblings

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> list[bytes]:
        """The proof that the first ``old_size`` leaves are a prefix of the first ``new_size``.

        RFC 9162 §2.1.4.1, PROOF(old_size, D[0:new_size]); empty when the sizes are equal. The
        RFC defines no proof from the empty tree (every tree extends it), so ``old_size`` 0 is
        refused unless ``new_size`` is 0 too.
        """
        new_size = self._check_size(new_size, "new_size")
        old_size = whole_number(old_size, "old_size")
        if not 0 <= old_size <= new_size:
            raise ProofError(
                f"old_size must be between 0 and new_size ({new_size}), not {old_size}",
                parameter="old_size",
            )
        if old_size == new_size:
            return []
        if old_size == 0:
            raise ProofError(_FROM_EMPTY, parameter="old_size")
        # SUBPROOF(m, D[start:end], whole): descend towards the subtree ending at old_size.
        proof: list[bytes] = []
        start, end, whole = 0, new_size, True
        while old_size != end:
            middle = start + _largest_power_of_two_below(end - start)
            if old_size <= middle:
                proof.append(self._subtree_root(middle, end))
                end = middle
            else:
                proof.append(self._subtree_root(start, middle))
                start, whole = middle, False
        if not whole:
            proof.append(self._subtree_root(start, end))
        proof.reverse()
        return proof

    def _check_size(self, size: int | None, parameter: str) -> int:
        if size is None:
            return self.size
        size = whole_number(size, parameter)
        if not 0 <= size <= self.size:
            raise ProofError(
                f"{parameter} must be between 0 and the tree's size ({self.size}), not {size}",
                parameter=parameter,
            )
        return size

    def _subtree_root(self, start: int, end: int) -> bytes:
        """MTH(D[start:end]) for a non-empty range that RFC 9162's recursion can visit.

        Such a range starts on a multiple of the power of two at or above its length, so it
        splits, largest first, into stored complete blocks.
        """
        blocks: list[bytes] = []
        position = start
        while position < end:
            level = (end - position).bit_length() - 1
            blocks.append(_slot(self._levels[level], position >> level))
            position += 1 << level
        root = blocks.pop()
        while blocks:
            root = node_hash(blocks.pop(), root)
        return root


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that ``leaf_hash`` is leaf ``index`` of the tree of ``size`` leaves with ``root``.

    RFC 9162 §2.1.3.2. Returns ``None`` when the proof holds; raises ``ProofError`` otherwise,
    also for an argument of the wrong type.
    """
    index, size = whole_number(index, "index"), whole_number(size, "size")
    leaf_hash, root = _digest_bytes(leaf_hash, "leaf_hash"), _digest_bytes(root, "root")
    proof = _hashes(proof)
    if not 0 <= index < size:
        raise ProofError(
            f"index {index} is not a leaf of a tree of size {size}; expected 0 <= index < size",
            parameter="index",
        )
    if len(leaf_hash) != HASH_SIZE:
        raise ProofError(
            f"leaf_hash must be a {HASH_SIZE}-byte SHA-256 digest, not {len(leaf_hash)} bytes",
            parameter="leaf_hash",
        )
    expected = _inclusion_proof_length(index, size)
    _check_proof_shape(proof, expected, f"an inclusion proof for leaf {index} of {size}")
    fn, sn = index, size - 1
    computed = leaf_hash
    for element in proof:
        if sn == 0:  # unreachable after the length check; kept as the RFC states it
            raise ProofError("the proof is longer than the path to the root", parameter="proof")
        if fn & 1 or fn == sn:
            computed = node_hash(element, computed)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            computed = node_hash(computed, element)
        fn >>= 1
        sn >>= 1
    if sn != 0:  # likewise unreachable after the length check
        raise ProofError("the proof ends before the root", parameter="proof")
    if computed != root:
        raise ProofError(
            f"the proof leads to root {computed.hex()}, not to the root given {root.hex()}",
            parameter="root",
        )


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree of ``old_size`` leaves with ``old_root`` is a prefix of the tree of
    ``new_size`` leaves with ``new_root``.

    RFC 9162 §2.1.4.2 for ``0 < old_size < new_size``; equal sizes need equal roots and an
    empty proof, and the empty tree has the root ``EMPTY_ROOT``. A proof from ``old_size`` 0
    to a larger tree is refused, as the RFC defines none. Raises ``ProofError`` on failure.

    With equal sizes the roots are compared, not read, so roots of any length pass when
    equal, as the vectors require (``sizes-are-equal-one-and-proof-is-empty``: two equal
    12-byte roots); ``ConsistencyProof.verify`` checks that each is a SHA-256 hash first.
    An argument of the wrong type is a ``ProofError`` too.
    """
    old_size, new_size = whole_number(old_size, "old_size"), whole_number(new_size, "new_size")
    old_root, new_root = _digest_bytes(old_root, "old_root"), _digest_bytes(new_root, "new_root")
    proof = _hashes(proof)
    if old_size < 0 or new_size < 0:
        raise ProofError(
            f"tree sizes cannot be negative: old_size {old_size}, new_size {new_size}",
            parameter="old_size" if old_size < 0 else "new_size",
        )
    if old_size > new_size:
        raise ProofError(
            f"old_size {old_size} is larger than new_size {new_size}; a tree only grows "
            f"(were the sizes swapped?)",
            parameter="old_size",
        )
    if old_size == new_size:
        if proof:
            raise ProofError(
                f"the sizes are equal ({old_size}), so the proof must be empty, "
                f"not {len(proof)} hashes",
                parameter="proof",
            )
        if old_size == 0 and old_root != EMPTY_ROOT:
            raise ProofError(
                f"a tree of size 0 has root {EMPTY_ROOT.hex()}, not {old_root.hex()}",
                parameter="old_root",
            )
        if old_root != new_root:
            raise ProofError(
                f"the sizes are equal ({old_size}) but the roots differ: "
                f"{old_root.hex()} and {new_root.hex()}",
                parameter="new_root",
            )
        return
    if old_size == 0:
        raise ProofError(_FROM_EMPTY, parameter="old_size")

    old_is_power_of_two = old_size & (old_size - 1) == 0
    expected = _consistency_proof_length(old_size, new_size)
    _check_proof_shape(proof, expected, f"a consistency proof from {old_size} to {new_size}")
    # Step 2: a power-of-two old tree is itself a node of the new one, so its root opens the path.
    path = [old_root, *proof] if old_is_power_of_two else list(proof)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    old_computed = new_computed = path[0]
    for element in path[1:]:
        if sn == 0:  # unreachable after the length check; kept as the RFC states it
            raise ProofError("the proof is longer than the path to the root", parameter="proof")
        if fn & 1 or fn == sn:
            old_computed = node_hash(element, old_computed)
            new_computed = node_hash(element, new_computed)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            new_computed = node_hash(new_computed, element)
        fn >>= 1
        sn >>= 1
    if sn != 0:  # likewise unreachable after the length check
        raise ProofError("the proof ends before the new root", parameter="proof")
    if old_computed != old_root:
        raise ProofError(
            f"the proof leads to old root {old_computed.hex()}, not to the old_root given "
            f"{old_root.hex()}",
            parameter="old_root",
        )
    if new_computed != new_root:
        raise ProofError(
            f"the proof leads to new root {new_computed.hex()}, not to the new_root given "
            f"{new_root.hex()}",
            parameter="new_root",
        )


def whole_number(value: object, parameter: str) -> int:
    """``value``, a size, an index or a seq, if it is an ``int``; ``ProofError`` naming
    ``parameter`` otherwise. A bool is no count, and ``3.0`` or ``"3"`` from JSON is refused
    rather than failing on the first comparison or passing for the number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ProofError(
        f"{parameter} must be a whole number (an int), not {value!r} ({type(value).__name__})",
        parameter=parameter,
    )


def _digest_bytes(value: object, parameter: str, name: str | None = None) -> bytes:
    """``value``, a hash, as bytes; ``ProofError`` naming ``parameter`` (and it as ``name``)
    unless it is bytes-like. Its length is checked where it matters, saying so."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    hint = "; bytes.fromhex reads one written in hex" if isinstance(value, str) else ""
    raise ProofError(
        f"{name or parameter} must be bytes, a {HASH_SIZE}-byte SHA-256 hash, not "
        f"{type(value).__name__}{hint}",
        parameter=parameter,
    )


def _hashes(proof: object) -> list[bytes]:
    """``proof``, a sequence of hashes, as a list of bytes; ``ProofError`` if it is not one."""
    if not isinstance(proof, Sequence) or isinstance(proof, str | bytes | bytearray):
        raise ProofError(
            f"proof must be a list of {HASH_SIZE}-byte SHA-256 hashes, not {type(proof).__name__}",
            parameter="proof",
        )
    return [_digest_bytes(element, "proof", f"proof[{at}]") for at, element in enumerate(proof)]


_FROM_EMPTY = (
    "old_size is 0: RFC 9162 defines no consistency proof from the empty tree, which every "
    "tree extends; skip the check instead"
)


def _slot(level: bytearray, index: int) -> bytes:
    return bytes(level[index * HASH_SIZE : (index + 1) * HASH_SIZE])


def _check_index(index: int, size: int) -> None:
    whole_number(index, "index")
    if not 0 <= index < size:
        raise ProofError(
            f"index must be between 0 and {size - 1} for a tree of size {size}, not {index}",
            parameter="index",
        )


def _largest_power_of_two_below(n: int) -> int:
    """The k of RFC 9162's split: the largest power of two strictly less than ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def _inclusion_proof_length(index: int, size: int) -> int:
    # Below the level where the paths to ``index`` and to the last leaf part, every level
    # contributes a sibling; above it, only the levels where ``index`` is a right child do.
    inner = (index ^ (size - 1)).bit_length()
    return inner + (index >> inner).bit_count()


def _consistency_proof_length(old_size: int, new_size: int) -> int:
    # The inclusion path of the old tree's last leaf, less the levels inside the old tree's
    # largest complete right-edge subtree, whose root opens the proof unless it is the old root.
    shift = (old_size & -old_size).bit_length() - 1
    length = _inclusion_proof_length(old_size - 1, new_size) - shift
    return length if old_size == 1 << shift else length + 1


def _check_proof_shape(proof: Sequence[bytes], expected: int, what: str) -> None:
    if len(proof) != expected:
        raise ProofError(
            f"{what} has {expected} hashes, but this proof has {len(proof)}",
            parameter="proof",
        )
    for position, element in enumerate(proof):
        if len(element) != HASH_SIZE:
            raise ProofError(
                f"proof[{position}] is {len(element)} bytes; a SHA-256 hash is {HASH_SIZE}",
                parameter="proof",
            )
