"""The ledger's C modules and their pure-Python twins give the same bytes.

Where ``_canonical`` was not built, ``_pycanonical`` takes no value as plain, and every value
goes where the C module hands on what it does not take: its text to ``rfc8785``, its draft to
``EntryDraft``. Where ``_seal`` was not built, ``_pyseal`` seals and hashes with hashlib. The
property holds each C function equal to what stands in for it, on entries of the shapes the
ledger stores; a ledger run in a process without the C modules stores the same entries and
the same tree as one with them, and verifies.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.errors import LedgerEntryError
from assay.ledger import _canonical, _pycanonical, _pyseal, _seal, compiled
from assay.ledger.canonical import loads
from assay.ledger.entry import DRAFTED_KINDS, Entry, EntryDraft

TIMESTAMP = "2026-01-01T00:00:00.000000Z"
SAFE = 2**53 - 1

# Text across the planes: controls and escapes, Latin-1, the end of the BMP, non-BMP
# characters (whose UTF-16 order differs from code-point order) and now and then a lone
# surrogate, which no canonical JSON holds.
texts = st.text(
    alphabet=st.sampled_from('\x00\x1f"\\/\b\t\n\u2028\ue000\uffff\U00010000\U0001f600é')
    | st.characters(),
    max_size=10,
)
numbers = st.one_of(
    st.integers(-SAFE, SAFE),
    st.sampled_from([SAFE, -SAFE, 0, SAFE + 1, 2**64]),  # the edge, and just past it
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-0.0, 1e21, 1e-7, 5e-324, 2.0**53, 0.1, float("nan")]),
)
json_values = st.recursive(
    st.none() | st.booleans() | numbers | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=20,
)
# What hosts and workflows store: a fire's fields around its arguments, a verdict's outcome.
bodies = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"action": texts, "args": json_values, "writes": st.lists(texts, max_size=3)},
        optional={"owner": texts, "state_version": st.integers(0, SAFE)},
    ),
    st.fixed_dictionaries(
        {"subject": st.just("verify"), "outcome": st.dictionaries(texts, json_values)}
    ),
)
ids = st.none() | texts
hashes = st.binary(min_size=32, max_size=32).map(bytes.hex)


def _written(value: Any) -> tuple[bytes, Any] | None:
    """What the Python path writes for ``value`` and reads back; ``None`` if it refuses."""
    try:
        text = rfc8785.dumps(value)
    except (ValueError, TypeError):
        return None
    return text, loads(text)


def _sealed(entries: list[Entry]) -> list[tuple[Entry, bytes, bytes, str]]:
    return [(entry, entry.canonical, entry.leaf_hash, repr(entry)) for entry in entries]


@settings(max_examples=500)
@given(
    kind=st.sampled_from(sorted(DRAFTED_KINDS)),
    drafted=st.lists(st.tuples(bodies, ids, ids, ids), min_size=1, max_size=4),
    head_seq=st.integers(0, SAFE),
    head_hash=hashes,
)
def test_the_python_twins_give_what_the_c_modules_give(
    kind: str,
    drafted: list[tuple[Any, str | None, str | None, str | None]],
    head_seq: int,
    head_hash: str,
) -> None:
    drafts = []
    for body, session, run, transition in drafted:
        assert _pycanonical.canonical(body) is None
        assert _pycanonical.canonical_copy(body) is None
        found = _canonical.canonical_copy(body)
        if found is not None:  # plain JSON: the C module writes it, as rfc8785 would
            expected = _written(body)
            assert expected is not None
            assert (found[0], repr(found[1])) == (expected[0], repr(expected[1]))
            assert _canonical.canonical(body) == expected[0]
        fields = (kind, TIMESTAMP, body, session, run, transition)
        assert _pycanonical.stamped_draft(EntryDraft, *fields) is None
        made = _canonical.stamped_draft(EntryDraft, *fields)
        try:
            draft = EntryDraft(*fields)
        except LedgerEntryError:
            assert made is None  # refused either way, and the dataclass says why
            continue
        if made is not None:
            assert made == draft
            assert (made._head, made._run, made._rest) == (draft._head, draft._run, draft._rest)
        drafts.append(draft)
    if not drafts:
        return
    in_c = _seal.seal_all(Entry, drafts, head_seq, head_hash)
    in_python = _pyseal.seal_all(Entry, drafts, head_seq, head_hash)
    assert _sealed(in_python) == _sealed(in_c)
    assert [entry.seq for entry in in_c] == list(range(head_seq + 1, head_seq + 1 + len(drafts)))
    level = bytearray(b"".join(entry.leaf_hash for entry in in_c))
    pairs = len(level) // 64 * 64
    assert _pyseal.node_hashes(level, 0, pairs) == _seal.node_hashes(level, 0, pairs)
    assert _pyseal.node_hashes(bytes(level), 0, pairs) == _seal.node_hashes(bytes(level), 0, pairs)


@pytest.mark.parametrize(("start", "stop"), [(0, 63), (64, 192), (-64, 0), (64, 0)])
def test_both_node_hashes_refuse_what_is_not_whole_pairs_within_the_level(
    start: int, stop: int
) -> None:
    level = bytes(range(128))
    for node_hashes in (_seal.node_hashes, _pyseal.node_hashes):
        with pytest.raises(
            ValueError, match=r"\Anode_hashes needs whole 64-byte pairs within the level\Z"
        ):
            node_hashes(level, start, stop)


def test_this_build_runs_on_the_c_modules() -> None:
    assert sorted(compiled.COMPILED) == ["_canonical", "_seal"]
    assert compiled.seal_all is _seal.seal_all
    assert compiled.canonical_copy is _canonical.canonical_copy


# Run as its own process: with "pure", as if neither C module was built (a None in
# sys.modules makes importing it raise ImportError).
_RUN = """
import json, sys
if sys.argv[1] == "pure":
    sys.modules["assay.ledger._canonical"] = None
    sys.modules["assay.ledger._seal"] = None
from assay.clock import VirtualClock
from assay.ledger import Ledger, SQLiteBackend, compiled

ledger = Ledger(SQLiteBackend(sys.argv[2]), clock=VirtualClock())
ledger.refresh()  # built first, as a daemon's is: it takes in each entry's leaf as sealed
for body in json.loads(sys.argv[3]):
    ledger.append("fire", body, session="s\u00e9")
ledger.store([ledger.draft("verdict", body, run="r") for body in json.loads(sys.argv[3])])
report = ledger.verify()
print(json.dumps({
    "compiled": sorted(compiled.COMPILED),
    "verified": [report.ok, report.size, report.root],
    "root": ledger.root(),
    "proof": ledger.prove(3).path,
    "entries": [entry.canonical.decode() for entry in ledger.iterate()],
}))
ledger.close()
"""

_BODIES = [
    {"n": 1, "text": "é \U0001f600 \u2028 \x1f", "\U00010000": [1, 2], "\ue000": {}},
    {"big": SAFE, "small": -SAFE, "float": 1.5, "whole": 2.0, "tiny": 5e-324, "huge": 1e21},
    {"nested": {"a": [{"b": [None, True, False, 0.1]}], "z": {"y": {"x": "deep"}}}},
    [],
    "a string body",
    {"args": {"to": "ops", "message_id": "m1"}, "writes": ["inbox.sent_count"]},
]


def _run(mode: str, path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, mode, str(path), json.dumps(_BODIES)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_without_the_c_modules_the_ledger_stores_and_verifies_the_same(tmp_path: Path) -> None:
    pure = _run("pure", tmp_path / "pure.db")
    built = _run("compiled", tmp_path / "compiled.db")
    assert (pure["compiled"], built["compiled"]) == ([], ["_canonical", "_seal"])
    size = 2 * len(_BODIES)
    assert pure["verified"] == [True, size, pure["root"]]
    assert len(pure["entries"]) == size
    assert pure["entries"] == built["entries"]
    assert (pure["root"], pure["proof"]) == (built["root"], built["proof"])
