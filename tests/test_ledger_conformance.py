"""One conformance suite for every ledger backend: memory, SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from assay.errors import LedgerEntryError, LedgerError, LedgerIntegrityError, WrongTypeError
from assay.ledger import (
    GENESIS_HASH,
    Closing,
    Entry,
    Lease,
    Ledger,
    LedgerBackend,
    SigningKey,
    SQLiteBackend,
    verify_ledger,
)
from assay.ledger.entry import parse_entry
from assay.ledger.url import open_backend
from ledger_stores import KINDS, Store, draft


def _store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    postgres_url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    subject = Store(request.param, tmp_path, postgres_url)
    yield subject
    subject.close()


store = pytest.fixture(params=KINDS)(_store)
"""A fresh ledger of each kind."""

database = pytest.fixture(params=("sqlite", "postgres"))(_store)
"""A fresh ledger in each real database, which a test can also reach directly."""

postgres = pytest.fixture(params=("postgres",))(_store)


@pytest.fixture
def backend(store: Store) -> LedgerBackend:
    return store.open()


def test_an_empty_ledger_has_nothing(backend: LedgerBackend) -> None:
    assert backend.size() == 0
    assert backend.head() is None
    assert backend.read(1, 10) == []
    assert list(backend.iterate()) == []
    assert backend.query() == []
    assert list(backend.stored_rows()) == []
    assert backend.checkpoints() == []
    assert verify_ledger(backend).ok


def test_append_gives_gapless_seqs_and_a_linked_chain(backend: LedgerBackend) -> None:
    appended = [
        backend.append([draft("fire", {"n": n}, second=n, session="s")])[0] for n in range(5)
    ]
    assert [entry.seq for entry in appended] == [1, 2, 3, 4, 5]
    assert appended[0].prev_hash == GENESIS_HASH
    for before, after in itertools.pairwise(appended):
        assert after.prev_hash == before.hash
    for entry in appended:
        assert parse_entry(entry.canonical, entry.seq) == entry
    assert backend.read(1, 6) == appended
    assert backend.size() == 5
    assert backend.head() == appended[-1]
    assert appended[2].body == {"n": 2}
    assert appended[2].timestamp == "2026-01-01T00:00:02.000000Z"


def test_one_append_of_many_drafts_is_consecutive(backend: LedgerBackend) -> None:
    backend.append([draft(body={"first": True})])
    entries = backend.append([draft("verdict", {"n": n}) for n in range(4)])
    assert [entry.seq for entry in entries] == [2, 3, 4, 5]
    assert [entry.body for entry in entries] == [{"n": n} for n in range(4)]
    assert backend.append([]) == []
    assert backend.size() == 5


def test_read_takes_a_half_open_seq_range(backend: LedgerBackend) -> None:
    backend.append([draft(body={"n": n}) for n in range(1, 8)])
    assert [entry.seq for entry in backend.read(2, 5)] == [2, 3, 4]
    assert [entry.seq for entry in backend.read(0, 2)] == [1]
    assert [entry.seq for entry in backend.read(6, 100)] == [6, 7]
    assert backend.read(8, 9) == []
    assert backend.read(5, 5) == []
    assert [entry.seq for entry in backend.iterate(6)] == [6, 7]


def test_bounds_beyond_64_bits_select_as_any_other_bound(backend: LedgerBackend) -> None:
    # A database compares seqs as 64-bit integers; a caller's bound need not be one.
    backend.append([draft(body={"n": n}) for n in range(1, 4)])
    huge = 2**64
    assert [entry.seq for entry in backend.read(-huge, huge)] == [1, 2, 3]
    assert backend.read(huge, huge + 1) == []
    assert backend.read(-huge, 0) == []
    assert [entry.seq for entry in backend.iterate(2)] == [2, 3]
    assert list(backend.iterate(huge)) == []
    assert [entry.seq for entry in backend.query(after=-huge, limit=huge)] == [1, 2, 3]
    assert backend.query(after=huge) == []
    assert backend.query(after=2**63 - 1) == []
    assert [entry.seq for entry in backend.query(after=1, limit=1)] == [2]
    assert backend.query(limit=0) == []


def test_a_sqlite_query_by_session_run_or_transition_searches_its_index(
    tmp_path: Path,
) -> None:
    """Those indexes leave out entries without the id (a NULL never equals a value); a
    query by equality must still search them rather than scan the table."""
    with Store("sqlite", tmp_path, None).open() as backend:
        backend.append([draft("verdict", {}, session="a")])
    connection = sqlite3.connect(tmp_path / "ledger.db")
    try:
        for column in ("session", "run", "transition"):
            plan = connection.execute(
                "EXPLAIN QUERY PLAN SELECT seq, entry FROM ledger_entries "
                f"WHERE seq > ? AND {column} = ? ORDER BY seq LIMIT ?",
                (0, "a", 10),
            ).fetchall()
            assert f"USING INDEX ledger_entries_{column} ({column}=?" in str(plan)
    finally:
        connection.close()


def test_query_by_session_transition_run_kind_and_time(backend: LedgerBackend) -> None:
    rows = [
        ("fire", "a", "r1", "inbox.send#1"),
        ("settlement", "a", "r1", "inbox.send#1"),
        ("verdict", "a", "r1", "inbox.send#1"),
        ("fire", "b", None, "drone.arm#1"),
        ("refusal", "b", None, "drone.arm#2"),
        ("commit", None, "r2", None),
        ("escalation", None, "r2", None),
        ("park", None, "r2", None),
        ("resume", None, "r2", None),
        ("fire", "a", "r1", "inbox.send#2"),
    ]
    for second, (kind, session, run, transition) in enumerate(rows):
        backend.append(
            [draft(kind, {}, second=second, session=session, run=run, transition=transition)]
        )

    def seqs(**criteria: object) -> list[int]:
        return [entry.seq for entry in backend.query(**criteria)]  # type: ignore[arg-type]

    assert seqs(session="a") == [1, 2, 3, 10]
    assert seqs(session="a", kind="fire") == [1, 10]
    assert seqs(transition="inbox.send#1") == [1, 2, 3]
    assert seqs(run="r2") == [6, 7, 8, 9]
    assert seqs(kind="fire") == [1, 4, 10]
    assert seqs(since="2026-01-01T00:00:03Z", until="2026-01-01T00:00:06Z") == [4, 5, 6]
    assert seqs(since="2026-01-01T01:00:03+01:00", limit=2) == [4, 5]
    assert seqs(after=7) == [8, 9, 10]
    assert seqs(session="a", after=3) == [10]
    assert seqs(limit=0) == []
    assert seqs(session="nobody") == []
    with pytest.raises(LedgerEntryError) as caught:
        backend.query(kind="explosion")
    assert caught.value.field == "kind"
    with pytest.raises(LedgerEntryError) as caught:  # it matched nothing, as none has it
        backend.query(kind="checkpoint")
    assert str(caught.value).startswith("kind 'checkpoint' is no entry's: a checkpoint is a")
    with pytest.raises(LedgerEntryError) as caught:
        backend.query(since="yesterday")
    assert str(caught.value) == (
        "since must be an RFC 3339 time like 2026-01-01T00:00:00Z, not 'yesterday'"
    )


def test_concurrent_appenders_get_one_gapless_chain(backend: LedgerBackend) -> None:
    threads, each = 16, 50
    returned: dict[int, list[int]] = {}
    start = threading.Barrier(threads)

    def appender(number: int) -> None:
        start.wait()
        seqs = []
        for n in range(each):
            (entry,) = backend.append([draft("fire", {"thread": number, "n": n})])
            seqs.append(entry.seq)
        returned[number] = seqs

    workers = [threading.Thread(target=appender, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    everything = sorted(seq for seqs in returned.values() for seq in seqs)
    assert everything == list(range(1, threads * each + 1))
    for seqs in returned.values():
        assert seqs == sorted(seqs)
    stored = backend.read(1, threads * each + 1)
    assert [entry.seq for entry in stored] == everything
    for number, seqs in returned.items():
        assert [stored[seq - 1].body for seq in seqs] == [
            {"thread": number, "n": n} for n in range(each)
        ]
    report = verify_ledger(backend)
    assert report.ok, report.describe()
    assert report.size == threads * each


def test_two_backends_on_one_ledger_keep_one_order(database: Store) -> None:
    first, second = database.open(), database.open()

    def appender(backend: LedgerBackend, label: str) -> None:
        for n in range(60):
            backend.append([draft(body={"from": label, "n": n})])

    workers = [
        threading.Thread(target=appender, args=(backend, f"{label}{n}"))
        for n in range(3)
        for label, backend in (("first", first), ("second", second))
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert first.size() == second.size() == 360
    assert verify_ledger(first).ok


def test_a_writer_whose_head_went_stale_seals_after_the_stored_head(database: Store) -> None:
    # Each backend seals a batch after the head it last committed; when another writer has
    # moved the head since, the database refuses that insert and the batch is sealed again.
    first, second = database.open(), database.open()
    assert [entry.seq for entry in first.append([draft(body={"n": 1})])] == [1]
    assert [entry.seq for entry in second.append([draft(body={"n": 2})])] == [2]
    again = first.append([draft(body={"n": 3}), draft(body={"n": 4})])
    assert [(entry.seq, entry.body) for entry in again] == [(3, {"n": 3}), (4, {"n": 4})]
    assert again[0].prev_hash == second.read(2, 3)[0].hash
    assert [entry.seq for entry in second.append([draft(body={"n": 5})])] == [5]
    report = verify_ledger(first)
    assert report.ok, report.describe()
    assert report.size == 5


def test_opening_for_reading_refuses_a_missing_ledger_and_creates_none(database: Store) -> None:
    with pytest.raises(LedgerError, match="there is no ledger") as refused:
        open_backend(database.url, create=False)
    assert "reading a ledger never creates one" in str(refused.value)
    if database.kind == "sqlite":
        assert not database.path.exists()
    else:
        assert database.postgres_url is not None
        with psycopg.connect(database.postgres_url) as connection:
            found = connection.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s",
                (database.schema,),
            ).fetchone()
        assert found is None
    database.open().append([draft(body={"n": 1})])
    reader = open_backend(database.url, create=False)
    try:
        assert [entry.body for entry in reader.read(1, 2)] == [{"n": 1}]
    finally:
        reader.close()


def test_opening_a_sqlite_ledger_to_read_waits_for_no_writer(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with SQLiteBackend(path) as writer:
        writer.append([draft(body={"n": 1})])
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
        with pytest.raises(LedgerError, match="database is locked"):
            SQLiteBackend(path, busy_timeout=0.05)
        with SQLiteBackend(path, busy_timeout=0.05, create=False) as reader:
            assert [entry.body for entry in reader.read(1, 2)] == [{"n": 1}]
            assert verify_ledger(reader).ok
    finally:
        holder.close()


def test_a_reopened_ledger_keeps_its_entries_and_its_chain(database: Store) -> None:
    first = database.open()
    written = first.append([draft(body={"n": n}) for n in range(3)])
    first.close()
    again = database.open()
    assert again.read(1, 4) == written
    (fourth,) = again.append([draft(body={"n": 3})])
    assert (fourth.seq, fourth.prev_hash) == (4, written[-1].hash)
    assert verify_ledger(again).ok


def test_checkpoints_are_stored_in_order(backend: LedgerBackend) -> None:
    key = SigningKey.generate()
    backend.append([draft(body={"n": n}) for n in range(3)])
    first = key.sign(1, "ab" * 32, "2026-01-01T00:00:00.000000Z")
    second = key.sign(3, "cd" * 32, "2026-01-01T00:00:01.000000Z")
    backend.add_checkpoint(first)
    backend.add_checkpoint(second)
    assert backend.checkpoints() == [first, second]
    assert [stored.number for stored in backend.stored_checkpoints()] == [1, 2]


def test_stored_rows_are_the_entries_as_stored(backend: LedgerBackend, store: Store) -> None:
    entries = backend.append([draft(body={"n": n}, session="s") for n in range(3)])
    rows = list(backend.stored_rows())
    assert [(row.seq, row.entry) for row in rows] == [(e.seq, e.canonical) for e in entries]
    if store.kind != "memory":
        assert rows[0].columns == {
            "timestamp": entries[0].timestamp,
            "kind": "fire",
            "session": "s",
            "run": None,
            "transition": None,
            "prev_hash": GENESIS_HASH,
            "hash": entries[0].hash,
        }


def test_a_closed_backend_refuses_to_append(backend: LedgerBackend) -> None:
    backend.append([draft()])
    backend.close()
    backend.close()
    with pytest.raises(LedgerError) as caught:
        backend.append([draft()])
    assert "is closed" in str(caught.value)


REFUSED = [
    ("UPDATE {entries} SET entry = entry || ' ' WHERE seq = 2", "ledger_entries", "UPDATE"),
    ("UPDATE {entries} SET hash = prev_hash WHERE seq = 2", "ledger_entries", "UPDATE"),
    ("UPDATE {entries} SET kind = 'verdict'", "ledger_entries", "UPDATE"),
    ("UPDATE {entries} SET seq = 99 WHERE seq = 3", "ledger_entries", "UPDATE"),
    ("DELETE FROM {entries} WHERE seq = 3", "ledger_entries", "DELETE"),
    ("DELETE FROM {entries}", "ledger_entries", "DELETE"),
    ("UPDATE {checkpoints} SET size = 0", "ledger_checkpoints", "UPDATE"),
    ("DELETE FROM {checkpoints}", "ledger_checkpoints", "DELETE"),
]


@pytest.mark.parametrize(("statement", "table", "operation"), REFUSED)
def test_the_database_refuses_to_change_or_drop_a_row(
    database: Store, statement: str, table: str, operation: str
) -> None:
    backend = database.open()
    backend.append([draft(body={"n": n}) for n in range(3)])
    root = verify_ledger(backend).root
    backend.add_checkpoint(SigningKey.generate().sign(3, root, "2026-01-01T00:00:00Z"))
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.RaiseException)) as caught:
        database.execute(statement)
    assert str(caught.value).splitlines()[0] == (
        f"assay ledger: {table} is append-only; {operation} refused"
    )
    assert backend.size() == 3
    assert len(backend.checkpoints()) == 1
    assert verify_ledger(backend).ok


def test_the_database_refuses_an_entry_out_of_order(database: Store) -> None:
    backend = database.open()
    (entry,) = backend.append([draft()])
    insert = "INSERT INTO {entries} VALUES (" + ", ".join(["?"] * 9) + ")"
    if database.kind == "postgres":
        insert = insert.replace("?", "%s")
    for seq, prev_hash in ((3, entry.hash), (2, GENESIS_HASH), (1, GENESIS_HASH)):
        row = (seq, entry.timestamp, "fire", None, None, None, prev_hash, entry.hash, "{}")
        with pytest.raises((sqlite3.IntegrityError, psycopg.errors.RaiseException)) as caught:
            database.execute(insert, row)
        assert str(caught.value).startswith("assay ledger: a new entry must take the next seq"), (
            caught.value
        )
    assert backend.size() == 1


def test_truncate_is_refused_by_postgresql(postgres: Store) -> None:
    backend = postgres.open()
    backend.append([draft()])
    for table in ("{entries}", "{checkpoints}"):
        with pytest.raises(psycopg.errors.RaiseException) as caught:
            postgres.execute(f"TRUNCATE {table}")
        assert "is append-only; TRUNCATE refused" in str(caught.value)
    assert backend.size() == 1


def test_waiting_appenders_share_one_commit(database: Store) -> None:
    """While a commit waits, every appender that arrives joins the next one: 64 appenders
    blocked behind a held write lock are stored in two transactions, not 64."""
    backend = database.open()
    statistics = backend.statistics  # type: ignore[attr-defined]
    appenders = 64
    done: list[int] = []
    with database.writer_lock_held():
        workers = [
            threading.Thread(
                target=lambda n=n: done.extend(
                    entry.seq for entry in backend.append([draft(body={"n": n})])
                )
            )
            for n in range(appenders)
        ]
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + 30
        while (now := statistics()).queued + now.writing < appenders:
            assert time.monotonic() < deadline, now
            time.sleep(0.001)
    for worker in workers:
        worker.join()
    final = statistics()
    assert sorted(done) == list(range(1, appenders + 1))
    assert (final.batches, final.entries, final.queued, final.writing) == (2, appenders, 0, 0)
    assert final.largest_batch == max(now.writing, appenders - now.writing)
    assert verify_ledger(backend).ok


VERIFY_THE_LEDGER = (
    "verify the ledger (assay ledger verify, or verify_ledger) to find what else is wrong"
)


def test_an_entry_whose_seq_is_not_its_place_is_not_read_as_another(database: Store) -> None:
    """Entry 12's JSON edited to say seq 99 was read, queried and served as entry 99."""
    backend = database.open()
    backend.append([draft(body={"n": n}) for n in range(1, 15)])
    database.tamper(
        "UPDATE {entries} SET entry = replace(entry, '\"seq\":12,', '\"seq\":99,') WHERE seq = 12"
    )
    reads: list[Callable[[], object]] = [
        lambda: backend.read(12, 13),
        lambda: backend.read(1, 20),
        lambda: list(backend.iterate(10)),
        lambda: backend.query(after=11, limit=1),
        backend.query,
    ]
    for read in reads:
        with pytest.raises(LedgerIntegrityError) as caught:
            read()
        assert (caught.value.seq, caught.value.field) == (12, "seq")
        assert str(caught.value) == (
            f"entry 12: stored as entry 12 but says seq 99; {VERIFY_THE_LEDGER}"
        )
    assert [entry.seq for entry in backend.read(11, 12)] == [11]
    assert [entry.seq for entry in backend.query(after=12)] == [13, 14]
    problem = verify_ledger(backend).problem
    assert problem is not None
    assert problem.seq == 12


def test_a_gap_is_named_with_what_to_run_from_a_shell_or_python(database: Store) -> None:
    """It said "run verify_ledger", a Python function, to the user of assay serve or assay
    ledger checkpoint."""
    database.open().append([draft(body={"n": n}) for n in range(1, 13)])
    database.tamper("DELETE FROM {entries} WHERE seq = 9")
    ledger = Ledger(database.open())
    with pytest.raises(LedgerIntegrityError) as caught:
        ledger.refresh()
    assert str(caught.value) == f"entry 9 is missing from {ledger.url}; {VERIFY_THE_LEDGER}"
    assert (caught.value.seq, caught.value.reason, caught.value.field) == (9, "missing", "seq")


# Leases, and the closing of fires a stopped host left open (assay.ledger.lease).

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """``seconds`` past 2026-01-01T00:00:00Z: the ``now`` a virtual clock would give."""
    return T0 + timedelta(seconds=seconds)


def test_a_lease_is_live_until_it_expires_and_renewed_only_while_held(
    backend: LedgerBackend,
) -> None:
    taken = backend.take_lease("a", 30, now=at(0))
    assert taken == Lease("a", at(0), at(30), live=True)
    backend.take_lease("b", 5, now=at(0))
    assert [(lease.owner, lease.live) for lease in backend.leases(now=at(10))] == [
        ("a", True),
        ("b", False),
    ]
    # Expired but still held (nobody closed its fires): renewing it makes it live again.
    assert backend.renew_lease("b", 5, now=at(12)) == Lease("b", at(12), at(17), live=True)
    assert backend.leases(now=at(16.999999)) == [
        Lease("a", at(0), at(30), live=True),
        Lease("b", at(12), at(17), live=True),
    ]
    assert [lease.live for lease in backend.leases(now=at(30))] == [False, False]
    backend.release_lease("b")
    backend.release_lease("b")  # twice is harmless
    assert backend.renew_lease("b", 5, now=at(31)) is None  # released: nothing is made
    assert [lease.owner for lease in backend.leases(now=at(31))] == ["a"]
    assert backend.take_lease("a", 0.5, now=at(40)) == Lease("a", at(40), at(40.5), live=True)
    assert backend.size() == 0  # a lease is no entry
    assert verify_ledger(backend).ok


def test_without_now_a_lease_is_judged_by_the_stores_clock(backend: LedgerBackend) -> None:
    # PostgreSQL's is the server's now(), which daemons on every machine share; in the tests
    # the server runs on this machine, so its clock reads as this one's.
    before = datetime.now(UTC)
    lease = backend.take_lease("a", 600)
    assert (
        before - timedelta(seconds=5)
        <= lease.renewed_at
        <= datetime.now(UTC) + timedelta(seconds=5)
    )
    assert (lease.expires_at - lease.renewed_at, lease.live) == (timedelta(seconds=600), True)
    assert backend.leases() == [lease]
    assert backend.leases(now=lease.expires_at) == [replace(lease, live=False)]
    renewed = backend.renew_lease("a", 0.2)
    assert renewed is not None
    assert renewed.renewed_at >= lease.renewed_at
    deadline = time.monotonic() + 10
    while backend.leases()[0].live:  # a fifth of a second of the store's own time
        assert time.monotonic() < deadline, backend.leases()
        time.sleep(0.02)


def test_a_lease_needs_an_owner_a_positive_duration_and_an_aware_now(
    backend: LedgerBackend,
) -> None:
    for owner, duration_s in (("", 30), (None, 30), ("a", 0), ("a", -1), ("a", math.inf)):
        with pytest.raises(WrongTypeError):
            backend.take_lease(owner, duration_s)  # type: ignore[arg-type]
    with pytest.raises(WrongTypeError, match="now must be a timezone-aware datetime"):
        backend.leases(now=datetime(2026, 1, 1))
    assert backend.leases() == []


def test_open_fires_are_the_latest_fires_no_settlement_or_refusal_follows(
    backend: LedgerBackend,
) -> None:
    rows = [
        ("fire", "a", "x#1"),  # 1: settled by 2
        ("settlement", "a", "x#1"),
        ("fire", "a", "x#2"),  # 3: open
        ("fire", "b", "x#1"),  # 4: another session's x#1, open
        ("verdict", "a", None),
        ("refusal", "a", "x#3"),  # a refused fire has no fire entry
        ("fire", "c", "x#1"),  # 7: settled by 8, then fired again (an older daemon's
        ("settlement", "c", "x#1"),  # "default" session, reused across its runs): 9 is open
        ("fire", "c", "x#1"),
        ("fire", None, "x#9"),  # 10: outside any session, open
        ("fire", "d", None),  # 11: no transition, so nothing can settle it by id
        ("fire", "e", "x#1"),  # 12: refused after its fire (its record failed): closed
        ("refusal", "e", "x#1"),
    ]
    for second, (kind, session, transition) in enumerate(rows, start=1):
        backend.append(
            [draft(kind, {"at": second}, second=second, session=session, transition=transition)]
        )
    left = backend.open_fires()
    assert [(entry.seq, entry.body) for entry in left] == [
        (3, {"at": 3}),
        (4, {"at": 4}),
        (9, {"at": 9}),
        (10, {"at": 10}),
    ]
    assert backend.open_fires() == left


def _closing(fire: Entry, owner: str | None) -> Closing:
    settlement = draft(
        "settlement",
        {"closes": fire.seq},
        second=50,
        session=fire.session,
        transition=fire.transition,
    )
    return Closing(settlement, fire.seq, owner)


def test_close_fires_closes_open_fires_whose_owner_is_gone_and_drops_their_leases(
    backend: LedgerBackend,
) -> None:
    owners = {"dead": "d", "live": "l", "gone": "g", "old": None, "mine": "me", "done": "d"}
    fires = backend.append(
        [
            draft("fire", {"owner": owner}, session=session, transition="x#1")
            for session, owner in owners.items()
        ]
    )
    backend.append([draft("settlement", {}, session="done", transition="x#1")])
    backend.take_lease("d", 10, now=at(0))  # expires at 10
    backend.take_lease("l", 60, now=at(0))
    backend.take_lease("me", 60, now=at(0))
    closings = [_closing(fire, fire.body["owner"]) for fire in fires]

    closed = backend.close_fires(closings, by="me", now=at(20))
    # d's lease expired and g holds none; l's is live, so the fire naming no owner waits too;
    # me never closes its own; "done" is settled.
    assert [(e.seq, e.session, e.body) for e in closed] == [
        (8, "dead", {"closes": 1}),
        (9, "gone", {"closes": 3}),
    ]
    assert closed[0].prev_hash == backend.read(7, 8)[0].hash
    assert backend.read(8, 10) == closed
    assert [lease.owner for lease in backend.leases(now=at(20))] == ["l", "me"]
    assert backend.renew_lease("d", 10, now=at(21)) is None  # d finds its fires were closed
    assert backend.close_fires(closings, by="me", now=at(20)) == []  # closed once only
    assert [e.session for e in backend.close_fires(closings, by="other", now=at(20))] == []

    # Once l's lease has expired, its fire closes, and the one naming no owner with it.
    later = backend.close_fires(closings, by="me", now=at(61))
    assert [(e.seq, e.session) for e in later] == [(10, "live"), (11, "old")]
    assert [fire.session for fire in backend.open_fires()] == ["mine"]
    (appended,) = backend.append([draft(body={"after": True})])  # the chain goes on after
    assert appended.seq == 12
    report = verify_ledger(backend)
    assert report.ok, report.describe()


def test_two_hosts_closing_the_same_fires_at_once_store_one_settlement_each(
    store: Store,
) -> None:
    first, second = store.open(), store.open()
    fires = first.append([draft("fire", {}, session=f"s{n}", transition="x#1") for n in range(20)])
    first.take_lease("dead", 1, now=at(0))
    closings = [_closing(fire, "dead") for fire in fires]
    start = threading.Barrier(2)
    closed: dict[str, list[Entry]] = {}

    def close(by: str, backend: LedgerBackend) -> None:
        start.wait()
        closed[by] = backend.close_fires(closings, by=by, now=at(5))

    workers = [
        threading.Thread(target=close, args=(by, backend))
        for by, backend in (("a", first), ("b", second))
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert sorted(len(entries) for entries in closed.values()) == [0, 20]
    settled = second.query(kind="settlement")
    assert sorted(e.session or "" for e in settled) == sorted(f"s{n}" for n in range(20))
    assert first.open_fires() == []
    assert verify_ledger(first).ok
