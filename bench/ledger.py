"""Benchmark durable ledger appends against raw sqlite3 at the same durability, in one run.

Threads call ``Ledger.append`` with distinct ~1 KB JSON bodies, 1, 8 and 64 at a time, on a
fresh SQLite file (WAL, synchronous=FULL). Group commit decides how many entries share a
transaction; its ``statistics()`` say how many did, and raw ``sqlite3`` then inserts the same
bodies (``json.dumps`` + ``executemany``, one ``BEGIN``/``COMMIT`` per batch) at that mean batch
size and at batch size 1, with the same pragmas. assay's side includes redaction, validation,
RFC 8785 canonicalization, the hash chain and the Merkle tree: that is the point. The same
appenders then run on a throwaway PostgreSQL cluster with fsync turned back on, beside raw
psycopg at the same batch size. Rounds are interleaved; the best round is the headline.

    .venv/bin/python bench/ledger.py [--quick] [--ceiling] [--floor] [--json PATH]

Targets (SPEC §11): assay ≥ 0.5x raw sqlite3 at each concurrency, and ≥ 20,000 entries/s with
64 appenders on SQLite. Informational: the exit status is 0 whatever the figures.

``--ceiling`` adds a diagnostic: the same appenders on a store that does no database work at
all (each batch is kept in memory and waits for one real ``fdatasync`` of one page, as a
commit waits for its sync). What assay reaches there is the most that any store, however
fast its inserts, could give the Python side: drafting, sealing, hashing, the Merkle tree
and the hand-offs between threads.

``--floor`` adds another: a group commit that does strictly less than any ledger could
(``FloorStore``: ``json.dumps`` on the appender's side, one writer thread inserting each
batch into raw's own table, no canonicalization, hashing or Merkle tree). What it reaches
is about what a Python ledger could with that many appenders on this machine, with the
hand-offs between threads the best we know of (a batch's threads woken one by one); what
separates assay from it is assay's own work.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))

import psycopg

from _timing import gc_paused, ratio
from assay.host.evidence import DurableEvidence
from assay.ledger import Ledger, LedgerBackend, SQLiteBackend
from assay.ledger.backends.group_commit import GroupCommit, GroupCommittedBackend
from assay.ledger.backends.postgres import PostgresBackend
from assay.ledger.backends.query import EntryFilter
from assay.ledger.backends.stored import StoredCheckpoint, StoredRow
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import GENESIS_HASH, Entry, EntryDraft, seal_all
from assay.ledger.lease import Closing, Lease
from postgres import PostgresCluster, PostgresMissingError

CONCURRENCY = (1, 8, 64)
BODY_BYTES = 1024
RAW_SCHEMA = "CREATE TABLE entries (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"
RAW_INSERT = "INSERT INTO entries (body) VALUES (?)"
SQLITE_RATIO_TARGET = 0.5
SQLITE_64_TARGET = 20_000.0


def build_body(index: int) -> dict[str, Any]:
    """A deterministic, distinct JSON body of about ``BODY_BYTES`` bytes, shaped like evidence."""
    body: dict[str, Any] = {
        "transition": f"t-{index:08d}",
        "action": "send_email",
        "attempt": index % 7,
        "settled": index % 3 != 0,
        "condition": {"op": "eq", "path": ["inbox", "sent_count"], "value": index % 50},
        "observed": {
            "inbox": {"sent_count": index % 50, "folders": ["inbox", "sent", "archive"]},
            "drone": {"mode": "GUIDED", "armed": index % 2 == 0, "altitude_m": index % 400},
        },
        "changed_fields": [f"inbox.items.{index % 97}.read", "inbox.unread", "inbox.sent_count"],
        "critique": "the message reached the outbox and the counter moved by exactly one; "
        "no other folder changed, so the settlement holds",
        "tags": ["email", "outbox", f"run-{index % 11}"],
    }
    filler = BODY_BYTES - len(json.dumps(body, separators=(",", ":"))) - len(',"note":""')
    body["note"] = ("evidence " * (filler // 9 + 1))[: max(filler, 0)]
    return body


@dataclass
class Series:
    """One configuration's rounds: entries per second, and the batch sizes it committed."""

    name: str
    rates: list[float] = field(default_factory=list)
    batches: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return max(self.rates)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def mean_batch(self) -> float:
        return statistics.mean(self.batches) if self.batches else 1.0


def run_appenders(
    append: Callable[[dict[str, Any]], object], bodies: Sequence[dict[str, Any]], appenders: int
) -> float:
    """Seconds for ``appenders`` threads to ``append`` ``bodies`` between them, each durably."""
    share = len(bodies) // appenders
    start = threading.Barrier(appenders + 1)
    errors: list[BaseException] = []

    def work(mine: Sequence[dict[str, Any]]) -> None:
        start.wait()
        try:
            for body in mine:
                append(body)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(bodies[n * share : (n + 1) * share],))
        for n in range(appenders)
    ]
    for thread in threads:
        thread.start()
    with gc_paused():
        start.wait()
        began = time.perf_counter()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - began
    if errors:
        raise errors[0]
    return elapsed


def assay_round(
    open_backend: Callable[[], LedgerBackend],
    bodies: Sequence[dict[str, Any]],
    appenders: int,
    series: Series,
) -> None:
    backend = open_backend()
    try:
        ledger = Ledger(backend)
        # Built now, as the daemon builds it at start, so that each commit's leaves go into
        # the Merkle tree as they are appended (a tree not yet built takes in nothing).
        ledger.refresh()

        def append(body: dict[str, Any]) -> None:
            ledger.append("verdict", body, session="s-bench", run="r-bench")

        elapsed = run_appenders(append, bodies, appenders)
        expected = len(bodies) // appenders * appenders
        if ledger.size != expected:
            sys.exit(f"abort: the ledger holds {ledger.size} entries, not the {expected} appended")
        stats = backend.statistics()  # type: ignore[attr-defined]
        series.rates.append(stats.entries / elapsed)
        series.batches.append(stats.entries / stats.batches)
    finally:
        backend.close()


def async_round(
    open_backend: Callable[[], LedgerBackend],
    bodies: Sequence[dict[str, Any]],
    tasks: int,
    series: Series,
) -> None:
    """``tasks`` asyncio tasks on one event loop append through ``DurableEvidence`` (the
    daemon's path: drafts made on the loop, one writer thread committing batches) and each
    awaits its entry's durability before appending the next."""
    ledger = Ledger(open_backend())
    ledger.refresh()  # the Merkle tree takes in each commit, as the daemon's does
    evidence = DurableEvidence(ledger)
    share = len(bodies) // tasks

    async def appender(mine: Sequence[dict[str, Any]]) -> None:
        for body in mine:
            await evidence.durable(evidence.append("verdict", body, session="s", run="r"))

    async def run() -> float:
        began = time.perf_counter()
        await asyncio.gather(*(appender(bodies[n * share : (n + 1) * share]) for n in range(tasks)))
        return time.perf_counter() - began

    try:
        with gc_paused():
            elapsed = asyncio.run(run())
        if ledger.size != share * tasks:
            sys.exit(f"abort: the ledger holds {ledger.size} entries, not {share * tasks}")
        series.rates.append(ledger.size / elapsed)
        series.batches.append(ledger.size / evidence.commits)
    finally:
        evidence.close()
        ledger.close()


def bench_sqlite_async(
    workdir: Path, pool: Sequence[dict[str, Any]], counts: dict[int, int], rounds: int
) -> list[Row]:
    rows: list[Row] = []
    serial = iter(range(1_000_000))
    for tasks in CONCURRENCY:
        bodies = pool[: counts[tasks]]
        row = Row(tasks, Series("assay, asyncio"), Series("raw sqlite3, same batch"))
        for _ in range(rounds):
            path = workdir / f"async-{next(serial)}.db"
            async_round(lambda path=path: SQLiteBackend(path), bodies, tasks, row.assay)
            batch = round_batch(row.assay.batches[-1])
            raw_sqlite_round(workdir / f"raw-async-{next(serial)}.db", bodies, batch, row.raw_same)
        rows.append(row)
    return rows


def sqlite_connect(path: Path, *, check_same_thread: bool = True) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=check_same_thread)
    (mode,) = connection.execute("PRAGMA journal_mode=WAL").fetchone()
    assert mode == "wal", mode
    connection.execute("PRAGMA synchronous=FULL")
    return connection


def raw_sqlite_round(
    path: Path, bodies: Sequence[dict[str, Any]], batch: int, series: Series
) -> None:
    """One thread, ``batch`` rows per transaction, each committed with a sync."""
    connection = sqlite_connect(path)
    try:
        connection.execute(RAW_SCHEMA)
        dumps = json.dumps
        with gc_paused():
            began = time.perf_counter()
            for at in range(0, len(bodies), batch):
                connection.execute("BEGIN IMMEDIATE")
                connection.executemany(
                    RAW_INSERT, [(dumps(body),) for body in bodies[at : at + batch]]
                )
                connection.execute("COMMIT")
            elapsed = time.perf_counter() - began
        series.rates.append(len(bodies) / elapsed)
        series.batches.append(float(batch))
    finally:
        connection.close()


def raw_postgres_round(
    url: str, schema: str, bodies: Sequence[dict[str, Any]], batch: int, series: Series
) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SET synchronous_commit = on")
        connection.execute(f"CREATE SCHEMA {schema}")
        connection.execute(f"CREATE TABLE {schema}.entries (id bigserial PRIMARY KEY, body text)")
        insert = f"INSERT INTO {schema}.entries (body) VALUES (%s)"
        dumps = json.dumps
        with gc_paused():
            began = time.perf_counter()
            for at in range(0, len(bodies), batch):
                with connection.transaction(), connection.cursor() as cursor:
                    cursor.executemany(insert, [(dumps(body),) for body in bodies[at : at + batch]])
            elapsed = time.perf_counter() - began
    series.rates.append(len(bodies) / elapsed)
    series.batches.append(float(batch))


class SyncOnlyBackend(GroupCommittedBackend):
    """``--ceiling``: group commit with the database taken out. A batch is kept in memory
    and waits for one ``fdatasync`` of a one-page file, so batches form as they do on SQLite
    while no insert, index or trigger costs anything."""

    def __init__(self, path: Path) -> None:
        self._entries: list[Entry] = []
        self._file = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        self._group = GroupCommit(self._write, name=self.url)

    @property
    def url(self) -> str:
        return "sync-only:"

    def _write(self, drafts: list[EntryDraft], sealed: list[Entry] | None) -> list[Entry]:
        if sealed is None:
            head = self._entries[-1] if self._entries else None
            sealed = seal_all(drafts, head.seq if head else 0, head.hash if head else GENESIS_HASH)
        os.pwrite(self._file, bytes(4096), 0)
        os.fdatasync(self._file)
        self._entries.extend(sealed)
        return sealed

    def read_canonical(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        return [(e.seq, e.canonical) for e in self._entries[max(start, 1) - 1 : max(stop, 1) - 1]]

    def size(self) -> int:
        return len(self._entries)

    def select(self, where: EntryFilter) -> list[Entry]:
        raise NotImplementedError("the ceiling store only appends")

    def stored_rows(self) -> Iterator[StoredRow]:
        raise NotImplementedError("the ceiling store only appends")

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        raise NotImplementedError("the ceiling store only appends")

    def stored_checkpoints(self) -> list[StoredCheckpoint]:
        return []

    def open_fires(self) -> list[Entry]:
        raise NotImplementedError("the ceiling store only appends")

    def take_lease(self, owner: str, duration_s: float, *, now: datetime | None = None) -> Lease:
        raise NotImplementedError("the ceiling store only appends")

    def renew_lease(
        self, owner: str, duration_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        raise NotImplementedError("the ceiling store only appends")

    def release_lease(self, owner: str) -> None:
        raise NotImplementedError("the ceiling store only appends")

    def leases(self, *, now: datetime | None = None) -> list[Lease]:
        return []

    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        raise NotImplementedError("the ceiling store only appends")

    def close(self) -> None:
        self._group.close()
        os.close(self._file)


class FloorStore:
    """``--floor``: the least work any Python group commit of these bodies could do. Each
    appender only runs ``json.dumps`` and queues the text; one writer thread inserts
    everything queued into raw's table in one transaction (raw's pragmas, one sync), then
    hands the batch's tokens to ``answer``. No canonicalization, no hashing, no Merkle tree,
    no indexes or triggers."""

    def __init__(self, path: Path, answer: Callable[[list[Any]], None]) -> None:
        self._connection = sqlite_connect(path, check_same_thread=False)
        self._connection.execute(RAW_SCHEMA)
        self._answer = answer
        self._ready = threading.Condition()
        self._queue: list[tuple[str, Any]] = []
        self._closing = False
        self.entries = 0
        self.batches = 0
        self._writer = threading.Thread(target=self._write, daemon=True)
        self._writer.start()

    def submit(self, body: dict[str, Any], token: Any) -> None:
        text = json.dumps(body)
        with self._ready:
            self._queue.append((text, token))
            self._ready.notify()

    def close(self) -> None:
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._writer.join()
        self._connection.close()

    def _write(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closing:
                    self._ready.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue, []
            self._connection.execute("BEGIN IMMEDIATE")
            self._connection.executemany(RAW_INSERT, [(text,) for text, _ in batch])
            self._connection.execute("COMMIT")
            self.entries += len(batch)
            self.batches += 1
            self._answer([token for _, token in batch])


def floor_round(
    path: Path, bodies: Sequence[dict[str, Any]], appenders: int, series: Series
) -> None:
    """``appenders`` threads through ``FloorStore``, each waiting for its own commit. A
    batch's appenders are woken one after another, each by the one before (as assay's group
    commit wakes them), which costs fewer waits for the GIL than waking all at once."""

    def wake_first(waiters: list[list[Any]]) -> None:
        for waiter, following in itertools.pairwise(waiters):
            waiter[1] = following[0]
        waiters[0][0].release()

    store = FloorStore(path, wake_first)

    def append(body: dict[str, Any]) -> None:
        waiter: list[Any] = [threading.Lock(), None]  # my lock, the next appender's
        waiter[0].acquire()
        store.submit(body, waiter)
        waiter[0].acquire()
        if waiter[1] is not None:
            waiter[1].release()

    try:
        elapsed = run_appenders(append, bodies, appenders)
    finally:
        store.close()
    series.rates.append(store.entries / elapsed)
    series.batches.append(store.entries / store.batches)


def floor_async_round(
    path: Path, bodies: Sequence[dict[str, Any]], tasks: int, series: Series
) -> None:
    """``tasks`` asyncio tasks through ``FloorStore``, each awaiting its own commit; the
    writer settles a batch's futures with one call into the loop, as ``DurableEvidence``
    does."""
    share = len(bodies) // tasks

    async def run() -> tuple[float, FloorStore]:
        loop = asyncio.get_running_loop()

        def settle(futures: list[asyncio.Future[None]]) -> None:
            for future in futures:
                future.set_result(None)

        store = FloorStore(path, lambda futures: loop.call_soon_threadsafe(settle, futures))

        async def appender(mine: Sequence[dict[str, Any]]) -> None:
            for body in mine:
                committed = loop.create_future()
                store.submit(body, committed)
                await committed

        try:
            began = time.perf_counter()
            await asyncio.gather(
                *(appender(bodies[n * share : (n + 1) * share]) for n in range(tasks))
            )
            return time.perf_counter() - began, store
        finally:
            store.close()

    with gc_paused():
        elapsed, store = asyncio.run(run())
    series.rates.append(store.entries / elapsed)
    series.batches.append(store.entries / store.batches)


RoundOnPath = Callable[[Path, Sequence[dict[str, Any]], int, Series], None]


def ceiling_round(
    path: Path, bodies: Sequence[dict[str, Any]], appenders: int, series: Series
) -> None:
    assay_round(lambda: SyncOnlyBackend(path), bodies, appenders, series)


def ceiling_async_round(
    path: Path, bodies: Sequence[dict[str, Any]], tasks: int, series: Series
) -> None:
    async_round(lambda: SyncOnlyBackend(path), bodies, tasks, series)


def bench_diagnostic(
    workdir: Path,
    pool: Sequence[dict[str, Any]],
    counts: dict[int, int],
    rounds: int,
    *,
    name: str,
) -> tuple[list[Row], list[Row]]:
    """The diagnostic ``name``'s rounds with threads and with asyncio tasks at each
    concurrency, each round beside raw sqlite3 at the batch size it reached."""
    thread_round, task_round = DIAGNOSTICS[name]
    thread_rows: list[Row] = []
    task_rows: list[Row] = []
    serial = iter(range(1_000_000))
    for appenders in CONCURRENCY:
        bodies = pool[: counts[appenders]]
        threads = Row(appenders, Series(name), Series("raw sqlite3"))
        tasks = Row(appenders, Series(name), Series("raw sqlite3"))
        for _ in range(rounds):
            for row, run in ((threads, thread_round), (tasks, task_round)):
                run(workdir / f"{name}-{next(serial)}", bodies, appenders, row.assay)
                batch = round_batch(row.assay.batches[-1])
                raw_path = workdir / f"raw-{name}-{next(serial)}.db"
                raw_sqlite_round(raw_path, bodies, batch, row.raw_same)
        thread_rows.append(threads)
        task_rows.append(tasks)
    return thread_rows, task_rows


DIAGNOSTICS: dict[str, tuple[RoundOnPath, RoundOnPath]] = {
    "ceiling": (ceiling_round, ceiling_async_round),
    "floor": (floor_round, floor_async_round),
}
DIAGNOSTIC_TITLES = {
    "ceiling": "Ceiling: assay with no database work, one fdatasync per batch",
    "floor": "Floor: json.dumps and a raw insert, no ledger work, one writer thread",
}


@dataclass
class Row:
    """One concurrency's figures on one store."""

    appenders: int
    assay: Series
    raw_same: Series
    raw_one: Series | None = None


def round_batch(mean: float) -> int:
    return max(1, round(mean))


def bench_sqlite(
    workdir: Path, pool: Sequence[dict[str, Any]], counts: dict[int, int], rounds: int
) -> list[Row]:
    rows: list[Row] = []
    serial = iter(range(1_000_000))
    for appenders in CONCURRENCY:
        bodies = pool[: counts[appenders]]
        row = Row(
            appenders,
            Series("assay"),
            Series("raw sqlite3, same batch"),
            Series("raw sqlite3, batch 1"),
        )
        for _ in range(rounds):
            path = workdir / f"assay-{next(serial)}.db"
            assay_round(lambda path=path: SQLiteBackend(path), bodies, appenders, row.assay)
            batch = round_batch(row.assay.batches[-1])
            raw_sqlite_round(workdir / f"raw-{next(serial)}.db", bodies, batch, row.raw_same)
            assert row.raw_one is not None
            raw_sqlite_round(workdir / f"raw-{next(serial)}.db", bodies, 1, row.raw_one)
        rows.append(row)
    return rows


@contextmanager
def durable_cluster() -> Iterator[PostgresCluster]:
    """The test suite's throwaway cluster, with fsync and full-page writes turned back on
    (it starts with them off), so a commit waits for the disk as on a real server."""
    with PostgresCluster() as cluster:
        with psycopg.connect(cluster.url, autocommit=True) as admin:
            admin.execute("ALTER SYSTEM SET fsync = on")
            admin.execute("ALTER SYSTEM SET full_page_writes = on")
            admin.execute("ALTER SYSTEM SET synchronous_commit = on")
            admin.execute("SELECT pg_reload_conf()")
        yield cluster


def bench_postgres(
    url: str, pool: Sequence[dict[str, Any]], counts: dict[int, int], rounds: int
) -> list[Row]:
    rows: list[Row] = []
    serial = iter(range(1_000_000))
    for appenders in CONCURRENCY:
        bodies = pool[: counts[appenders]]
        row = Row(appenders, Series("assay"), Series("raw psycopg, same batch"))
        for _ in range(rounds):
            schema = f"assay_{next(serial)}"
            assay_round(
                lambda schema=schema: PostgresBackend(url, schema=schema),
                bodies,
                appenders,
                row.assay,
            )
            batch = round_batch(row.assay.batches[-1])
            raw_postgres_round(url, f"raw_{next(serial)}", bodies, batch, row.raw_same)
        rows.append(row)
    return rows


def print_rows(title: str, rows: Sequence[Row], peer: str, who: str = "assay") -> None:
    print(f"\n{title}")
    print(
        f"  {'appenders':>9}{'mean batch':>12}{who + '/s':>11}{peer + '/s':>16}{'ratio':>9}"
        f"{'batch-1/s':>12}{'vs batch 1':>12}{who + ' median':>14}"
    )
    for row in rows:
        one = f"{row.raw_one.best:>12,.0f}" if row.raw_one else f"{'-':>12}"
        versus_one = (
            f"{ratio(row.assay.best / row.raw_one.best):>12}" if row.raw_one else f"{'-':>12}"
        )
        print(
            f"  {row.appenders:>9}{row.assay.mean_batch:>12.1f}{row.assay.best:>11,.0f}"
            f"{row.raw_same.best:>16,.0f}{ratio(row.assay.best / row.raw_same.best):>9}"
            f"{one}{versus_one}{row.assay.median:>14,.0f}"
        )


@dataclass(frozen=True)
class Target:
    text: str
    measured: float
    goal: float
    shown: str

    @property
    def status(self) -> str:
        return "PASS" if self.measured >= self.goal else "MISS"


def targets(sqlite_rows: Sequence[Row], who: str = "appenders") -> list[Target]:
    found = [
        Target(
            f"{row.appenders:>2} {who}: assay ≥ {SQLITE_RATIO_TARGET}x raw sqlite3",
            row.assay.best / row.raw_same.best,
            SQLITE_RATIO_TARGET,
            ratio(row.assay.best / row.raw_same.best),
        )
        for row in sqlite_rows
    ]
    sixty_four = next(row for row in sqlite_rows if row.appenders == 64)
    found.append(
        Target(
            f"64 {who}: assay ≥ {SQLITE_64_TARGET:,.0f} entries/s",
            sixty_four.assay.best,
            SQLITE_64_TARGET,
            f"{sixty_four.assay.best:,.0f}/s",
        )
    )
    return found


def series_json(series: Series | None) -> dict[str, Any] | None:
    if series is None:
        return None
    return {
        "best_entries_per_s": series.best,
        "median_entries_per_s": series.median,
        "round_entries_per_s": series.rates,
        "round_mean_batch": series.batches,
    }


def rows_json(rows: Sequence[Row]) -> list[dict[str, Any]]:
    return [
        {
            "appenders": row.appenders,
            "assay": series_json(row.assay),
            "raw_same_batch": series_json(row.raw_same),
            "raw_batch_1": series_json(row.raw_one),
            "ratio_same_batch": row.assay.best / row.raw_same.best,
        }
        for row in rows
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, smaller rounds (smoke run)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also run the appenders on a store with no database work (see above)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also run a group commit that does no ledger work at all (see above)",
    )
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else 3
    counts = {1: 500, 8: 2_000, 64: 6_400} if args.quick else {1: 2_000, 8: 8_000, 64: 32_000}
    pool = [build_body(index) for index in range(max(counts.values()))]
    body_bytes = statistics.mean(len(json.dumps(body)) for body in pool[:100])
    settings: dict[str, Any] = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "machine": platform.machine(),
        "rounds": rounds,
        "entries": counts,
        "body_bytes": body_bytes,
    }
    print(
        f"assay ledger benchmark: Python {settings['python']}, SQLite {settings['sqlite']}, "
        f"{rounds} round(s), best shown\n"
        f"bodies: ~{body_bytes:.0f} bytes of JSON each, all distinct; entries per round: "
        + ", ".join(f"{counts[n]:,} with {n}" for n in CONCURRENCY)
        + "\ndurability: SQLite WAL + synchronous=FULL, a commit per batch on both sides"
    )

    with tempfile.TemporaryDirectory(prefix="assay-bench-ledger-") as workdir:
        sqlite_rows = bench_sqlite(Path(workdir), pool, counts, rounds)
        async_rows = bench_sqlite_async(Path(workdir), pool, counts, rounds)
        diagnostics = {
            name: bench_diagnostic(Path(workdir), pool, counts, rounds, name=name)
            for name in DIAGNOSTICS
            if getattr(args, name)
        }
    print_rows("SQLite: durable appends per second, appender threads", sqlite_rows, "raw sqlite3")
    print_rows(
        "SQLite: the same with asyncio tasks through DurableEvidence (the daemon's path)",
        async_rows,
        "raw sqlite3",
    )

    for name, found_rows in diagnostics.items():
        for rows, who in zip(found_rows, ("appender threads", "asyncio tasks"), strict=True):
            title = f"{DIAGNOSTIC_TITLES[name]}, {who} (diagnostic)"
            print_rows(title, rows, "raw sqlite3", name)

    postgres_rows: list[Row] = []
    postgres_note = None
    try:
        with durable_cluster() as cluster:
            postgres_rows = bench_postgres(cluster.url, pool, counts, rounds)
    except PostgresMissingError as missing:
        postgres_note = str(missing)
    if postgres_rows:
        print_rows(
            "PostgreSQL (throwaway local cluster, fsync on, synchronous_commit on)",
            postgres_rows,
            "raw psycopg",
        )
    else:
        print(f"\nPostgreSQL: not run: {postgres_note}")

    found = targets(sqlite_rows) + targets(async_rows, "asyncio tasks")
    print("\nTargets (SPEC §11, informational)")
    for target in found:
        print(f"  {target.status:<5} {target.text:<50} measured {target.shown}")
    if args.json is not None:
        figures = {
            "settings": settings,
            "sqlite": rows_json(sqlite_rows),
            "sqlite_asyncio": rows_json(async_rows),
            "postgres": rows_json(postgres_rows) if postgres_rows else postgres_note,
            **{
                name: {"threads": rows_json(threads), "asyncio": rows_json(tasks)}
                for name, (threads, tasks) in diagnostics.items()
            },
            "targets": [
                {"target": t.text, "goal": t.goal, "measured": t.measured, "status": t.status}
                for t in found
            ],
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
