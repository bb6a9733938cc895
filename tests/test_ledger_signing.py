"""A ledger signs no checkpoint of entries that fail their checks (``Ledger.checkpoint``).

A signed checkpoint is an operator's trust anchor, and ``assay ledger checkpoint`` signed a
copy whose entry 4 had been edited, or whose entry 5 was not JSON. Each case below runs on
every backend: the ledger refuses with ``LedgerIntegrityError`` naming the first bad entry or
checkpoint, and stores nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from assay.clock import VirtualClock
from assay.errors import LedgerIntegrityError
from assay.ledger import Ledger, MemoryBackend, SigningKey, soundness, verify_ledger
from assay.ledger.backends.stored import checkpoint_fields
from assay.ledger.merkle import leaf_hash
from ledger_stores import KINDS, Store

VERIFY_THE_LEDGER = (
    "verify the ledger (assay ledger verify, or verify_ledger) to find what else is wrong"
)


def _store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    postgres_url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    subject = Store(request.param, tmp_path, postgres_url)
    yield subject
    subject.close()


store = pytest.fixture(params=KINDS)(_store)
"""A fresh ledger of each kind."""

database = pytest.fixture(params=("sqlite", "postgres"))(_store)
"""A fresh ledger in each real database, where rows can go missing and checkpoints change."""


def _ledger(store: Store, entries: int = 0) -> Ledger:
    ledger = Ledger(store.open(), clock=VirtualClock(wall_start=datetime(2026, 1, 1, tzinfo=UTC)))
    for n in range(entries):
        ledger.append("fire", {"n": n})
    return ledger


def _store_entry(store: Store, ledger: Ledger, seq: int, text: bytes) -> None:
    """Put ``text`` where entry ``seq`` is stored, as someone with access to the store could;
    the hash column too, when ``text`` is an entry with a hash."""
    backend = ledger.backend
    if isinstance(backend, MemoryBackend):
        kept = backend._entries[seq - 1]
        backend._entries[seq - 1] = (*kept[:-1], text)
        return
    mark = "%s" if store.kind == "postgres" else "?"
    update = f"UPDATE {{entries}} SET entry = {mark} WHERE seq = {mark}"
    store.tamper(update, (text.decode(), seq))
    with contextlib.suppress(ValueError):
        said = json.loads(text)["hash"]
        store.tamper(f"UPDATE {{entries}} SET hash = {mark} WHERE seq = {mark}", (said, seq))


def _resealed(ledger: Ledger, seq: int, **changes: Any) -> bytes:
    """Entry ``seq`` with ``changes`` made and its hash made again to match."""
    entry = ledger.entry(seq)
    assert entry is not None
    fields = {**entry.to_dict(), **changes}
    del fields["hash"]
    return rfc8785.dumps({**fields, "hash": hashlib.sha256(rfc8785.dumps(fields)).hexdigest()})


def _refused(ledger: Ledger, key: SigningKey) -> LedgerIntegrityError:
    stored = len(ledger.backend.stored_checkpoints())
    with pytest.raises(LedgerIntegrityError) as caught:
        ledger.checkpoint(key)
    assert len(ledger.backend.stored_checkpoints()) == stored, "a checkpoint was stored"
    return caught.value


def test_an_edited_entry_is_named_and_nothing_is_signed(store: Store) -> None:
    ledger = _ledger(store, 10)
    edited = ledger.entry(4)
    assert edited is not None
    _store_entry(store, ledger, 4, edited.canonical.replace(b'"n":3', b'"n":33'))
    fresh = Ledger(store.open())  # as assay ledger checkpoint opens it
    error = _refused(fresh, SigningKey.generate())
    changed = edited.canonical.replace(b'"n":3', b'"n":33')
    hashless = changed.replace(f',"hash":"{edited.hash}"'.encode(), b"")
    recomputed = hashlib.sha256(hashless).hexdigest()
    reason = f"hash {edited.hash} does not match its fields, which hash to {recomputed}"
    assert (error.seq, error.field, error.reason, error.checkpoint) == (4, "hash", reason, None)
    assert str(error) == f"{fresh.url}: entry 4: {reason}; nothing was signed: {VERIFY_THE_LEDGER}"


def test_an_entry_that_is_not_json_is_named(store: Store) -> None:
    ledger = _ledger(store, 10)
    _store_entry(store, ledger, 5, b"not json")
    error = _refused(Ledger(store.open()), SigningKey.generate())
    assert (error.seq, error.field) == (5, "entry")
    assert (
        error.reason == "the stored entry is not JSON (Expecting value: line 1 column 1 (char 0))"
    )


def test_a_missing_entry_is_named(database: Store) -> None:
    _ledger(database, 12)
    database.tamper("DELETE FROM {entries} WHERE seq = 9")
    error = _refused(Ledger(database.open()), SigningKey.generate())
    assert (error.seq, error.field) == (9, "seq")
    assert error.reason == "entry 9 is missing: the next stored entry has seq 10"


def test_after_a_checkpoint_an_entry_stored_since_is_checked(store: Store) -> None:
    key = SigningKey.generate()
    ledger = _ledger(store, 10)
    assert ledger.checkpoint(key).size == 10
    for n in range(10, 15):
        ledger.append("fire", {"n": n})
    _store_entry(store, ledger, 13, _resealed(ledger, 13, body={"n": "forged"}))
    fourteen = ledger.entry(14)
    assert fourteen is not None
    error = _refused(Ledger(store.open()), key)
    assert (error.seq, error.field) == (14, "prev_hash")
    assert error.reason.startswith(f"prev_hash {fourteen.prev_hash} does not link to entry 13")


def test_an_entry_a_checkpoint_covers_is_named_when_its_root_no_longer_holds(
    store: Store,
) -> None:
    key = SigningKey.generate()
    ledger = _ledger(store, 10)
    ledger.checkpoint(key)
    ledger.append("fire", {"n": 10})
    _store_entry(store, ledger, 3, _resealed(ledger, 3, body={"n": "forged"}))
    error = _refused(Ledger(store.open()), key)
    assert (error.seq, error.field) == (4, "prev_hash")  # verify_ledger finds the first


def test_an_entry_changed_after_this_ledger_took_it_in_is_named(store: Store) -> None:
    """Rewritten whole (its hash made again), the last entry is a sound ledger's last entry;
    only the tree that took the original in can tell, and it must not sign the original's
    root over entries that are no longer it."""
    key = SigningKey.generate()
    ledger = _ledger(store, 10)
    ledger.checkpoint(key)
    ledger.append("fire", {"n": 10})
    forged = _resealed(ledger, 11, body={"n": "forged"})
    held = ledger.leaf_hashes(11, 12)[0]
    _store_entry(store, ledger, 11, forged)
    error = _refused(ledger, key)
    assert (error.seq, error.field) == (11, "entry")
    assert error.reason == (
        f"entry 11 as stored now has leaf hash {leaf_hash(forged).hex()}, "
        f"but the ledger's tree took it in as {held.hex()}: it was changed after it was stored"
    )
    assert Ledger(store.open()).checkpoint(key).size == 11  # read afresh, it is sound


def test_a_checkpoint_whose_signature_no_longer_holds_is_named(store: Store) -> None:
    key = SigningKey.generate()
    ledger = _ledger(store, 4)
    signed = key.sign(4, ledger.root(4), "2026-01-01T00:00:00Z")
    forged = signed.model_copy(update={"timestamp": "2026-01-02T00:00:00Z"})
    ledger.backend.add_checkpoint(forged)
    error = _refused(ledger, key)
    assert (error.seq, error.field, error.checkpoint) == (None, "signature", 1)
    assert str(error).startswith(f"{ledger.url}: checkpoint 1: the signature does not match")


def test_a_checkpoint_the_entries_no_longer_extend_is_named(database: Store) -> None:
    key = SigningKey.generate()
    ledger = _ledger(database, 6)
    ledger.checkpoint(key)
    mark = "%s" if database.kind == "postgres" else "?"
    database.tamper(f"UPDATE {{checkpoints}} SET size = {mark}", (5,))
    error = _refused(Ledger(database.open()), key)
    assert (error.seq, error.field, error.checkpoint) == (None, "root", 1)
    assert error.reason.startswith("checkpoint 1's root for 5 entries is ")


def test_a_checkpoint_covering_entries_no_longer_stored_is_named(database: Store) -> None:
    key = SigningKey.generate()
    _ledger(database, 6).checkpoint(key)
    database.tamper("DELETE FROM {entries} WHERE seq = 6")
    error = _refused(Ledger(database.open()), key)
    assert (error.seq, error.field, error.checkpoint) == (6, "seq", 1)
    assert error.reason == (
        "entry 6 is missing: checkpoint 1 covers 6 entries, but only 5 are stored"
    )


def test_only_the_entries_since_the_keys_last_checkpoint_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A full verification costs about 28 µs an entry; after the first checkpoint, signing
    costs what the entries stored since cost to check."""
    parsed: list[int] = []
    verified: list[object] = []
    parse = soundness.parse_entry

    def counting_parse(text: bytes, seq: int) -> Any:
        parsed.append(seq)
        return parse(text, seq)

    def counting_verify(backend: Any, *args: Any, **kwargs: Any) -> Any:
        verified.append(backend)
        return verify_ledger(backend, *args, **kwargs)

    monkeypatch.setattr(soundness, "parse_entry", counting_parse)
    monkeypatch.setattr(soundness, "verify_ledger", counting_verify)
    key, other = SigningKey.generate(), SigningKey.generate()
    ledger = Ledger(MemoryBackend())
    for n in range(100):
        ledger.append("fire", {"n": n})
    ledger.checkpoint(key)
    assert (len(verified), parsed) == (1, [])  # the key's first: verify_ledger, in full
    for n in range(100, 105):
        ledger.append("fire", {"n": n})
    assert ledger.checkpoint(key).size == 105
    assert (len(verified), parsed) == (1, [100, 101, 102, 103, 104, 105])
    parsed.clear()
    assert ledger.checkpoint(key).size == 105
    assert parsed == [105]
    ledger.checkpoint(other)  # another key vouches for nothing yet: in full again
    assert len(verified) == 2
    assert len(ledger.checkpoints()) == 4
    assert ledger.verify(key.public_key).problem is not None  # the other key's is not key's
    report = ledger.verify()
    assert (report.ok, report.checkpoints) == (True, 4)


def test_a_sound_ledger_is_signed_where_the_entries_stored_end(store: Store) -> None:
    key = SigningKey.generate()
    empty = _ledger(store)
    assert (empty.checkpoint(key).size, empty.checkpoint(key).size) == (0, 0)
    for n in range(3):
        empty.append("fire", {"n": n})
    checkpoint = empty.checkpoint(key)
    assert (checkpoint.size, checkpoint.root) == (3, empty.root())
    assert checkpoint_fields(empty.checkpoints()[-1]) == checkpoint_fields(checkpoint)
    assert verify_ledger(empty.backend, key.public_key).ok
