"""Proofs a ledger hands out: one entry is in the tree, and one tree head extends another.

Both carry everything a verifier needs, as hex, and check themselves with the RFC 9162
algorithms of ``merkle``: ``verify`` returns ``None`` or raises ``ProofError``, also when a
hash is not written as a proof writes it, 64 lowercase hex digits, or a size or seq is not an
int.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from assay.errors import ProofError
from assay.ledger.entry import Entry
from assay.ledger.merkle import verify_consistency, verify_inclusion, whole_number


@dataclass(frozen=True, slots=True)
class TreeHead:
    """The ledger's Merkle tree at ``size`` entries: its ``root`` as lowercase hex."""

    size: int
    root: str

    @classmethod
    def parse(cls, text: str) -> TreeHead:
        """The head written ``SIZE:ROOT`` (``12:3f9a…``, as ``str`` writes it); ``ProofError``
        saying what is wrong otherwise."""
        found = _HEAD.fullmatch(text)
        if found is None:
            raise ProofError(
                "a tree head is written SIZE:ROOT, the size and the root (64 hex digits) that "
                f"GET /v1/ledger/head answers or assay ledger verify prints, not {text!r}",
                parameter="head",
            )
        return cls(int(found[1]), found[2].lower())

    def __str__(self) -> str:
        return f"{self.size}:{self.root}"


def checked_head(head: object, parameter: str) -> TreeHead:
    """``head`` if it is a ``TreeHead`` whose ``size`` is an int of 0 or more and ``root`` 64
    lowercase hex digits, as ``TreeHead.parse`` makes one; ``ProofError`` naming ``parameter``
    otherwise. Made by hand with the size ``"12"``, a head failed on a bare comparison; with
    an upper-case root, it differed from the right root as if the entries had been changed."""
    if not isinstance(head, TreeHead):
        raise ProofError(
            f"{parameter} must be a TreeHead (TreeHead.parse reads SIZE:ROOT), not "
            f"{type(head).__name__}",
            parameter=parameter,
        )
    size = whole_number(head.size, f"{parameter}.size")
    if size < 0:
        raise ProofError(
            f"{parameter}.size must be 0 or more, not {size}", parameter=f"{parameter}.size"
        )
    _digest(head.root, f"{parameter}.root")
    return head


# ASCII digits only (str.isdecimal and int() take any script's), and no more than a 64-bit
# size has: int() refuses text beyond 4,300 digits with a ValueError.
_HEAD: Final = re.compile(r"([0-9]{1,20}):([0-9a-fA-F]{64})")
_HASH: Final = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class InclusionProof:
    """Entry ``seq``, whose Merkle leaf hash is ``leaf_hash``, is in the tree of ``size``."""

    seq: int
    size: int
    leaf_hash: str
    root: str
    path: tuple[str, ...]

    def verify(self, entry: Entry | None = None) -> None:
        """Check the path leads from the leaf to ``root``, and that ``entry`` is that leaf."""
        seq, size = whole_number(self.seq, "seq"), whole_number(self.size, "size")
        if not 1 <= seq <= size:
            raise ProofError(
                f"seq {seq} is not an entry of a tree of {size} entries; expected 1 <= seq <= size",
                parameter="seq",
            )
        if entry is not None and not isinstance(entry, Entry):
            raise ProofError(
                f"entry must be an Entry (as Ledger.read gives), not {type(entry).__name__}",
                parameter="entry",
            )
        if entry is not None and (entry.seq, entry.leaf_hash.hex()) != (seq, self.leaf_hash):
            raise ProofError(
                f"the proof is for entry {self.seq} with leaf hash {self.leaf_hash}, not for "
                f"entry {entry.seq} with leaf hash {entry.leaf_hash.hex()}",
                parameter="entry",
            )
        verify_inclusion(
            _digest(self.leaf_hash, "leaf_hash"),
            seq - 1,
            size,
            _digests(self.path),
            _digest(self.root, "root"),
        )


@dataclass(frozen=True, slots=True)
class ConsistencyProof:
    """The tree of ``old_size`` entries with ``old_root`` is a prefix of the newer one."""

    old_size: int
    old_root: str
    new_size: int
    new_root: str
    path: tuple[str, ...]

    def verify(self) -> None:
        """Check the proof with RFC 9162's algorithm, each root and path element first read
        as a SHA-256 hash: with equal sizes too, where the roots need only be equal."""
        verify_consistency(
            self.old_size,
            self.new_size,
            _digest(self.old_root, "old_root"),
            _digest(self.new_root, "new_root"),
            _digests(self.path),
        )


def _digests(path: object) -> list[bytes]:
    """Each hash of ``path``, a list or tuple of them, read as ``_digest`` reads one."""
    if not isinstance(path, list | tuple):
        raise ProofError(
            f"path must be a tuple or list of SHA-256 hashes as 64 lowercase hex digits, not "
            f"{type(path).__name__}",
            parameter="path",
        )
    return [_digest(element, "path") for element in path]


def _digest(text: object, parameter: str) -> bytes:
    """The SHA-256 hash ``text`` writes as 64 lowercase hex digits, as a proof writes each;
    ``ProofError`` naming ``parameter`` for anything else (``bytes.fromhex`` alone would take
    any length, spaces and upper case)."""
    if not isinstance(text, str) or not _HASH.fullmatch(text):
        raise ProofError(
            f"{parameter} must be a SHA-256 hash as 64 lowercase hex digits, not {text!r}",
            parameter=parameter,
        )
    return bytes.fromhex(text)
