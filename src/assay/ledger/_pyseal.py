"""The pure-Python twin of ``_seal``, used where the C module was not built: the same
entries and node hashes, byte for byte, from ``hashlib``."""

from __future__ import annotations

import hashlib
from typing import Any, Final, TypeVar

_E = TypeVar("_E")

_PAIR: Final = 64
"""Bytes in the two child hashes an interior node covers."""

_COPIED: Final = ("kind", "timestamp", "session", "run", "transition", "body")
"""The fields an entry takes from its draft as they are."""


def seal_all(entry_type: type[_E], drafts: list[Any], head_seq: int, head_hash: str, /) -> list[_E]:
    """The drafts sealed in order after the head, as entries of ``entry_type``, made as the
    C module makes them: without running ``__init__``, every field set."""
    entries: list[_E] = []
    prev_hash = head_hash
    for seq, draft in enumerate(drafts, head_seq + 1):
        # The pieces go together as entry.seal_all describes: _head, the members the seal
        # adds, then _rest; the canonical form puts the hash member after _head.
        tail = b',"kind":"%s","prev_hash":"%s","run":%s,"seq":%d%s' % (
            draft.kind.encode(),
            prev_hash.encode(),
            draft._run,
            seq,
            draft._rest,
        )
        entry_hash = hashlib.sha256(draft._head + tail).hexdigest()
        canonical = b'%s,"hash":"%s"%s' % (draft._head, entry_hash.encode(), tail)
        entry = object.__new__(entry_type)
        for name in _COPIED:
            object.__setattr__(entry, name, getattr(draft, name))
        object.__setattr__(entry, "seq", seq)
        object.__setattr__(entry, "prev_hash", prev_hash)
        object.__setattr__(entry, "hash", entry_hash)
        object.__setattr__(entry, "canonical", canonical)
        object.__setattr__(entry, "_leaf", hashlib.sha256(b"\x00" + canonical).digest())
        entries.append(entry)
        prev_hash = entry_hash
    return entries


def node_hashes(level: bytes | bytearray, start: int, stop: int, /) -> bytes:
    """SHA-256(0x01 || pair) of each 64-byte pair of ``level[start:stop]``, concatenated."""
    if start < 0 or stop < start or stop > len(level) or (stop - start) % _PAIR:
        raise ValueError("node_hashes needs whole 64-byte pairs within the level")
    return b"".join(
        hashlib.sha256(b"\x01" + level[at : at + _PAIR]).digest()
        for at in range(start, stop, _PAIR)
    )
