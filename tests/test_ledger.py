"""The Ledger facade, entries, proofs, offline export, and opening a ledger by URL."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import hashlib
import io
import json
import logging
import random
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

import assay.ledger.entry as entry_module
from assay.clock import SYSTEM_CLOCK, VirtualClock
from assay.errors import (
    CheckpointError,
    LedgerEntryError,
    LedgerError,
    LedgerIntegrityError,
    ProofError,
    WrongTypeError,
)
from assay.ledger import (
    GENESIS_HASH,
    EntryDraft,
    Ledger,
    MemoryBackend,
    SigningKey,
    SQLiteBackend,
    _seal,
    export_jsonl,
    open_backend,
    open_ledger,
    verify_jsonl,
    verify_ledger,
)
from assay.ledger.backends import group_commit
from assay.ledger.backends.group_commit import GroupCommit, GroupCommitStatistics
from assay.ledger.backends.memory import _kept
from assay.ledger.backends.postgres import PostgresBackend
from assay.ledger.entry import (
    DRAFTED_KINDS,
    Entry,
    EntryKind,
    draft_now,
    entry_from_canonical,
    format_timestamp,
    parse_entry,
    seal,
    seal_all,
    stamp,
)
from assay.ledger.merkle import MerkleTree, leaf_hash
from assay.ledger.proof import TreeHead
from assay.redaction import Redaction
from ledger_stores import draft
from strategies import json_values

START = datetime(2026, 7, 23, 16, 49, 52, 123456, tzinfo=UTC)


def memory_ledger(**options: Any) -> Ledger:
    return Ledger(MemoryBackend(), clock=VirtualClock(wall_start=START), **options)


ids = st.none() | st.text(max_size=12)


@given(body=json_values, session=ids, run=ids, transition=ids, seq=st.integers(1, 2**53 - 1))
def test_a_sealed_entry_is_its_rfc8785_form_and_parses_back(
    body: Any, session: str | None, run: str | None, transition: str | None, seq: int
) -> None:
    try:
        entry_draft = EntryDraft(
            "verdict", "2026-01-01T00:00:00.000000Z", body, session, run, transition
        )
    except LedgerEntryError:
        return  # a value RFC 8785 cannot carry (a lone surrogate, an integer beyond 2**53)
    entry = seal(entry_draft, seq, "ab" * 32)
    assert entry.canonical == rfc8785.dumps(entry.to_dict())
    without_hash = {key: value for key, value in entry.to_dict().items() if key != "hash"}
    assert entry.hash == hashlib.sha256(rfc8785.dumps(without_hash)).hexdigest()
    assert parse_entry(entry.canonical, seq) == entry
    assert entry.leaf_hash == leaf_hash(entry.canonical)


def test_an_entry_sealed_in_c_is_the_frozen_entry_python_would_make() -> None:
    made = seal_all([draft(body={"n": 1}), draft(body={"n": 2})], 7, "cd" * 32)
    second = made[1]
    by_hand = Entry(
        seq=9,
        timestamp=second.timestamp,
        kind=second.kind,
        session=second.session,
        run=second.run,
        transition=second.transition,
        body={"n": 2},
        prev_hash=made[0].hash,
        hash=second.hash,
        canonical=second.canonical,
    )
    assert second == by_hand and repr(second) == repr(by_hand)
    assert (made[0].seq, made[0].prev_hash) == (8, "cd" * 32)
    assert second.leaf_hash == by_hand.leaf_hash == leaf_hash(second.canonical)
    with pytest.raises(dataclasses.FrozenInstanceError):
        second.seq = 1  # type: ignore[misc]


drafted_kinds = st.sampled_from(sorted(DRAFTED_KINDS)) | st.sampled_from(list(EntryKind))
plain_or_not = json_values | st.tuples(json_values) | st.builds(OrderedDict, st.just({"a": 1}))


@given(
    kind=drafted_kinds | st.just("checkpoint") | st.just("nope"),
    body=plain_or_not,
    session=ids | st.integers(),
    run=ids,
    transition=ids | st.just("lone \ud800"),
)
def test_a_draft_made_in_c_is_the_draft_the_dataclass_makes(
    kind: str, body: Any, session: str | None, run: str | None, transition: str | None
) -> None:
    clock = VirtualClock(wall_start=START)
    expected_timestamp = format_timestamp(START)
    try:
        expected = EntryDraft(kind, expected_timestamp, body, session, run, transition)
    except LedgerEntryError as refusal:
        with pytest.raises(LedgerEntryError) as raised:
            draft_now(clock, kind, body, session=session, run=run, transition=transition)
        assert str(raised.value) == str(refusal)
        return
    made = draft_now(clock, kind, body, session=session, run=run, transition=transition)
    assert made == expected and type(made.kind) is str
    assert (made._head, made._run, made._rest) == (expected._head, expected._run, expected._rest)
    assert seal(made, 3, "ab" * 32) == seal(expected, 3, "ab" * 32)
    if isinstance(body, dict | list):
        assert made.body is not body  # a copy, never the caller's value
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.kind = "fire"  # type: ignore[misc]


def test_a_body_nested_too_deeply_for_either_draft_is_refused_with_its_reason() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(LedgerEntryError, match="body cannot be written as RFC 8785 JSON: it nests"):
        draft_now(VirtualClock(wall_start=START), "fire", {"deep": deep})


def test_node_hashes_take_whole_pairs_within_the_level() -> None:
    level = bytes(range(128))
    assert _seal.node_hashes(level, 0, 128) == b"".join(
        hashlib.sha256(b"\x01" + level[at : at + 64]).digest() for at in (0, 64)
    )
    assert _seal.node_hashes(bytearray(level), 64, 64) == b""
    for start, stop in ((0, 63), (64, 192), (-64, 0), (64, 0)):
        with pytest.raises(ValueError, match="whole 64-byte pairs within the level"):
            _seal.node_hashes(level, start, stop)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"kind": "explosion"},
            "kind",
            "kind must be one of commit, escalation, fire, park, refusal, resume, "
            "settlement, verdict, not 'explosion'",
        ),
        (
            {"kind": "checkpoint"},
            "kind",
            "kind 'checkpoint' is no entry's: a checkpoint is a signed tree head, made by "
            "Ledger.checkpoint (assay ledger checkpoint) and stored apart from the entries; an "
            "entry's kind is one of commit, escalation, fire, park, refusal, resume, "
            "settlement, verdict",
        ),
        (
            {"timestamp": "2026-01-01 00:00"},
            "timestamp",
            "timestamp must be RFC 3339 UTC text like 2026-01-01T00:00:00.000000Z "
            "(see format_timestamp), not '2026-01-01 00:00'",
        ),
        ({"session": 7}, "session", "session must be a string or None, not int"),
        (
            {"run": "\ud800"},
            "run",
            "run '\\ud800' is not valid Unicode text (it holds a lone surrogate)",
        ),
        (
            {"body": {"n": float("nan")}},
            "body",
            "body cannot be written as RFC 8785 JSON: nan is not representable in JCS; use JSON "
            "values only (objects with string keys, arrays, strings, finite numbers, integers "
            "within ±(2**53 - 1), booleans, null)",
        ),
        (
            {"body": {1: "one"}},
            "body",
            "body cannot be written as RFC 8785 JSON: object keys must be strings; use JSON "
            "values only (objects with string keys, arrays, strings, finite numbers, integers "
            "within ±(2**53 - 1), booleans, null)",
        ),
    ],
)
def test_a_malformed_entry_is_refused_naming_its_field(
    changes: dict[str, Any], field: str, message: str
) -> None:
    fields: dict[str, Any] = {
        "kind": "fire",
        "timestamp": "2026-01-01T00:00:00.000000Z",
        "body": {},
        **changes,
    }
    with pytest.raises(LedgerEntryError) as caught:
        EntryDraft(**fields)
    assert (caught.value.field, str(caught.value)) == (field, message)


def test_a_draft_keeps_no_reference_to_the_callers_body() -> None:
    body = {"items": [1, 2]}
    made = draft(body=body)
    body["items"].append(3)
    assert made.body == {"items": [1, 2]}


def test_append_stamps_the_clocks_wall_time_and_redacts_the_body() -> None:
    ledger = memory_ledger(redaction=Redaction(["card", "user.password", "items.*.secret"]))
    entry = ledger.append(
        "fire",
        {
            "card": "4111 1111 1111 1111",
            "user": {"name": "ada", "password": "hunter2"},
            "items": [{"secret": 1, "sku": "a"}, {"secret": 2}],
        },
        session="s1",
        transition="checkout.pay#1",
        run="r1",
    )
    assert entry.timestamp == "2026-07-23T16:49:52.123456Z"
    assert entry.body == {
        "card": "[redacted]",
        "user": {"name": "ada", "password": "[redacted]"},
        "items": [{"secret": "[redacted]", "sku": "a"}, {"secret": "[redacted]"}],
    }
    assert (entry.session, entry.transition, entry.run) == ("s1", "checkout.pay#1", "r1")
    assert b"hunter2" not in entry.canonical


@pytest.mark.parametrize(
    "nanoseconds",
    [
        0,
        1_785_000_000_999_999_999,  # the last microsecond of a second, then the next second
        1_785_000_001_000_000_000,
        1_785_000_001_000_000_999,
        1_785_000_001_000_001_000,
        1_785_000_001_123_456_789,
        1_785_000_000_500_000_000,  # back a second: the cached second is not reused
    ],
)
def test_a_system_clock_stamp_is_the_formatted_wall_time(
    nanoseconds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(entry_module.time, "time_ns", lambda: nanoseconds)
    expected = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanoseconds // 1000)
    assert stamp(SYSTEM_CLOCK) == format_timestamp(expected)


def test_a_system_clock_stamp_falls_between_two_readings_of_its_wall() -> None:
    before = format_timestamp(SYSTEM_CLOCK.wall())
    stamped = stamp(SYSTEM_CLOCK)
    assert before <= stamped <= format_timestamp(SYSTEM_CLOCK.wall())
    virtual = VirtualClock(wall_start=datetime(2026, 7, 23, 16, 49, 52, 123456, tzinfo=UTC))
    assert stamp(virtual) == "2026-07-23T16:49:52.123456Z"


def test_proofs_of_inclusion_and_consistency_verify_for_every_size() -> None:
    ledger = memory_ledger()
    entries = [ledger.append("fire", {"n": n}) for n in range(1, 18)]
    for size in range(1, 18):
        for seq in range(1, size + 1):
            ledger.prove(seq, size).verify(entries[seq - 1])
        for old in range(1, size + 1):
            ledger.consistency(old, size).verify()
    assert ledger.root() == MerkleTree(entry.leaf_hash for entry in entries).root().hex()
    proof = ledger.prove(3)
    with pytest.raises(ProofError):
        proof.verify(entries[3])
    with pytest.raises(ProofError):
        type(proof)(proof.seq, proof.size, proof.leaf_hash, "00" * 32, proof.path).verify()
    with pytest.raises(LedgerEntryError) as caught:
        ledger.prove(18)
    assert str(caught.value) == "seq must be between 1 and the tree's size (17), not 18"


def test_a_reopened_ledger_rebuilds_the_same_tree(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger:
        for n in range(40):
            ledger.append("verdict", {"n": n})
        head = ledger.tree_head()
    with open_ledger(url) as again:
        assert again.tree_head() == head
        assert again.size == 40
        assert again.consistency(25).new_root == head.root


def test_a_ledger_takes_in_what_another_writer_stored(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with Ledger(SQLiteBackend(path)) as first, Ledger(SQLiteBackend(path)) as second:
        first.append("fire", {"by": "first"})
        assert second.size == 1  # its tree, built on first use, reads what first stored
        second.append("fire", {"by": "second"})
        first.append("fire", {"by": "first"})
        assert second.size == 2  # its own entry is taken in; first's last is not, yet
        assert second.refresh() == first.tree_head()
        assert second.prove(3).root == first.root()


def test_the_tree_is_built_on_first_use_not_when_the_ledger_opens(tmp_path: Path) -> None:
    # Opening a ledger read back and hashed every entry, so reading one entry, a query or
    # an export of a large ledger first paid for a tree it never used.
    path = tmp_path / "ledger.db"
    with Ledger(SQLiteBackend(path)) as writer:
        for n in range(5):
            writer.append("fire", {"n": n})
        expected = writer.tree_head()
    backend = SQLiteBackend(path)
    leaves_read: list[tuple[int, int]] = []
    read_canonical = backend.read_canonical

    def counted(start: int, stop: int) -> list[tuple[int, bytes]]:
        leaves_read.append((start, stop))
        return read_canonical(start, stop)

    backend.read_canonical = counted  # type: ignore[method-assign]
    with Ledger(backend) as ledger:
        assert ledger.entry(3) is not None
        assert len(ledger.query(kind="fire")) == 5
        assert leaves_read == [(3, 4)]  # entry 3 alone: no tree was built
        ledger.append("fire", {"n": 5})  # an append before the tree is built leaves it be
        ledger.append("fire", {"n": 6})
        assert leaves_read == [(3, 4)]
        assert ledger.prove(2).size == 7  # built now, with both appends
        assert ledger.root(5) == expected.root
        assert ledger.verify().root == ledger.root()
        assert leaves_read[1] == (1, 8)  # every stored entry, read once for the tree


def test_concurrent_threads_and_tasks_keep_the_tree_in_step(tmp_path: Path) -> None:
    ledger = Ledger(SQLiteBackend(tmp_path / "ledger.db"))

    def appender() -> None:
        for n in range(25):
            ledger.append("fire", {"n": n})

    async def tasks() -> list[int]:
        entries = await asyncio.gather(*(ledger.aappend("verdict", {"t": t}) for t in range(40)))
        return [entry.seq for entry in entries]

    workers = [threading.Thread(target=appender) for _ in range(4)]
    for worker in workers:
        worker.start()
    seqs = asyncio.run(tasks())
    for worker in workers:
        worker.join()
    assert len(set(seqs)) == 40
    report = ledger.verify()
    assert (report.ok, report.size, report.root) == (True, 140, ledger.root())
    ledger.close()


@pytest.mark.anyio
async def test_aappend_stores_tasks_entries_in_the_order_they_asked(tmp_path: Path) -> None:
    # Forty tasks ask at once: their drafts are queued in that order, and the writer commits
    # them together; each task is answered its own entry.
    backend = SQLiteBackend(tmp_path / "ledger.db")
    batches: list[int] = []
    backend.add_commit_listener(lambda entries: batches.append(len(entries)))
    ledger = Ledger(backend)
    entries = await asyncio.gather(*(ledger.aappend("verdict", {"t": t}) for t in range(40)))
    assert [(entry.seq, entry.body["t"]) for entry in entries] == [(t + 1, t) for t in range(40)]
    assert batches == [40]
    assert ledger.read(1, 41) == list(entries)
    ledger.close()


@pytest.mark.anyio
async def test_aappend_on_memory_stores_at_once_on_the_loop() -> None:
    ledger = memory_ledger()
    stored_by: list[int] = []
    ledger.backend.add_commit_listener(lambda entries: stored_by.append(threading.get_ident()))
    entry = await ledger.aappend("fire", {"n": 1})
    assert stored_by == [threading.get_ident()]
    assert ledger.entry(1) == entry


class _FailingOnce(SQLiteBackend):
    """An SQLite ledger whose next append fails, storing nothing, once told to."""

    fail_next = False

    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        if self.fail_next:
            self.fail_next = False
            raise LedgerError("the disk is full; nothing in this batch was stored", url=self.url)
        return super().append(drafts)


@pytest.mark.anyio
async def test_a_failed_aappend_raises_what_append_would_and_the_next_is_stored(
    tmp_path: Path,
) -> None:
    backend = _FailingOnce(tmp_path / "ledger.db")
    ledger = Ledger(backend)
    await ledger.aappend("fire", {"n": 0})
    backend.fail_next = True
    with pytest.raises(
        LedgerError, match=r"\Athe disk is full; nothing in this batch was stored\Z"
    ):
        await ledger.aappend("fire", {"n": 1})
    third = await ledger.aappend("fire", {"n": 2})
    assert (third.seq, third.body) == (2, {"n": 2})
    assert [entry.body["n"] for entry in ledger.query()] == [0, 2]
    assert ledger.verify().ok
    ledger.close()


def test_a_signed_checkpoint_verifies_and_a_wrong_key_is_reported() -> None:
    ledger = memory_ledger()
    key, other = SigningKey.generate(), SigningKey.generate()
    for n in range(5):
        ledger.append("commit", {"n": n})
    checkpoint = ledger.checkpoint(key)
    assert (checkpoint.size, checkpoint.root) == (5, ledger.root())
    assert checkpoint.timestamp == "2026-07-23T16:49:52.123456Z"
    assert ledger.checkpoints() == [checkpoint]
    good = ledger.verify(key.public_key_pem())
    assert (good.ok, good.checkpoints, good.signatures) == (True, 1, 1)
    bad = ledger.verify(other.public_key)
    assert bad.problem is not None
    assert (bad.problem.checkpoint, bad.problem.field) == (1, "key_id")
    unsigned = ledger.verify()
    assert (unsigned.ok, unsigned.signatures) == (True, 0)
    assert unsigned.describe().endswith(
        "1 checkpoints match (signatures not checked: no public key given)"
    )


def test_a_report_names_the_first_bad_entry_and_raises_on_request() -> None:
    backend = MemoryBackend()
    entries = backend.append([draft(body={"n": n}) for n in range(5)])
    forged = seal(draft(body={"n": "forged"}), 3, entries[1].hash)
    backend._entries[2] = _kept(forged)  # what a compromised store could hand back
    report = verify_ledger(backend)
    assert report.problem is not None
    assert (report.size, report.problem.seq, report.problem.field) == (3, 4, "prev_hash")
    assert report.problem.reason == (
        f"prev_hash {entries[2].hash} does not link to entry 3, whose hash is {forged.hash}"
    )
    with pytest.raises(LedgerIntegrityError) as caught:
        report.check()
    assert (caught.value.seq, caught.value.field) == (4, "prev_hash")
    assert str(caught.value).startswith("memory:: entry 4: prev_hash ")


def test_an_export_verifies_offline_and_a_changed_line_does_not() -> None:
    ledger = memory_ledger()
    key = SigningKey.generate()
    for n in range(12):
        ledger.append("settlement", {"n": n, "note": "café"})
    ledger.checkpoint(key)
    exported = io.StringIO()
    assert export_jsonl(ledger.backend, exported) == 12
    lines = exported.getvalue().splitlines(keepends=True)
    assert len(lines) == 13
    assert json.loads(lines[-1])["checkpoint"]["size"] == 12
    report = verify_jsonl(lines, key.public_key)
    assert (report.ok, report.size, report.root, report.signatures) == (
        True,
        12,
        ledger.root(),
        1,
    )
    changed = [*lines]
    changed[6] = changed[6].replace('"n":6', '"n":7')
    assert verify_jsonl(changed).problem.seq == 7  # type: ignore[union-attr]
    dropped = [*lines[:11], lines[12]]
    problem = verify_jsonl(dropped).problem
    assert problem is not None
    assert (problem.seq, problem.checkpoint) == (12, 1)
    swapped = [*lines[:4], lines[5], lines[4], *lines[6:]]
    assert verify_jsonl(swapped).problem.seq == 5  # type: ignore[union-attr]


@given(st.integers(min_value=1, max_value=40), st.data())
def test_only_the_ledger_a_trusted_head_was_taken_from_or_its_extension_meets_it(
    size: int, data: st.DataObject
) -> None:
    ledger = memory_ledger()
    for n in range(size):
        ledger.append("settlement", {"n": n})
    at = data.draw(st.integers(min_value=0, max_value=size), label="head size")
    head = TreeHead.parse(f"{at}:{ledger.root(at).upper()}")  # hex in either case
    assert str(head) == f"{at}:{ledger.root(at)}"
    assert ledger.verify(trusted=head).ok
    exported = io.StringIO()
    export_jsonl(ledger.backend, exported)
    lines = exported.getvalue().splitlines(keepends=True)
    kept = data.draw(st.integers(min_value=0, max_value=size), label="lines kept")
    report = verify_jsonl(lines[:kept], trusted=head)
    assert report.ok is (kept >= at)
    if kept < at:
        assert report.problem is not None
        assert (report.problem.seq, report.problem.field) == (kept + 1, "seq")
    # A head of another ledger's entries, as many of them, is met by none of these.
    other = memory_ledger()
    for n in range(size):
        other.append("settlement", {"n": n + 1})
    problem = other.verify(trusted=ledger.tree_head()).problem
    assert problem is not None
    assert (problem.seq, problem.field) == (None, "root")


@pytest.mark.parametrize("text", ["12", "12:abc", f"-1:{'0' * 64}", f"x:{'0' * 64}", ""])
def test_a_tree_head_that_is_not_size_colon_root_is_refused(text: str) -> None:
    with pytest.raises(ProofError, match="a tree head is written SIZE:ROOT") as caught:
        TreeHead.parse(text)
    assert caught.value.parameter == "head"


def test_a_memory_ledger_keeps_nothing_the_garbage_collector_walks() -> None:
    backend = MemoryBackend()
    ledger = Ledger(backend)
    body = {"observed": {"inbox": {"items": [{"id": n, "read": False} for n in range(5)]}}}
    gc.collect()
    tracked = len(gc.get_objects())
    for n in range(2_000):
        ledger.append("verdict", {**body, "n": n}, session="s", run="r")
    gc.collect()
    # Before, each entry kept its body's dicts and lists (about 14 objects) and the Entry.
    assert len(gc.get_objects()) - tracked < 100
    assert not any(gc.is_tracked(kept) for kept in backend._entries)
    (entry,) = ledger.read(1_999, 2_000)
    assert entry.body == {**body, "n": 1_998}
    assert ledger.query(run="r", limit=1)[0].seq == 1
    assert ledger.verify().ok


def test_follow_yields_stored_entries_then_new_ones() -> None:
    ledger = Ledger(MemoryBackend())
    for n in range(3):
        ledger.append("fire", {"n": n})

    async def follow() -> list[int]:
        seen: list[int] = []
        async for entry in ledger.follow(after=1, interval=0.005):
            seen.append(entry.seq)
            if entry.seq == 3:
                await asyncio.to_thread(ledger.append, "fire", {"n": 3})
            if len(seen) == 3:
                return seen
        return seen

    assert asyncio.run(asyncio.wait_for(follow(), 10)) == [2, 3, 4]


def test_the_genesis_entry_links_to_zeros() -> None:
    entry = memory_ledger().append("fire", {})
    assert (entry.seq, entry.prev_hash) == (1, GENESIS_HASH)


@pytest.mark.parametrize(
    ("url", "backend", "where"),
    [
        ("memory:", "MemoryBackend", None),
        ("sqlite:///ledger.db", "SQLiteBackend", "ledger.db"),
        ("sqlite:", "SQLiteBackend", "assay.db"),
        ("SQLITE:///sub/x.db", "SQLiteBackend", "sub/x.db"),
    ],
)
def test_open_backend_by_url(
    url: str, backend: str, where: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    with open_backend(url) as opened:
        assert type(opened).__name__ == backend
        if where is not None:
            assert isinstance(opened, SQLiteBackend)
            assert opened.path == Path(where)
            assert opened.url == f"sqlite:///{where}"
    if where is not None:
        assert (tmp_path / where).is_file()


def test_an_absolute_sqlite_path_takes_four_slashes(tmp_path: Path) -> None:
    path = tmp_path / "abs.db"
    with open_backend(f"sqlite:///{path}") as opened:
        assert opened.url == f"sqlite:///{path}"
    assert path.is_file()


def test_a_postgresql_url_with_a_schema(postgres_url: str) -> None:
    with open_ledger(f"{postgres_url}?schema=by_url") as ledger:
        ledger.append("fire", {})
        assert ledger.url == f"{postgres_url}?schema=by_url"
        assert ledger.size == 1


ACCEPTED = (
    "the accepted forms are sqlite:///relative/path.db, sqlite:////absolute/path.db, "
    "sqlite: (for ./assay.db), postgresql://user:password@host:5432/database[?schema=name], "
    "memory:"
)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "mysql://admin:hunter2@db/ledger",
            "cannot open a ledger at 'mysql://admin:***@db/ledger': unknown kind of ledger; "
            + ACCEPTED,
        ),
        (
            "ledger.db",
            f"cannot open a ledger at 'ledger.db': unknown kind of ledger; {ACCEPTED}",
        ),
        (
            "sqlite://host/ledger.db",
            "cannot open a ledger at 'sqlite://host/ledger.db': a SQLite URL is sqlite:/// "
            f"followed by the file's path; {ACCEPTED}",
        ),
        (  # urlsplit raised ValueError, which the CLI called an internal error (exit 70)
            "postgres://u:hunter2@[::1:5432/db",
            "cannot open a ledger at 'postgres://u:***@[::1:5432/db': it cannot be read as a "
            f"URL (Invalid IPv6 URL); {ACCEPTED}",
        ),
        (
            "postgresql://u:pw@h/db?schema=a&schema=b",
            "cannot open a ledger at 'postgresql://u:***@h/db?schema=a&schema=b': give at most "
            f"one non-empty schema parameter; {ACCEPTED}",
        ),
    ],
)
def test_an_unaccepted_url_is_refused_with_the_password_hidden(url: str, message: str) -> None:
    with pytest.raises(LedgerError) as caught:
        open_backend(url)
    assert str(caught.value) == message
    assert "hunter2" not in str(caught.value.url)


def test_an_unreachable_postgresql_server_is_reported_without_its_password() -> None:
    with pytest.raises(LedgerError) as caught:
        open_backend("postgresql://assay:hunter2@127.0.0.1:1/ledger?connect_timeout=2")
    message = str(caught.value)
    assert message.startswith(
        "cannot connect to the PostgreSQL ledger "
        "postgresql://assay:***@127.0.0.1:1/ledger?connect_timeout=2: "
    )
    assert "hunter2" not in message


def test_a_sqlite_file_in_a_missing_directory_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "ledger.db"
    with pytest.raises(LedgerError) as caught:
        open_backend(f"sqlite:///{path}")
    assert str(caught.value) == (
        f"cannot open the SQLite ledger sqlite:///{path}: unable to open database file; "
        f"check that the directory {path.parent} exists and is writable"
    )


def test_a_relative_sqlite_path_that_cannot_be_opened_says_how_to_write_an_absolute_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LedgerError) as caught:
        open_backend("sqlite:///tmp/ledger.db")  # meant /tmp/ledger.db
    assert str(caught.value) == (
        "cannot open the SQLite ledger sqlite:///tmp/ledger.db: unable to open database file; "
        f"check that the directory {tmp_path / 'tmp'} exists and is writable (a path after "
        "sqlite:/// is relative to the working directory; sqlite:////tmp/ledger.db names "
        "/tmp/ledger.db)"
    )


class _Recorder:
    """A backend ``write`` that records each batch and, while ``hold`` is clear, blocks."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self.hold = threading.Event()
        self.entered = threading.Event()

    def write(self, drafts: list[EntryDraft], sealed: list[Any] | None = None) -> list[Any]:
        self.entered.set()
        self.hold.wait(30)
        self.batches.append([d.body["name"] for d in drafts])
        return seal_all(drafts, sum(len(batch) for batch in self.batches[:-1]), GENESIS_HASH)


class _Interrupting(threading.Event):
    """An event whose waiter is interrupted: at once, or right after it is woken."""

    def __init__(self, after_wake: bool) -> None:
        super().__init__()
        self.after_wake = after_wake

    def wait(self, timeout: float | None = None) -> bool:
        if self.after_wake:
            super().wait(timeout)
        raise KeyboardInterrupt


@pytest.mark.parametrize("after_wake", [False, True])
def test_an_interrupted_appender_strands_neither_its_batch_nor_others(
    monkeypatch: pytest.MonkeyPatch, after_wake: bool
) -> None:
    # b is interrupted while queued (its entry is never written) or once its batch is
    # written (its entry is stored, and c, in the same batch, is still answered).
    recorder = _Recorder()
    group = GroupCommit(recorder.write, name="test")
    outcomes: dict[str, object] = {}
    original = group_commit._Request.__init__

    def init(self: Any, drafts: list[EntryDraft]) -> None:
        original(self, drafts)
        if drafts[0].body["name"] == "b":
            self.wake = _Interrupting(after_wake)

    monkeypatch.setattr(group_commit._Request, "__init__", init)

    def submit(name: str) -> None:
        try:
            outcomes[name] = [entry.seq for entry in group.submit([draft(body={"name": name})])]
        except KeyboardInterrupt:
            outcomes[name] = "interrupted"

    threads = {name: threading.Thread(target=submit, args=(name,)) for name in "abc"}
    threads["a"].start()
    assert recorder.entered.wait(30)
    threads["b"].start()
    if after_wake:
        _wait_until(lambda: group.statistics().queued == 1)
    else:
        threads["b"].join(30)
    threads["c"].start()
    _wait_until(lambda: group.statistics().queued == (2 if after_wake else 1))
    recorder.hold.set()
    for thread in threads.values():
        thread.join(30)
    if after_wake:
        assert recorder.batches == [["a"], ["b", "c"]]
        assert outcomes == {"a": [1], "b": "interrupted", "c": [3]}
    else:
        assert recorder.batches == [["a"], ["c"]]
        assert outcomes == {"a": [1], "b": "interrupted", "c": [2]}
    group.close()
    stored = 3 if after_wake else 2
    assert group.statistics() == GroupCommitStatistics(2, stored, stored - 1, 0, 0)


def test_an_appender_alone_writes_its_own_entry_and_the_queue_goes_to_the_writer() -> None:
    # a finds nobody writing and writes in its own thread; b and c, arriving while a's
    # commit is held, are committed together by the group's writer thread.
    recorder = _Recorder()
    group = GroupCommit(recorder.write, name="test")
    writers: dict[str, str] = {}

    def submit(name: str) -> None:
        group.submit([draft(body={"name": name})])

    def write(drafts: list[EntryDraft], sealed: list[Any] | None = None) -> list[Any]:
        for d in drafts:
            writers[d.body["name"]] = threading.current_thread().name
        return recorder.write(drafts)

    group._write = write  # type: ignore[method-assign]
    threads = {name: threading.Thread(target=submit, args=(name,), name=name) for name in "abc"}
    threads["a"].start()
    assert recorder.entered.wait(30)
    threads["b"].start()
    threads["c"].start()
    _wait_until(lambda: group.statistics().queued == 2)
    recorder.hold.set()
    for thread in threads.values():
        thread.join(30)
    group.close()
    assert recorder.batches == [["a"], ["b", "c"]]
    assert writers == {"a": "a", "b": "assay ledger writer test", "c": "assay ledger writer test"}
    assert group.statistics() == GroupCommitStatistics(2, 3, 2, 0, 0)


class _InterruptedInBatch(threading.Event):
    """A wake whose waiter is interrupted while its batch is written, or once it is woken."""

    def __init__(self, interrupt: threading.Event, after_wake: bool) -> None:
        super().__init__()
        self.interrupt = interrupt
        self.after_wake = after_wake

    def wait(self, timeout: float | None = None) -> bool:
        (super() if self.after_wake else self.interrupt).wait(timeout)
        raise KeyboardInterrupt


@pytest.mark.parametrize("after_wake", [False, True])
def test_an_appender_interrupted_within_a_batch_does_not_stop_the_others_waking(
    monkeypatch: pytest.MonkeyPatch, after_wake: bool
) -> None:
    # One caller of a batch stopped waiting while it was written: the others are answered.
    hold, entered, interrupt = threading.Event(), threading.Event(), threading.Event()
    batches: list[list[str]] = []
    outcomes: dict[str, object] = {}

    def write(drafts: list[EntryDraft], sealed: list[Any] | None = None) -> list[Any]:
        names = [d.body["name"] for d in drafts]
        if names == ["a"]:
            entered.set()
            hold.wait(30)
        elif not after_wake:
            interrupt.set()
            _wait_until(lambda: "c" in outcomes)
        batches.append(names)
        return seal_all(drafts, sum(len(batch) for batch in batches[:-1]), GENESIS_HASH)

    group = GroupCommit(write, name="test")
    original = group_commit._Request.__init__

    def init(self: Any, drafts: list[EntryDraft]) -> None:
        original(self, drafts)
        if drafts[0].body["name"] == "c":
            self.wake = _InterruptedInBatch(interrupt, after_wake)

    monkeypatch.setattr(group_commit._Request, "__init__", init)

    def submit(name: str) -> None:
        try:
            outcomes[name] = [entry.seq for entry in group.submit([draft(body={"name": name})])]
        except KeyboardInterrupt:
            outcomes[name] = "interrupted"

    threads = {name: threading.Thread(target=submit, args=(name,)) for name in "abcd"}
    threads["a"].start()
    assert entered.wait(30)
    for queued, name in enumerate("bcd", start=1):
        threads[name].start()
        _wait_until(lambda queued=queued: group.statistics().queued == queued)
    hold.set()
    for thread in threads.values():
        thread.join(30)
    assert batches == [["a"], ["b", "c", "d"]]
    assert outcomes == {"a": [1], "b": [2], "c": "interrupted", "d": [4]}
    group.close()
    assert group.statistics() == GroupCommitStatistics(2, 4, 3, 0, 0)


class _FlakyStore:
    """A ``Store`` over a list that, by a seeded coin, fails a write (storing nothing) or
    finds that another process appended first, as a shared database would show it."""

    def __init__(self, seed: int) -> None:
        self.stored: list[Entry] = []
        self.coin = random.Random(seed)

    def _head(self) -> tuple[int, str]:
        return (self.stored[-1].seq, self.stored[-1].hash) if self.stored else (0, GENESIS_HASH)

    def write(self, drafts: list[EntryDraft], sealed: list[Entry] | None) -> list[Entry]:
        roll = self.coin.random()
        if roll < 0.1:
            raise OSError("disk unplugged")
        if roll < 0.2:
            self.stored.extend(seal_all([draft(body={"foreign": True})], *self._head()))
        if sealed is not None and (sealed[0].seq - 1, sealed[0].prev_hash) == self._head():
            entries = sealed
        else:
            entries = seal_all(drafts, *self._head())
        assert [entry.body for entry in entries] == [d.body for d in drafts]
        self.stored.extend(entries)
        return entries


@pytest.mark.parametrize("seed", range(6))
def test_entries_sealed_ahead_are_stored_only_after_the_head_they_follow(seed: int) -> None:
    # 8 threads append through failed writes and a head moved by another process: whatever
    # was sealed ahead, the stored chain is one gapless, linked sequence, each caller's
    # entries are stored exactly as answered, and a failed caller's are not stored at all.
    store = _FlakyStore(seed)
    group = GroupCommit(store.write, name="test")
    answered: list[Entry] = []
    failed: list[dict[str, int]] = []
    lock = threading.Lock()

    def appender(thread: int) -> None:
        for n in range(40):
            body = {"thread": thread, "n": n}
            try:
                entries = group.submit([draft(body=body), draft(body={**body, "second": 1})])
            except LedgerError:
                with lock:
                    failed.append(body)
            else:
                with lock:
                    answered.extend(entries)

    threads = [threading.Thread(target=appender, args=(thread,)) for thread in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    group.close()
    chain = store.stored
    assert [entry.seq for entry in chain] == list(range(1, len(chain) + 1))
    assert [entry.prev_hash for entry in chain] == [GENESIS_HASH] + [e.hash for e in chain[:-1]]
    assert sorted(answered, key=lambda e: e.seq) == [e for e in chain if "foreign" not in e.body]
    assert not any(entry.body in failed for entry in chain)
    assert len(answered) + 2 * len(failed) == 8 * 40 * 2
    assert failed and any("foreign" in entry.body for entry in chain)  # both paths were taken


def _wait_until(condition: Any) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_write_that_cannot_commit_fails_every_caller_and_stores_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    with SQLiteBackend(path, busy_timeout=0.05) as backend:
        backend.append([draft(body={"n": 0})])
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(LedgerError) as caught:
            backend.append([draft(body={"n": 1})])
        holder.execute("ROLLBACK")
        holder.close()
        assert str(caught.value) == (
            "OperationalError: database is locked; nothing in this batch was stored"
        )
        assert caught.value.url == f"sqlite:///{path}"
        (entry,) = backend.append([draft(body={"n": 2})])
        assert entry.seq == 2
        assert verify_ledger(backend).ok


def test_a_postgresql_backend_reconnects_after_losing_its_connections(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="psycopg")
    with PostgresBackend(postgres_url, schema="reconnect") as backend:
        backend.append([draft(body={"n": 0})])
        pids = [backend._reader.info.backend_pid]
        assert backend._writer is not None
        pids.append(backend._writer.info.backend_pid)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            for pid in pids:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(LedgerError) as caught:
            backend.append([draft(body={"n": 1})])
        assert str(caught.value).startswith(
            f"cannot append to the PostgreSQL ledger {postgres_url}?schema=reconnect: "
        )
        # The failure is said once, in the error; psycopg logs nothing beside it.
        assert [record.getMessage() for record in caplog.records] == []
        (entry,) = backend.append([draft(body={"n": 1})])
        assert entry.seq == 2
        assert backend.size() == 2  # a read is tried again on a new connection
        assert verify_ledger(backend).ok


def test_a_value_of_the_wrong_kind_is_named_before_anything_is_read() -> None:
    """These raised bare TypeErrors from a comparison deep inside ('>' not supported between
    'int' and 'str'), or AttributeError for a signing key given as text."""
    ledger = Ledger(MemoryBackend())
    ledger.append("fire", {"n": 1})
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: ledger.query(after="1"), "after must be a whole number, not str"),
        (lambda: ledger.query(limit=2.5), "limit must be a whole number or None, not float"),
        (lambda: ledger.prove("1"), "seq must be a whole number, not str"),
        (lambda: ledger.prove(1, size=True), "size must be a whole number or None, not bool"),
        (lambda: ledger.consistency(None), "old_size must be a whole number, not NoneType"),
        (lambda: ledger.root(1.0), "size must be a whole number or None, not float"),
        (lambda: ledger.read(None, 2), "start must be a whole number, not NoneType"),
        (lambda: ledger.entry("1"), "seq must be a whole number, not str"),
        (lambda: ledger.iterate(None), "start must be a whole number, not NoneType"),
        (
            lambda: ledger.checkpoint("key.pem"),
            "signing_key must be a SigningKey (SigningKey.from_file(path), for one), not str",
        ),
    ]
    for call, said in calls:
        with pytest.raises(WrongTypeError) as refused:
            call()
        assert str(refused.value) == said
    assert ledger.size == 1 and ledger.checkpoints() == []


def _resealed(entry: Entry, **changes: Any) -> bytes:
    """``entry``'s canonical JSON with ``changes`` made and its hash made again to match, as
    someone who rewrote a stored entry whole would write it."""
    fields = {**entry.to_dict(), **changes}
    del fields["hash"]
    return rfc8785.dumps({**fields, "hash": hashlib.sha256(rfc8785.dumps(fields)).hexdigest()})


@pytest.mark.parametrize(
    ("said", "reason"),
    [
        (99, "stored as entry 12 but says seq 99"),
        (11, "stored as entry 12 but says seq 11"),
        ("12", "seq is '12', not a positive integer"),
        (True, "seq is True, not a positive integer"),
        (12.5, "seq is 12.5, not a positive integer"),
        (0, "seq is 0, not a positive integer"),
    ],
)
def test_an_entry_read_from_a_place_its_seq_does_not_name_is_refused(
    said: object, reason: str
) -> None:
    """Read as stored, an entry said whatever seq it held: entry 12 edited to say 99 was
    served as entry 99."""
    entry = seal(draft(), 12, GENESIS_HASH)
    assert entry_from_canonical(entry.canonical, 12) == entry
    for text in (entry.canonical.replace(b'"seq":12', f'"seq":{json.dumps(said)}'.encode()),
                 _resealed(entry, seq=said)):  # fmt: skip
        with pytest.raises(LedgerIntegrityError) as caught:
            entry_from_canonical(text, 12)
        assert (caught.value.seq, caught.value.field, caught.value.reason) == (12, "seq", reason)
        assert str(caught.value) == (
            f"entry 12: {reason}; verify the ledger (assay ledger verify, or verify_ledger) to "
            "find what else is wrong"
        )


OTHER_DIGITS = ["２０２６", "٢٠٢٦", "۲۰۲۶", "२०२६"]
"""2026 in full-width, Arabic-Indic, Persian and Devanagari digits: ``\\d`` takes each."""


@pytest.mark.parametrize("year", OTHER_DIGITS)
def test_a_timestamp_in_digits_that_are_not_ascii_is_refused(year: str) -> None:
    timestamp = f"{year}-12-01T05:37:41.275793Z"
    with pytest.raises(LedgerEntryError) as refused:
        EntryDraft("fire", timestamp, {})
    assert refused.value.field == "timestamp"
    stored = _resealed(seal(draft(), 3, GENESIS_HASH), timestamp=timestamp)
    with pytest.raises(LedgerIntegrityError) as caught:
        parse_entry(stored, 3)
    assert (caught.value.field, str(caught.value)) == (
        "timestamp",
        f"entry 3: timestamp {timestamp!r} is not RFC 3339 UTC with microseconds",
    )
    with pytest.raises(CheckpointError) as unsigned:
        SigningKey.generate().sign(1, "ab" * 32, timestamp)
    assert unsigned.value.field == "timestamp"


@pytest.mark.parametrize(
    "text",
    [
        *(f"{year}:{'ab' * 32}" for year in OTHER_DIGITS),
        f"١٢:{'ab' * 32}",
        f"{'9' * 5000}:{'ab' * 32}",  # int() raised ValueError beyond 4,300 digits
        f"12:{'ab' * 31}a\n",
        f" 12:{'ab' * 32}",
    ],
)
def test_a_tree_head_is_read_in_ascii_digits_only(text: str) -> None:
    with pytest.raises(ProofError, match="a tree head is written SIZE:ROOT") as caught:
        TreeHead.parse(text)
    assert caught.value.parameter == "head"
    assert TreeHead.parse(f"0012:{'AB' * 32}") == TreeHead(12, "ab" * 32)


def test_a_proof_whose_hashes_are_not_sha256_hex_is_refused() -> None:
    """A consistency proof between equal sizes checked only that the roots were equal, so
    ConsistencyProof(3, "", 3, "", ()) passed; bytes.fromhex also took spaces, any length
    and upper case."""
    ledger = memory_ledger()
    for n in range(5):
        ledger.append("fire", {"n": n})
    same, later = ledger.consistency(3, 3), ledger.consistency(3, 5)
    same.verify()
    later.verify()
    root = same.old_root
    refused = [
        (replace(same, old_root="", new_root=""), "old_root", ""),
        (replace(same, old_root=root.upper(), new_root=root.upper()), "old_root", root.upper()),
        (replace(same, old_root=root[:62], new_root=root[:62]), "old_root", root[:62]),
        (replace(same, new_root=" ".join([root[:32], root[32:]])), "new_root", None),
        (replace(later, path=(*later.path[:-1], later.path[-1] + "00")), "path", None),
        (replace(ledger.prove(2), root=""), "root", ""),
        (replace(ledger.prove(2), leaf_hash=b"\x00" * 32), "leaf_hash", b"\x00" * 32),
    ]
    for proof, parameter, shown in refused:
        with pytest.raises(ProofError) as caught:
            proof.verify()
        assert caught.value.parameter == parameter, proof
        if shown is not None:
            assert str(caught.value) == (
                f"{parameter} must be a SHA-256 hash as 64 lowercase hex digits, not {shown!r}"
            )
    with pytest.raises(ProofError) as caught:
        replace(same, new_root=later.new_root).verify()
    assert str(caught.value) == (
        f"the sizes are equal (3) but the roots differ: {root} and {later.new_root}"
    )
