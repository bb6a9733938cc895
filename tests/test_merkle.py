"""The ledger's Merkle tree against third-party vectors, the RFC's own recursion, and tampering.

The vectors are transparency-dev/merkle's (``shared/vectors/merkle``, beside the repository):
every valid probe verifies and every ``wantErr`` probe raises ``ProofError``. The properties
compare the cached tree with RFC 9162's definitions written out naively, and flip bytes to see
verification fail.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

import assay.ledger.merkle as merkle_module
from assay.errors import AssayError, ProofError
from assay.ledger.merkle import (
    EMPTY_ROOT,
    MerkleTree,
    leaf_hash,
    node_hash,
    verify_consistency,
    verify_inclusion,
)

# The shared vectors sit beside the repository (../shared).
VECTORS: Final = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "merkle" / "testdata"
VECTOR_FILES: Final = sorted(VECTORS.rglob("*.json"))

# RFC 6962's test leaves, from which the vectors' numbered folders were made.
RFC_LEAVES: Final = [
    bytes.fromhex(h)
    for h in [
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    ]
]


def b64(text: str) -> bytes:
    return base64.b64decode(text)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def check_vector(data: dict[str, Any]) -> None:
    proof = [b64(element) for element in data["proof"] or []]
    if "leafIdx" in data:
        verify_inclusion(
            b64(data["leafHash"]), data["leafIdx"], data["treeSize"], proof, b64(data["root"])
        )
    else:
        verify_consistency(
            data["size1"], data["size2"], b64(data["root1"]), b64(data["root2"]), proof
        )


def test_every_vector_folder_is_present() -> None:
    counts: dict[tuple[str, bool], int] = {}
    for path in VECTOR_FILES:
        key = (path.relative_to(VECTORS).parts[0], load(path)["wantErr"])
        counts[key] = counts.get(key, 0) + 1
    assert counts == {
        ("consistency", False): 6,
        ("consistency", True): 92,
        ("inclusion", False): 6,
        ("inclusion", True): 92,
    }
    folders = {str(path.parent.relative_to(VECTORS)) for path in VECTOR_FILES}
    assert folders == {
        *(f"consistency/{name}" for name in ["0", "1", "2", "3", "4", "additional"]),
        *(f"inclusion/{name}" for name in ["0", "1", "2", "3", "4", "single-entry"]),
        *(f"inclusion/additional/{name}" for name in ["0", "1", "2", "3"]),
    }


@pytest.mark.parametrize(
    "path", VECTOR_FILES, ids=[str(path.relative_to(VECTORS)) for path in VECTOR_FILES]
)
def test_vector(path: Path) -> None:
    data = load(path)
    if data["wantErr"]:
        with pytest.raises(ProofError):
            check_vector(data)
    else:
        check_vector(data)


def test_the_tree_makes_the_vectors_happy_paths() -> None:
    tree = MerkleTree(leaf_hash(data) for data in RFC_LEAVES)
    happy = [load(path) for path in VECTOR_FILES if path.name == "happy-path.json"]
    assert len(happy) == 10
    for data in happy:
        proof = [b64(element) for element in data["proof"] or []]
        if "leafIdx" in data:
            assert tree.leaf(data["leafIdx"]) == b64(data["leafHash"])
            assert tree.root(data["treeSize"]) == b64(data["root"])
            assert tree.inclusion_proof(data["leafIdx"], data["treeSize"]) == proof
        else:
            assert tree.root(data["size1"]) == b64(data["root1"])
            assert tree.root(data["size2"]) == b64(data["root2"])
            assert tree.consistency_proof(data["size1"], data["size2"]) == proof


def test_hashes_have_the_rfc_prefixes() -> None:
    assert hashlib.sha256(b"").digest() == EMPTY_ROOT
    assert leaf_hash(b"ab") == hashlib.sha256(b"\x00ab").digest()
    assert (
        node_hash(b"L" * 32, b"R" * 32) == hashlib.sha256(b"\x01" + b"L" * 32 + b"R" * 32).digest()
    )
    assert MerkleTree().root() == EMPTY_ROOT
    assert MerkleTree().size == 0


# RFC 9162 §2.1.1, §2.1.3.1 and §2.1.4.1, transcribed literally over lists of leaf hashes.


def split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def naive_root(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = split(len(leaves))
    return node_hash(naive_root(leaves[:k]), naive_root(leaves[k:]))


def naive_path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = split(len(leaves))
    if m < k:
        return [*naive_path(m, leaves[:k]), naive_root(leaves[k:])]
    return [*naive_path(m - k, leaves[k:]), naive_root(leaves[:k])]


def naive_subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    if m == len(leaves):
        return [] if whole else [naive_root(leaves)]
    k = split(len(leaves))
    if m <= k:
        return [*naive_subproof(m, leaves[:k], whole), naive_root(leaves[k:])]
    return [*naive_subproof(m - k, leaves[k:], False), naive_root(leaves[:k])]


@st.composite
def leaf_lists(draw: st.DrawFn, min_size: int = 1, max_size: int = 300) -> list[bytes]:
    """Distinct leaf hashes, so no proof can pass for another leaf by coincidence."""
    size = draw(st.integers(min_size, max_size))
    salt = draw(st.binary(max_size=8))
    return [leaf_hash(salt + i.to_bytes(4, "big")) for i in range(size)]


def flipped(data: bytes, position: int, bit: int = 0) -> bytes:
    return data[:position] + bytes([data[position] ^ (1 << bit)]) + data[position + 1 :]


@given(leaf_lists(min_size=0), st.data())
def test_roots_of_prefixes_match_the_rfc_definition(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = MerkleTree(leaves)
    assert tree.size == len(leaves)
    k = data.draw(st.integers(0, len(leaves)))
    assert tree.root(k) == naive_root(leaves[:k])
    assert tree.root() == naive_root(leaves)


@given(leaf_lists(), st.data())
def test_inclusion_proofs_match_the_rfc_and_verify(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = MerkleTree(leaves)
    size = data.draw(st.integers(1, len(leaves)), label="size")
    index = data.draw(st.integers(0, size - 1), label="index")
    proof = tree.inclusion_proof(index, size)
    assert proof == naive_path(index, leaves[:size])
    root = tree.root(size)
    verify_inclusion(leaves[index], index, size, proof, root)

    def rejected(leaf: bytes, at: int, of: int, path: list[bytes], head: bytes) -> None:
        with pytest.raises(ProofError):
            verify_inclusion(leaf, at, of, path, head)

    byte = data.draw(st.integers(0, 31), label="byte")
    bit = data.draw(st.integers(0, 7), label="bit")
    for position in range(len(proof)):
        tampered = [*proof]
        tampered[position] = flipped(proof[position], byte, bit)
        rejected(leaves[index], index, size, tampered, root)
    rejected(leaves[index], index, size, proof, flipped(root, byte, bit))
    rejected(flipped(leaves[index], byte, bit), index, size, proof, root)
    rejected(leaves[index], index, size, [*proof, root], root)
    if proof:
        rejected(leaves[index], index, size, proof[:-1], root)
    for other in {index - 1, index + 1} & set(range(size)):
        rejected(leaves[index], other, size, proof, root)
    # No tampering with the size alone: an audit path does not bind it (a sibling hash may
    # stand for a subtree of another shape, so 0 of 3 and 0 of 4 can share a path and root);
    # the size is bound by the signed checkpoint that carries the root.


@given(leaf_lists(), st.data())
def test_consistency_proofs_match_the_rfc_and_verify(
    leaves: list[bytes], data: st.DataObject
) -> None:
    tree = MerkleTree(leaves)
    new_size = data.draw(st.integers(1, len(leaves)), label="new_size")
    old_size = data.draw(st.integers(1, new_size), label="old_size")
    proof = tree.consistency_proof(old_size, new_size)
    old_root, new_root = tree.root(old_size), tree.root(new_size)
    assert proof == naive_subproof(old_size, leaves[:new_size], True)
    verify_consistency(old_size, new_size, old_root, new_root, proof)

    def rejected(old: int, new: int, first: bytes, second: bytes, path: list[bytes]) -> None:
        with pytest.raises(ProofError):
            verify_consistency(old, new, first, second, path)

    byte = data.draw(st.integers(0, 31), label="byte")
    for position in range(len(proof)):
        tampered = [*proof]
        tampered[position] = flipped(proof[position], byte)
        rejected(old_size, new_size, old_root, new_root, tampered)
    rejected(old_size, new_size, flipped(old_root, byte), new_root, proof)
    rejected(old_size, new_size, old_root, flipped(new_root, byte), proof)
    rejected(old_size, new_size, old_root, new_root, [*proof, new_root])
    if old_size < new_size:
        rejected(new_size, old_size, new_root, old_root, proof)
        rejected(old_size, new_size, new_root, old_root, proof)
        rejected(old_size, new_size, old_root, new_root, proof[:-1])
        rejected(old_size + 1, new_size, tree.root(old_size + 1), new_root, proof)


def test_a_power_of_two_old_size_starts_from_its_own_root() -> None:
    leaves = [leaf_hash(bytes([i])) for i in range(7)]
    tree = MerkleTree(leaves)
    proof = tree.consistency_proof(4, 7)
    # The old tree is the left child, so the proof is just its sibling: MTH(D[4:7]).
    assert proof == [node_hash(node_hash(leaves[4], leaves[5]), leaves[6])]
    verify_consistency(4, 7, tree.root(4), tree.root(7), proof)
    assert tree.consistency_proof(1, 2) == [leaves[1]]
    assert tree.consistency_proof(3, 4) == [leaves[2], leaves[3], node_hash(leaves[0], leaves[1])]


def test_every_proof_in_small_trees() -> None:
    leaves = [leaf_hash(bytes([i])) for i in range(40)]
    tree = MerkleTree(leaves)
    for size in range(1, 41):
        root = tree.root(size)
        for index in range(size):
            verify_inclusion(leaves[index], index, size, tree.inclusion_proof(index, size), root)
        for old in range(1, size + 1):
            proof = tree.consistency_proof(old, size)
            verify_consistency(old, size, tree.root(old), root, proof)


def test_equal_and_empty_sizes() -> None:
    root = leaf_hash(b"x")
    verify_consistency(1, 1, root, root, [])
    verify_consistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, [])
    assert MerkleTree([root]).consistency_proof(1, 1) == []
    assert MerkleTree().consistency_proof(0) == []


def test_a_large_tree_needs_logarithmic_work(monkeypatch: pytest.MonkeyPatch) -> None:
    size = 100_000
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(size)]
    tree = MerkleTree(leaves)
    assert tree.root(size) == naive_root(leaves)
    calls = 0
    original: Callable[[bytes, bytes], bytes] = merkle_module.node_hash

    def counting(left: bytes, right: bytes) -> bytes:
        nonlocal calls
        calls += 1
        return original(left, right)

    monkeypatch.setattr(merkle_module, "node_hash", counting)
    root = tree.root()
    proof = tree.inclusion_proof(54_321)
    consistency = tree.consistency_proof(77_777)
    old_root = tree.root(77_777)
    # A root folds one stored block per one-bit of its size (6 for 100,000, 10 for 77,777) and
    # each proof folds at most one incomplete subtree; recomputing would take ~100,000 hashes.
    assert calls <= 5 + 5 + 5 + 9
    verify_inclusion(leaves[54_321], 54_321, size, proof, root)
    verify_consistency(77_777, size, old_root, root, consistency)
    assert len(proof) == 17


def test_tree_refuses_what_it_cannot_prove() -> None:
    tree = MerkleTree(leaf_hash(bytes([i])) for i in range(5))
    with pytest.raises(ProofError) as caught:
        tree.inclusion_proof(5)
    assert str(caught.value) == "index must be between 0 and 4 for a tree of size 5, not 5"
    assert caught.value.parameter == "index"
    with pytest.raises(ProofError) as caught:
        tree.root(6)
    assert str(caught.value) == "size must be between 0 and the tree's size (5), not 6"
    with pytest.raises(ProofError) as caught:
        tree.consistency_proof(0, 3)
    assert caught.value.parameter == "old_size"
    assert str(caught.value).startswith("old_size is 0: RFC 9162 defines no consistency proof")
    with pytest.raises(ProofError) as caught:
        tree.consistency_proof(4, 3)
    assert str(caught.value) == "old_size must be between 0 and new_size (3), not 4"
    with pytest.raises(ProofError) as caught:
        tree.append(b"short")
    assert str(caught.value) == "leaf_hash must be a 32-byte SHA-256 digest, not 5 bytes"
    assert tree.size == 5
    with pytest.raises(ProofError):
        tree.inclusion_proof(0, 0)


def test_verifier_messages_name_what_failed() -> None:
    leaves = [leaf_hash(bytes([i])) for i in range(5)]
    tree = MerkleTree(leaves)
    proof = tree.inclusion_proof(2)
    root = tree.root()

    with pytest.raises(ProofError) as caught:
        verify_inclusion(leaves[2], 2, 5, proof[:-1], root)
    assert (
        str(caught.value) == "an inclusion proof for leaf 2 of 5 has 3 hashes, but this proof has 2"
    )
    assert caught.value.parameter == "proof"

    with pytest.raises(ProofError) as caught:
        verify_inclusion(leaves[2], 5, 5, proof, root)
    assert str(caught.value) == (
        "index 5 is not a leaf of a tree of size 5; expected 0 <= index < size"
    )

    with pytest.raises(ProofError) as caught:
        verify_inclusion(leaves[3], 2, 5, proof, root)
    assert caught.value.parameter == "root"
    assert str(caught.value).endswith(f"not to the root given {root.hex()}")

    with pytest.raises(ProofError) as caught:
        verify_inclusion(leaves[2], 2, 5, [proof[0][:31], *proof[1:]], root)
    assert str(caught.value) == "proof[0] is 31 bytes; a SHA-256 hash is 32"

    old = tree.root(3)
    consistency = tree.consistency_proof(3)
    with pytest.raises(ProofError) as caught:
        verify_consistency(5, 3, root, old, consistency)
    assert str(caught.value) == (
        "old_size 5 is larger than new_size 3; a tree only grows (were the sizes swapped?)"
    )
    with pytest.raises(ProofError) as caught:
        verify_consistency(3, 5, old, old, consistency)
    assert caught.value.parameter == "new_root"
    with pytest.raises(ProofError) as caught:
        verify_consistency(3, 5, root, root, consistency)
    assert caught.value.parameter == "old_root"
    with pytest.raises(ProofError) as caught:
        verify_consistency(5, 5, root, old, [])
    assert (
        str(caught.value)
        == f"the sizes are equal (5) but the roots differ: {root.hex()} and {old.hex()}"
    )
    with pytest.raises(ProofError) as caught:
        verify_consistency(0, 0, root, root, [])
    assert str(caught.value) == f"a tree of size 0 has root {EMPTY_ROOT.hex()}, not {root.hex()}"


def test_proof_error_is_an_assay_value_error() -> None:
    assert issubclass(ProofError, AssayError)
    assert issubclass(ProofError, ValueError)


@given(leaf_lists(min_size=0), st.lists(st.integers(0, 40), max_size=20))
def test_extending_by_batches_builds_the_tree_appending_builds(
    leaves: list[bytes], cuts: list[int]
) -> None:
    one_by_one = MerkleTree()
    for leaf in leaves:
        one_by_one.append(leaf)
    batched, start = MerkleTree(), 0
    for width in [*cuts, len(leaves)]:
        batched.extend(leaves[start : start + width])
        start += width
        assert batched.size == min(start, len(leaves))
        assert batched.root() == naive_root(leaves[: batched.size])
    assert batched._levels == one_by_one._levels


def test_extending_by_something_not_a_digest_adds_what_came_before_it() -> None:
    tree = MerkleTree()
    good = [leaf_hash(bytes([n])) for n in range(3)]
    with pytest.raises(ProofError, match="not 5 bytes"):
        tree.extend([*good, b"short", leaf_hash(b"x")])
    assert tree.size == 3
    assert tree.root() == naive_root(good)
