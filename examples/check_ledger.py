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
- each checkpoint line (``{"checkpoint": {...}}``) covers no more entries than the export
  holds and names the Merkle root of the entries it covers (its Ed25519 signature is not
  checked here: ``assay ledger verify --public-key`` checks it);
- an inclusion proof (RFC 9162 §2.1.3.2) is for an entry of the tree it names, a tree of no
  more entries than the export holds, and leads from that entry's leaf to the tree's root.

Exit 0 when everything checks out; 1, with the first problem on stderr, when anything does not
(a line that is not an entry or a checkpoint is one); 2 when a file cannot be read.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from typing import Any, TypeGuard

import rfc8785

HEX64 = re.compile(r"[0-9a-f]{64}")


class CheckError(Exception):
    """What is wrong with the export or the proof, for a person."""


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


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"the key {key!r} is given twice")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, what: str) -> Any:
    """``text`` as JSON, refusing what readers disagree on: keys given twice, NaN, Infinity."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except RecursionError:
        raise CheckError(f"{what}: nests too deeply to read") from None
    except ValueError as error:
        raise CheckError(f"{what}: not JSON ({error})") from None


def canonical(value: Any, what: str) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as error:
        raise CheckError(f"{what}: has no RFC 8785 form ({error})") from None
    except RecursionError:
        raise CheckError(f"{what}: nests too deeply to encode") from None


def whole_number(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def read_export(lines: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The entries and the checkpoints of an export, in order; blank lines are skipped."""
    entries: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        value = parse_json(line, f"line {number}")
        if not isinstance(value, dict):
            raise CheckError(f"line {number}: not an entry or a checkpoint: not a JSON object")
        if set(value) == {"checkpoint"}:
            if not isinstance(value["checkpoint"], dict):
                raise CheckError(f"line {number}: the checkpoint is not a JSON object")
            checkpoints.append(value["checkpoint"])
            continue
        for field in ("seq", "prev_hash", "hash"):
            if field not in value:
                raise CheckError(
                    f"line {number}: not an entry or a checkpoint: it has no {field!r}"
                )
        if not whole_number(value["seq"]):
            raise CheckError(
                f"line {number}: the entry's seq {value['seq']!r} is not a whole number"
            )
        for field in ("prev_hash", "hash"):
            if not isinstance(value[field], str):
                raise CheckError(f"line {number}: the entry's {field} {value[field]!r} is not text")
        entries.append(value)
    return entries, checkpoints


def check_entries(entries: list[dict[str, Any]]) -> list[bytes]:
    """Every entry's chain link and hash; answers the Merkle leaves."""
    leaves, previous = [], "0" * 64
    for number, entry in enumerate(entries, start=1):
        if entry["seq"] != number:
            raise CheckError(f"entry {number}: seq is {entry['seq']}, expected {number}")
        if entry["prev_hash"] != previous:
            raise CheckError(f"entry {number}: prev_hash does not match entry {number - 1}")
        unsealed = {key: value for key, value in entry.items() if key != "hash"}
        what = f"entry {number}"
        if hashlib.sha256(canonical(unsealed, what)).hexdigest() != entry["hash"]:
            raise CheckError(f"entry {number}: hash does not match its contents")
        leaves.append(leaf(canonical(entry, what)))
        previous = entry["hash"]
    return leaves


def check_checkpoints(checkpoints: list[dict[str, Any]], leaves: list[bytes]) -> None:
    """Each checkpoint's head (size and root) is a head of the exported entries."""
    for number, checkpoint in enumerate(checkpoints, start=1):
        size, head = checkpoint.get("size"), checkpoint.get("root")
        if not whole_number(size) or size < 0:
            raise CheckError(f"checkpoint {number}: its size {size!r} is not a whole number")
        if not isinstance(head, str) or not HEX64.fullmatch(head):
            raise CheckError(
                f"checkpoint {number}: its root {head!r} is not 64 lowercase hex digits"
            )
        if size > len(leaves):
            raise CheckError(
                f"checkpoint {number}: it covers {size} entries, but the export holds {len(leaves)}"
            )
        if root(leaves[:size]).hex() != head:
            raise CheckError(
                f"checkpoint {number}: its root is not the root of the first {size} entries"
            )


def read_proof(proof: Any) -> tuple[int, int, bytes, str, list[bytes]]:
    """seq, size, leaf hash, root and path of an ``assay ledger prove`` answer."""
    if not isinstance(proof, dict):
        raise CheckError("proof: not a JSON object")
    for field in ("seq", "size"):
        if not whole_number(proof.get(field)):
            raise CheckError(f"proof: {field!r} is {proof.get(field)!r}, not a whole number")
    for field in ("leaf_hash", "root"):
        value = proof.get(field)
        if not isinstance(value, str) or not HEX64.fullmatch(value):
            raise CheckError(f"proof: {field!r} is {value!r}, not 64 lowercase hex digits")
    path = proof.get("path")
    if not isinstance(path, list) or not all(
        isinstance(h, str) and HEX64.fullmatch(h) for h in path
    ):
        raise CheckError("proof: 'path' is not a list of hashes of 64 lowercase hex digits")
    return (
        proof["seq"],
        proof["size"],
        bytes.fromhex(proof["leaf_hash"]),
        proof["root"],
        [bytes.fromhex(h) for h in path],
    )


def check_inclusion(proof: Any, leaves: list[bytes]) -> tuple[int, int]:
    """RFC 9162 §2.1.3.2, step by step; answers the proof's seq and size."""
    seq, size, leaf_hash, head, path = read_proof(proof)
    # §2.1.3.2: a leaf index at or beyond the tree size fails. Entry seq is leaf seq - 1.
    if not 1 <= seq <= size:
        raise CheckError(f"proof: entry {seq} is not in a tree of {size} entries")
    if size > len(leaves):
        raise CheckError(
            f"proof: it is for a tree of {size} entries, but the export holds {len(leaves)}"
        )
    index, last = seq - 1, size - 1
    if leaves[index] != leaf_hash:
        raise CheckError(f"proof: leaf hash differs from entry {seq}'s")
    hashed = leaf_hash
    for element in path:
        if last == 0:
            raise CheckError("proof: the path is longer than the tree is deep")
        if index % 2 == 1 or index == last:
            hashed = node(element, hashed)
            while index % 2 == 0 and index != 0:
                index, last = index >> 1, last >> 1
        else:
            hashed = node(hashed, element)
        index, last = index >> 1, last >> 1
    if last != 0 or hashed.hex() != head:
        raise CheckError("proof: the path does not lead to the root")
    if root(leaves[:size]).hex() != head:
        raise CheckError("proof: the root is not the root of the exported entries")
    return seq, size


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError as error:
        print(f"cannot read {path}: {error.strerror}", file=sys.stderr)
        raise SystemExit(2) from None
    except UnicodeDecodeError as error:
        raise CheckError(f"{path}: not UTF-8 text (byte {error.start})") from None


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: check_ledger.py LEDGER.jsonl [PROOF.json]", file=sys.stderr)
        return 2
    try:
        entries, checkpoints = read_export(read_text(argv[1]).split("\n"))
        leaves = check_entries(entries)
        print(f"{len(leaves)} entries: chain and hashes intact; root {root(leaves).hex()}")
        if checkpoints:
            check_checkpoints(checkpoints, leaves)
            count = "1 checkpoint" if len(checkpoints) == 1 else f"{len(checkpoints)} checkpoints"
            print(f"{count}: size and root match the entries (signatures not checked)")
        if len(argv) > 2:
            proof = parse_json(read_text(argv[2]), argv[2])
            seq, size = check_inclusion(proof, leaves)
            print(f"entry {seq} is included in the tree of {size} entries")
    except CheckError as problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
