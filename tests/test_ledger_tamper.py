"""Every single change to a stored ledger is detected by ``verify_ledger`` (SPEC §7).

A small signed ledger (50 entries, checkpoints at 20 and 50) is tampered with once per case,
the way someone with write access to the database could: the append-only triggers bypassed,
then one field of one row changed (one character, or on SQLite one raw byte, of a text
field such as the entry's JSON body, its hash, prev_hash, kind or timestamp; a seq or a
checkpoint's size set to another number) or one entry row deleted. Each case starts from a
fresh copy (SQLite) or a restored table (PostgreSQL), and the report must name the
tampered entry, or the tampered checkpoint. Deleting a whole checkpoint is not among the
cases: what remains is a ledger that is consistent and signed, which only a copy of the
deleted checkpoint kept elsewhere could reveal.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from assay.clock import VirtualClock
from assay.ledger import (
    Ledger,
    LedgerBackend,
    MemoryBackend,
    SigningKey,
    SQLiteBackend,
    verify_ledger,
)
from assay.ledger.backends.postgres import PostgresBackend
from assay.ledger.backends.stored import CHECKPOINT_FIELDS, COLUMNS

TAMPERS = 1000
SIZE = 50
SEED = 1962
ENTRY_COLUMNS = ("seq", *COLUMNS, "entry")
NULLABLE = ("session", "run", "transition")
# Characters a flipped one is replaced with: JSON's own punctuation, digits, hex, letters,
# escapes, and characters that take two, three and four bytes in UTF-8.
REPLACEMENTS = '{}[]":,.-+0123456789abcdefABCDEFxyz \\/tnu\x7féñ€日😀'


def _body(rng: random.Random, n: int) -> Any:
    shapes: list[Any] = [
        {"action": "inbox.send", "to": "ops@example.com", "attempt": n, "ok": n % 2 == 0},
        {"verdict": "pass", "criteria": [{"id": "c1", "held": True}, {"id": "c2", "held": None}]},
        {"reading": n * 0.25, "unit": "m/s", "limits": [-1.5, 1e21, 2**53 - 1]},
        {"note": "café — 日本語 — 😀", "nested": {"deeper": {"deepest": ["a", "b", n]}}},
        {"empty": {}, "list": [], "text": 'line\nbreak\ttab "quoted"'},
        {"critique": "x" * rng.randint(0, 40), "cost": {"tokens": rng.randint(0, 9999)}},
    ]
    return shapes[n % len(shapes)]


class _SteppingClock(VirtualClock):
    """Virtual time whose wall clock moves on a little at every reading."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(wall_start=datetime(2026, 7, 23, 16, 0, tzinfo=UTC))
        self._rng = rng
        self._wall = datetime(2026, 7, 23, 16, 0, tzinfo=UTC)

    def wall(self) -> datetime:
        self._wall += timedelta(seconds=self._rng.uniform(0.001, 2.0))
        return self._wall


def _build(backend: LedgerBackend) -> SigningKey:
    """Fill ``backend`` with the signed 50-entry ledger every case starts from."""
    rng = random.Random(SEED)
    key = SigningKey.generate()
    ledger = Ledger(backend, clock=_SteppingClock(rng))
    kinds = ("fire", "settlement", "verdict", "commit", "refusal", "escalation", "park", "resume")
    for n in range(SIZE):
        ledger.append(
            kinds[n % len(kinds)],
            _body(rng, n),
            session=None if n % 4 == 0 else f"session-{n % 3}",
            run=None if n % 3 == 0 else f"run-{n % 2}",
            transition=None if n % 5 == 0 else f"inbox.send#{n}",
        )
        if n + 1 in (20, SIZE):
            ledger.checkpoint(key)
    assert verify_ledger(backend, key.public_key).ok
    return key


@dataclass(frozen=True)
class Tamper:
    """One change: ``column`` of the row ``key`` in ``table`` set to ``value``, or the row
    deleted when ``column`` is None; and what the report must name."""

    table: str
    key: int
    column: str | None
    value: object
    expect_seq: int | None
    expect_checkpoint: int | None = None

    def __str__(self) -> str:
        if self.column is None:
            return f"delete {self.table} row {self.key}"
        return f"{self.table} row {self.key}: set {self.column} to {self.value!r}"


def _changed_text(
    rng: random.Random, original: str, *, raw_bytes: bool, focus: tuple[int, int] | None
) -> str | bytes:
    """``original`` with one character, or one UTF-8 byte, changed."""
    start, stop = focus if focus and rng.random() < 0.6 else (0, len(original))
    if raw_bytes and rng.random() < 0.3:
        data = bytearray(original.encode())
        position = rng.randrange(len(data))
        data[position] = rng.choice([b for b in range(256) if b != data[position]])
        return bytes(data)
    position = rng.randrange(start, stop)
    replacement = rng.choice([c for c in REPLACEMENTS if c != original[position]])
    return original[:position] + replacement + original[position + 1 :]


def make_tamper(
    rng: random.Random,
    entries: list[dict[str, Any]],
    checkpoints: list[dict[str, Any]],
    *,
    raw_bytes: bool,
) -> Tamper:
    """A random single change to the stored ledger."""
    if rng.random() < 0.1:
        checkpoint = rng.choice(checkpoints)
        number = checkpoint["number"]
        column = rng.choice(CHECKPOINT_FIELDS)
        value: object
        if column == "size":
            value = rng.choice([size for size in range(SIZE + 3) if size != checkpoint["size"]])
        else:
            value = _changed_text(rng, checkpoint[column], raw_bytes=raw_bytes, focus=None)
        return Tamper("checkpoints", number, column, value, None, number)
    row = rng.choice(entries)
    seq = row["seq"]
    if rng.random() < 0.05:
        return Tamper("entries", seq, None, None, seq)
    column = rng.choice([*ENTRY_COLUMNS, "entry", "entry", "entry"])
    if column == "seq":
        value = rng.choice([rng.randint(SIZE + 1, 10**6), rng.randint(-(10**6), 0)])
        # A seq below 1 sorts first, so the first position is where the order breaks.
        return Tamper("entries", seq, column, value, seq if value > 0 else 1)
    original = row[column]
    if original is None:
        return Tamper("entries", seq, column, rng.choice(["", "x", "session-1"]), seq)
    if column in NULLABLE and rng.random() < 0.2:
        return Tamper("entries", seq, column, None, seq)
    focus = None
    if column == "entry":  # most often inside the body's JSON
        focus = (len('{"body":'), original.rindex(',"hash":"'))
    value = _changed_text(rng, original, raw_bytes=raw_bytes, focus=focus)
    return Tamper("entries", seq, column, value, seq)


def _rows(backend: LedgerBackend) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    entries = [
        {"seq": row.seq, "entry": row.entry.decode(), **row.columns}
        for row in backend.stored_rows()
    ]
    checkpoints = [
        {"number": stored.number, **stored.fields} for stored in backend.stored_checkpoints()
    ]
    return entries, checkpoints


def _check(report: Any, tamper: Tamper) -> None:
    assert not report.ok, f"undetected: {tamper}"
    problem = report.problem
    if tamper.expect_checkpoint is not None:
        assert problem.checkpoint == tamper.expect_checkpoint, (str(tamper), str(problem))
    else:
        assert problem.seq == tamper.expect_seq, (str(tamper), str(problem))


def _key_column(table: str) -> str:
    return "seq" if table == "entries" else "number"


def test_every_single_change_to_a_sqlite_ledger_is_detected(tmp_path: Path) -> None:
    template = tmp_path / "template.db"
    with SQLiteBackend(template) as backend:
        key = _build(backend)
        entries, checkpoints = _rows(backend)
    assert not template.with_name("template.db-wal").exists()
    image = template.read_bytes()
    rng = random.Random(SEED)
    copy = tmp_path / "tampered.db"
    began = time.monotonic()
    detected = 0
    for _ in range(TAMPERS):
        tamper = make_tamper(rng, entries, checkpoints, raw_bytes=True)
        copy.write_bytes(image)
        connection = sqlite3.connect(copy, isolation_level=None)
        table = f"ledger_{tamper.table}"
        connection.execute(f"DROP TRIGGER {table}_no_update")
        connection.execute(f"DROP TRIGGER {table}_no_delete")
        where = f"WHERE {_key_column(tamper.table)} = ?"
        if tamper.column is None:
            changed = connection.execute(f"DELETE FROM {table} {where}", (tamper.key,))
        else:
            placeholder = "CAST(? AS TEXT)" if isinstance(tamper.value, bytes) else "?"
            changed = connection.execute(
                f"UPDATE {table} SET {tamper.column} = {placeholder} {where}",
                (tamper.value, tamper.key),
            )
        assert changed.rowcount == 1, str(tamper)
        connection.close()
        with SQLiteBackend(copy) as tampered:
            report = verify_ledger(tampered, key.public_key)
        _check(report, tamper)
        detected += 1
    print(
        f"\nsqlite: {detected} of {TAMPERS} single changes detected, each naming the "
        f"tampered row, in {time.monotonic() - began:.1f} s"
    )


@pytest.fixture
def postgres_ledger(postgres_url: str) -> Iterator[tuple[PostgresBackend, psycopg.Connection[Any]]]:
    schema = f"tamper_{random.Random().getrandbits(48):012x}"
    backend = PostgresBackend(postgres_url, schema=schema)
    with psycopg.connect(postgres_url) as admin:
        yield backend, admin
    backend.close()


def test_every_single_change_to_a_postgresql_ledger_is_detected(
    postgres_ledger: tuple[PostgresBackend, psycopg.Connection[Any]],
) -> None:
    backend, admin = postgres_ledger
    key = _build(backend)
    entries, checkpoints = _rows(backend)
    schema = backend.schema
    # The pristine rows, to restore from after each case.
    admin.execute(f"CREATE TABLE {schema}.pristine_entries AS TABLE {schema}.ledger_entries")
    admin.execute(
        f"CREATE TABLE {schema}.pristine_checkpoints AS TABLE {schema}.ledger_checkpoints"
    )
    # Ordinary triggers do not fire in replica mode: the append-only triggers are bypassed.
    admin.execute("SET session_replication_role = replica")
    admin.commit()
    pristine = verify_ledger(backend, key.public_key)
    rng = random.Random(SEED)
    began = time.monotonic()
    detected = 0
    for _ in range(TAMPERS):
        tamper = make_tamper(rng, entries, checkpoints, raw_bytes=False)
        table = f"{schema}.ledger_{tamper.table}"
        where = f"WHERE {_key_column(tamper.table)} = %s"
        if tamper.column is None:
            changed = admin.execute(f"DELETE FROM {table} {where}", (tamper.key,))
        else:
            changed = admin.execute(
                f"UPDATE {table} SET {tamper.column} = %s {where}",
                (tamper.value, tamper.key),
            )
        assert changed.rowcount == 1, str(tamper)
        admin.commit()
        report = verify_ledger(backend, key.public_key)
        _check(report, tamper)
        detected += 1
        for name in ("entries", "checkpoints"):
            admin.execute(f"DELETE FROM {schema}.ledger_{name}")
            admin.execute(
                f"INSERT INTO {schema}.ledger_{name} OVERRIDING SYSTEM VALUE "
                f"TABLE {schema}.pristine_{name}"
            )
        admin.commit()
        assert verify_ledger(backend, key.public_key) == pristine, f"not restored after {tamper}"
    print(
        f"\npostgres: {detected} of {TAMPERS} single changes detected, each naming the "
        f"tampered row, in {time.monotonic() - began:.1f} s"
    )


def test_the_cases_cover_every_field_and_both_tables() -> None:
    backend = MemoryBackend()
    _build(backend)
    entries = [
        {"seq": row.seq, "entry": row.entry.decode(), **dict.fromkeys(COLUMNS, "x")}
        for row in backend.stored_rows()
    ]
    checkpoints = [
        {"number": stored.number, **stored.fields} for stored in backend.stored_checkpoints()
    ]
    rng = random.Random(SEED)
    cases = [make_tamper(rng, entries, checkpoints, raw_bytes=True) for _ in range(TAMPERS)]
    touched = {(case.table, case.column) for case in cases}
    assert touched >= {("entries", column) for column in (*ENTRY_COLUMNS, None)}
    assert touched >= {("checkpoints", column) for column in CHECKPOINT_FIELDS}
    assert any(isinstance(case.value, bytes) for case in cases)
