"""Sealing entries and hashing Merkle nodes with OpenSSL's SHA-256, in C (``_seal.c``)."""

from typing import Any, TypeVar

_E = TypeVar("_E")

def seal_all(entry_type: type[_E], drafts: list[Any], head_seq: int, head_hash: str, /) -> list[_E]:
    """The drafts sealed in order after the head, as entries of ``entry_type``."""

def node_hashes(level: bytes | bytearray, start: int, stop: int, /) -> bytes:
    """SHA-256(0x01 || pair) of each 64-byte pair of ``level[start:stop]``, concatenated."""
