"""Proofs a ledger hands out: one entry is in the tree, and one tree head extends another.

Both carry everything a verifier needs, as hex, and check themselves with the RFC 9162
algorithms of ``merkle``: ``verify`` returns ``None`` or raises ``ProofError``, also when a
hash is not written as a proof writes it, 64 lowercase hex digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from assay.errors import ProofError
from assay.ledger.entry import Entry
from assay.ledger.merkle import verify_consistency, verify_inclusion


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
        if entry is not None and (entry.seq, entry.leaf_hash.hex()) != (self.seq, self.leaf_hash):
            raise ProofError(
                f"the proof is for entry {self.seq} with leaf hash {self.leaf_hash}, not for "
                f"entry {entry.seq} with leaf hash {entry.leaf_hash.hex()}",
                parameter="entry",
            )
        verify_inclusion(
            _digest(self.leaf_hash, "leaf_hash"),
            self.seq - 1,
            self.size,
            [_digest(element, "path") for element in self.path],
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
            [_digest(element, "path") for element in self.path],
        )


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
