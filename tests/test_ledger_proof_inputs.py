"""Proofs and tree heads handed in by a caller, from JSON or by hand: a size, index or seq of
the wrong type, a hash that is not bytes (or hex text, in a proof object), and a path that is
no list of hashes are each a ``ProofError`` naming the field and the type expected, never a
bare ``TypeError`` from inside the algorithm, nor a pass for a bool read as 0 or 1."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import pytest

from assay.errors import ProofError
from assay.ledger import Ledger, MemoryBackend, verify_ledger
from assay.ledger.merkle import MerkleTree, leaf_hash, verify_consistency, verify_inclusion
from assay.ledger.proof import TreeHead

VECTORS: Final = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "merkle" / "testdata"
HAPPY: Final = sorted(VECTORS.rglob("happy-path.json"))

LEAVES: Final = [leaf_hash(bytes([n])) for n in range(5)]
TREE: Final = MerkleTree(LEAVES)
ROOT: Final = TREE.root()
PATH: Final = TREE.inclusion_proof(1)
OLD_ROOT: Final = TREE.root(3)
CONSISTENCY: Final = TREE.consistency_proof(3)

NOT_WHOLE: Final = [("1", "str"), (True, "bool"), (1.0, "float"), (None, "NoneType")]
"""Values that are no int, and the type each message names."""


def _whole_number(name: str, value: object, kind: str) -> str:
    return f"{name} must be a whole number (an int), not {value!r} ({kind})"


def _refused(call: Any, parameter: str, message: str) -> None:
    with pytest.raises(ProofError) as caught:
        call()
    assert (caught.value.parameter, str(caught.value)) == (parameter, message)


@pytest.mark.parametrize(("value", "kind"), NOT_WHOLE)
def test_the_verifiers_take_sizes_and_indexes_as_ints_only(value: object, kind: str) -> None:
    """``verify_inclusion(leaf, True, ...)`` checked leaf 1; ``"1"`` raised a bare TypeError."""
    _refused(
        lambda: verify_inclusion(LEAVES[1], value, 5, PATH, ROOT),  # type: ignore[arg-type]
        "index",
        _whole_number("index", value, kind),
    )
    _refused(
        lambda: verify_inclusion(LEAVES[1], 1, value, PATH, ROOT),  # type: ignore[arg-type]
        "size",
        _whole_number("size", value, kind),
    )
    _refused(
        lambda: verify_consistency(value, 5, OLD_ROOT, ROOT, CONSISTENCY),  # type: ignore[arg-type]
        "old_size",
        _whole_number("old_size", value, kind),
    )
    _refused(
        lambda: verify_consistency(3, value, OLD_ROOT, ROOT, CONSISTENCY),  # type: ignore[arg-type]
        "new_size",
        _whole_number("new_size", value, kind),
    )


def test_the_verifiers_take_hashes_as_bytes_only() -> None:
    hint = "; bytes.fromhex reads one written in hex"
    _refused(
        lambda: verify_inclusion(LEAVES[1].hex(), 1, 5, PATH, ROOT),  # type: ignore[arg-type]
        "leaf_hash",
        f"leaf_hash must be bytes, a 32-byte SHA-256 hash, not str{hint}",
    )
    _refused(
        lambda: verify_inclusion(LEAVES[1], 1, 5, PATH, ROOT.hex()),  # type: ignore[arg-type]
        "root",
        f"root must be bytes, a 32-byte SHA-256 hash, not str{hint}",
    )
    _refused(
        lambda: verify_inclusion(LEAVES[1], 1, 5, [*PATH[:1], None, *PATH[2:]], ROOT),  # type: ignore[list-item]
        "proof",
        "proof[1] must be bytes, a 32-byte SHA-256 hash, not NoneType",
    )
    _refused(
        lambda: verify_inclusion(LEAVES[1], 1, 5, b"".join(PATH), ROOT),  # type: ignore[arg-type]
        "proof",
        "proof must be a list of 32-byte SHA-256 hashes, not bytes",
    )
    # With equal sizes, equal roots of any length pass (as the vectors require), but they
    # must be bytes: a message about them shows them as hex.
    _refused(
        lambda: verify_consistency(5, 5, "x", "y", []),  # type: ignore[arg-type]
        "old_root",
        f"old_root must be bytes, a 32-byte SHA-256 hash, not str{hint}",
    )
    # Other bytes-like hashes still serve, as they did.
    path = [bytearray(element) for element in PATH]
    verify_inclusion(LEAVES[1], 1, 5, path, memoryview(ROOT))  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "kind"), NOT_WHOLE[:-1])  # None is a size: the whole tree
def test_the_tree_takes_sizes_and_indexes_as_ints_only(value: object, kind: str) -> None:
    _refused(lambda: TREE.root(value), "size", _whole_number("size", value, kind))  # type: ignore[arg-type]
    _refused(lambda: TREE.leaf(value), "index", _whole_number("index", value, kind))  # type: ignore[arg-type]
    _refused(
        lambda: TREE.inclusion_proof(value),  # type: ignore[arg-type]
        "index",
        _whole_number("index", value, kind),
    )
    _refused(
        lambda: TREE.consistency_proof(value),  # type: ignore[arg-type]
        "old_size",
        _whole_number("old_size", value, kind),
    )


def _ledger() -> Ledger:
    ledger = Ledger(MemoryBackend())
    for n in range(5):
        ledger.append("fire", {"n": n})
    return ledger


@pytest.mark.parametrize(("value", "kind"), NOT_WHOLE)
def test_a_proof_object_takes_its_sizes_and_seq_as_ints_only(value: object, kind: str) -> None:
    """A proof read from JSON with ``"seq": "2"`` raised a bare TypeError; ``True`` for 1,
    and ``2.0``, were read as numbers."""
    ledger = _ledger()
    inclusion, consistency = ledger.prove(2), ledger.consistency(3)
    for name in ("seq", "size"):
        changes: dict[str, Any] = {name: value}
        _refused(replace(inclusion, **changes).verify, name, _whole_number(name, value, kind))
    for name in ("old_size", "new_size"):
        changes = {name: value}
        _refused(replace(consistency, **changes).verify, name, _whole_number(name, value, kind))


def test_a_proof_object_names_a_seq_outside_its_tree_and_a_path_that_is_no_list() -> None:
    ledger = _ledger()
    inclusion = ledger.prove(2)
    for seq in (0, -1, 6):
        _refused(
            replace(inclusion, seq=seq).verify,
            "seq",
            f"seq {seq} is not an entry of a tree of 5 entries; expected 1 <= seq <= size",
        )
    _refused(
        replace(inclusion, path=inclusion.path[0]).verify,  # type: ignore[arg-type]
        "path",
        "path must be a tuple or list of SHA-256 hashes as 64 lowercase hex digits, not str",
    )
    _refused(
        lambda: inclusion.verify({"seq": 2}),  # type: ignore[arg-type]
        "entry",
        "entry must be an Entry (as Ledger.read gives), not dict",
    )
    # A path read from JSON is a list: as good as the tuple the ledger gives.
    replace(inclusion, path=list(inclusion.path)).verify(ledger.read(2, 3)[0])  # type: ignore[arg-type]


def test_a_trusted_head_made_by_hand_is_checked_before_the_ledger() -> None:
    """``TreeHead("12", root)`` failed on a bare comparison, and an upper-case root was
    reported as entries that were not the ones it was taken from."""
    ledger = _ledger()
    head = ledger.tree_head()
    cases: list[tuple[object, str, str]] = [
        (
            replace(head, size="5"),  # type: ignore[arg-type]
            "trusted.size",
            _whole_number("trusted.size", "5", "str"),
        ),
        (replace(head, size=-1), "trusted.size", "trusted.size must be 0 or more, not -1"),
        (
            replace(head, root=head.root.upper()),
            "trusted.root",
            "trusted.root must be a SHA-256 hash as 64 lowercase hex digits, not "
            f"{head.root.upper()!r}",
        ),
        (
            str(head),
            "trusted",
            "trusted must be a TreeHead (TreeHead.parse reads SIZE:ROOT), not str",
        ),
    ]
    for trusted, parameter, message in cases:
        with pytest.raises(ProofError) as caught:
            verify_ledger(ledger.backend, trusted=trusted)  # type: ignore[arg-type]
        assert (caught.value.parameter, str(caught.value)) == (parameter, message)
    assert verify_ledger(ledger.backend, trusted=TreeHead.parse(str(head).upper())).ok


@pytest.mark.parametrize("path", HAPPY, ids=[str(path.relative_to(VECTORS)) for path in HAPPY])
def test_a_vector_with_its_numbers_as_text_is_refused_naming_the_field(path: Path) -> None:
    data = json.loads(path.read_text())
    proof = [base64.b64decode(element) for element in data["proof"] or []]
    if "leafIdx" in data:
        leaf, root = base64.b64decode(data["leafHash"]), base64.b64decode(data["root"])
        verify_inclusion(leaf, data["leafIdx"], data["treeSize"], proof, root)
        for name, at in (("index", 1), ("size", 2)):
            arguments: list[Any] = [leaf, data["leafIdx"], data["treeSize"], proof, root]
            arguments[at] = str(arguments[at])
            with pytest.raises(ProofError) as caught:
                verify_inclusion(*arguments)
            assert caught.value.parameter == name
    else:
        old, new = base64.b64decode(data["root1"]), base64.b64decode(data["root2"])
        verify_consistency(data["size1"], data["size2"], old, new, proof)
        for name, at in (("old_size", 0), ("new_size", 1)):
            arguments = [data["size1"], data["size2"], old, new, proof]
            arguments[at] = str(arguments[at])
            with pytest.raises(ProofError) as caught:
                verify_consistency(*arguments)
            assert caught.value.parameter == name
