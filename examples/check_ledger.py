"""Check an exported assay ledger without assay: the chain, the Merkle root, and a proof.

    assay ledger export --ledger sqlite:///assay.db > ledger.jsonl
    assay ledger prove 2 --ledger sqlite:///assay.db > proof.json
    python examples/check_ledger.py ledger.jsonl [proof.json]

Needs only the standard library and an RFC 8785 encoder (the ``rfc8785`` package). It
re-derives every hash from the entries themselves, so it trusts nothing assay computed:

- entry ``n`` has ``seq == n`` and ``prev_hash`` equal to entry ``n - 1``'s ``hash``
  (64 zeros for the first);
- ``hash`` is SHA-256 of the RFC 8785 JSON of the entry without its ``hash`` member;
- the Merkle leaf is SHA-256(0x00 || RFC 8785 JSON of the whole entry), interior nodes are
  SHA-256(0x01 || left || right), split as RFC 9162 §2.1.1 says;
- an inclusion proof (RFC 9162 §2.1.3.2) leads from its entry's leaf to the root.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

import rfc8785


def leaf(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def root(leaves: list[bytes]) -> bytes:
    """RFC 9162 §2.1.1: split at the largest power of two smaller than the size."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    return node(root(leaves[:split]), root(leaves[split:]))


def check_entries(lines: list[str]) -> list[bytes]:
    """Every entry's chain link and hash; answers the Merkle leaves."""
    leaves, previous = [], "0" * 64
    for number, line in enumerate(lines, start=1):
        entry: dict[str, Any] = json.loads(line)
        if entry["seq"] != number:
            raise SystemExit(f"entry {number}: seq is {entry['seq']}, expected {number}")
        if entry["prev_hash"] != previous:
            raise SystemExit(f"entry {number}: prev_hash does not match entry {number - 1}")
        unsealed = {key: value for key, value in entry.items() if key != "hash"}
        if hashlib.sha256(rfc8785.dumps(unsealed)).hexdigest() != entry["hash"]:
            raise SystemExit(f"entry {number}: hash does not match its contents")
        leaves.append(leaf(rfc8785.dumps(entry)))
        previous = entry["hash"]
    return leaves


def check_inclusion(proof: dict[str, Any], leaves: list[bytes]) -> None:
    """RFC 9162 §2.1.3.2, step by step."""
    index, last = proof["seq"] - 1, proof["size"] - 1
    if leaves[index].hex() != proof["leaf_hash"]:
        raise SystemExit(f"proof: leaf hash differs from entry {proof['seq']}'s")
    hashed = leaves[index]
    for element in (bytes.fromhex(h) for h in proof["path"]):
        if last == 0:
            raise SystemExit("proof: the path is longer than the tree is deep")
        if index % 2 == 1 or index == last:
            hashed = node(element, hashed)
            while index % 2 == 0 and index != 0:
                index, last = index >> 1, last >> 1
        else:
            hashed = node(hashed, element)
        index, last = index >> 1, last >> 1
    if last != 0 or hashed.hex() != proof["root"]:
        raise SystemExit("proof: the path does not lead to the root")
    if root(leaves[: proof["size"]]).hex() != proof["root"]:
        raise SystemExit("proof: the root is not the root of the exported entries")


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as jsonl:
        lines = [line for line in jsonl if line.strip()]
    leaves = check_entries(lines)
    print(f"{len(leaves)} entries: chain and hashes intact; root {root(leaves).hex()}")
    if len(argv) > 2:
        with open(argv[2], encoding="utf-8") as file:
            proof = json.load(file)
        check_inclusion(proof, leaves)
        print(f"entry {proof['seq']} is included in the tree of {proof['size']} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
