"""The three ledger backends as test subjects: a fresh, empty ledger of each kind, and its
database opened directly, around the backend, for what a backend would never do."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from assay.ledger import LedgerBackend, MemoryBackend, SQLiteBackend
from assay.ledger.backends.postgres import PostgresBackend, lock_key
from assay.ledger.backends.sqlite import SCHEMA
from assay.ledger.entry import EntryDraft

KINDS = ("memory", "sqlite", "postgres")
TIMESTAMP = "2026-01-01T00:00:{:02d}.000000Z"


def draft(
    kind: str = "fire",
    body: Any = None,
    *,
    second: int = 0,
    session: str | None = None,
    run: str | None = None,
    transition: str | None = None,
) -> EntryDraft:
    """A draft stamped at ``second`` past midnight on 2026-01-01."""
    return EntryDraft(
        kind=kind,
        timestamp=TIMESTAMP.format(second),
        body={} if body is None else body,
        session=session,
        run=run,
        transition=transition,
    )


class Store:
    """Where one test's ledger lives; ``open`` gives another backend on the same ledger."""

    def __init__(self, kind: str, tmp_path: Path, postgres_url: str | None) -> None:
        self.kind = kind
        self.path = tmp_path / "ledger.db"
        self.postgres_url = postgres_url
        self.schema = f"t_{uuid.uuid4().hex[:16]}"
        self._memory = MemoryBackend()
        self._opened: list[LedgerBackend] = []

    @property
    def url(self) -> str:
        if self.kind == "memory":
            return "memory:"
        if self.kind == "sqlite":
            return f"sqlite:///{self.path}"
        return f"{self.postgres_url}?schema={self.schema}"

    def open(self) -> LedgerBackend:
        backend: LedgerBackend
        if self.kind == "memory":
            backend = self._memory
        elif self.kind == "sqlite":
            backend = SQLiteBackend(self.path)
        else:
            assert self.postgres_url is not None
            backend = PostgresBackend(self.postgres_url, schema=self.schema)
        self._opened.append(backend)
        return backend

    def close(self) -> None:
        for backend in self._opened:
            backend.close()

    def execute(self, statement: str, parameters: tuple[Any, ...] = ()) -> None:
        """Run SQL on the ledger's database directly, as someone with database access could.

        ``{entries}`` and ``{checkpoints}`` name the tables; SQLite uses ``?`` parameters
        and PostgreSQL ``%s``.
        """
        if self.kind == "sqlite":
            with closing_sqlite(self.path) as connection:
                connection.execute(
                    statement.format(entries="ledger_entries", checkpoints="ledger_checkpoints"),
                    parameters,
                )
        else:
            assert self.postgres_url is not None
            with psycopg.connect(self.postgres_url, autocommit=True) as connection:
                connection.execute(
                    statement.format(
                        entries=f"{self.schema}.ledger_entries",
                        checkpoints=f"{self.schema}.ledger_checkpoints",
                    ),
                    parameters,
                )

    def tamper(self, statement: str, parameters: tuple[Any, ...] = ()) -> None:
        """``execute`` past the append-only triggers, as someone with full access to the
        database could: SQLite's are dropped and made again, PostgreSQL's do not fire for a
        session in replica mode."""
        if self.kind == "sqlite":
            with closing_sqlite(self.path) as connection:
                for table in ("ledger_entries", "ledger_checkpoints"):
                    connection.execute(f"DROP TRIGGER {table}_no_update")
                    connection.execute(f"DROP TRIGGER {table}_no_delete")
                connection.execute(
                    statement.format(entries="ledger_entries", checkpoints="ledger_checkpoints"),
                    parameters,
                )
                connection.executescript(SCHEMA)  # creates the triggers again
        else:
            assert self.postgres_url is not None
            with psycopg.connect(self.postgres_url, autocommit=True) as connection:
                connection.execute("SET session_replication_role = replica")
                connection.execute(
                    statement.format(
                        entries=f"{self.schema}.ledger_entries",
                        checkpoints=f"{self.schema}.ledger_checkpoints",
                    ),
                    parameters,
                )

    @contextmanager
    def writer_lock_held(self) -> Iterator[None]:
        """Hold the lock every appender must take, from outside, until the block ends."""
        if self.kind == "sqlite":
            with closing_sqlite(self.path) as connection:
                connection.execute("BEGIN IMMEDIATE")
                yield
                connection.execute("COMMIT")
        else:
            assert self.postgres_url is not None
            with (
                psycopg.connect(self.postgres_url, autocommit=True) as holder,
                holder.transaction(),
            ):
                holder.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(self.schema),))
                yield


@contextmanager
def closing_sqlite(path: Path) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        yield connection
    finally:
        connection.close()
