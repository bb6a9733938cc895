"""The SQLite backend, assay's embedded default: one file, WAL, durable group commits.

Appends go through ``GroupCommit``, one multi-row INSERT per batch, so several processes may
share the file and still get one chain; ``synchronous=FULL`` makes each commit durable before
any appender is answered. Triggers refuse an UPDATE or DELETE of an entry or a checkpoint, and
an insert that does not take the next seq and link to the last hash. Leases live in
``ledger_leases``, by this machine's clock; lease changes and ``close_fires`` run in
``BEGIN IMMEDIATE`` transactions, under the write lock every append takes.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final, TypeVar

from assay.errors import LedgerError
from assay.ledger.backends.group_commit import GroupCommit, GroupCommittedBackend
from assay.ledger.backends.protocol import BATCH
from assay.ledger.backends.query import EntryFilter, seq_span
from assay.ledger.backends.stored import (
    CHECKPOINT_FIELDS,
    COLUMNS,
    StoredCheckpoint,
    StoredRow,
    checkpoint_fields,
    entry_row,
    stored_checkpoints_of,
)
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import (
    GENESIS_HASH,
    Entry,
    EntryDraft,
    entry_from_canonical,
    format_timestamp,
    seal_all,
)
from assay.ledger.lease import Closing, Lease, check_lease, closeable, local_now, taken_over

_T = TypeVar("_T")

_APPEND_ONLY: Final = "assay ledger: {table} is append-only; {operation} refused"

SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS ledger_entries (
    seq INTEGER PRIMARY KEY,
    timestamp TEXT NOT NULL,
    kind TEXT NOT NULL,
    session TEXT,
    run TEXT,
    transition TEXT,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    entry TEXT NOT NULL
);
-- Lookups are by equality, which NULL never meets: an entry without a session, run or
-- transition (a verify verdict has neither run nor transition) costs that index nothing.
CREATE INDEX IF NOT EXISTS ledger_entries_session ON ledger_entries (session)
    WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS ledger_entries_transition ON ledger_entries (transition)
    WHERE transition IS NOT NULL;
CREATE INDEX IF NOT EXISTS ledger_entries_run ON ledger_entries (run)
    WHERE run IS NOT NULL;
CREATE INDEX IF NOT EXISTS ledger_entries_kind ON ledger_entries (kind);
CREATE INDEX IF NOT EXISTS ledger_entries_timestamp ON ledger_entries (timestamp);
CREATE TRIGGER IF NOT EXISTS ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY.format(table="ledger_entries", operation="UPDATE")}');
END;
CREATE TRIGGER IF NOT EXISTS ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, '{_APPEND_ONLY.format(table="ledger_entries", operation="DELETE")}');
END;
-- The entry before NEW must be stored and be the one NEW links to (entry 1 links to the
-- genesis hash, into an empty table); with seq unique, the entries stay 1..n, gapless.
-- One primary-key lookup per row.
CREATE TRIGGER IF NOT EXISTS ledger_entries_in_order BEFORE INSERT ON ledger_entries
WHEN NEW.prev_hash IS NOT COALESCE(
    (SELECT hash FROM ledger_entries WHERE seq = NEW.seq - 1),
    CASE WHEN NEW.seq = 1 AND NOT EXISTS (SELECT 1 FROM ledger_entries)
    THEN '{GENESIS_HASH}' END)
BEGIN SELECT RAISE(ABORT,
    'assay ledger: a new entry must take the next seq and link to the last entry''s hash');
END;
CREATE TABLE IF NOT EXISTS ledger_checkpoints (
    number INTEGER PRIMARY KEY,
    size INTEGER NOT NULL,
    root TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    key_id TEXT NOT NULL,
    signature TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS ledger_checkpoints_no_update BEFORE UPDATE ON ledger_checkpoints
BEGIN SELECT RAISE(ABORT,
    '{_APPEND_ONLY.format(table="ledger_checkpoints", operation="UPDATE")}');
END;
CREATE TRIGGER IF NOT EXISTS ledger_checkpoints_no_delete BEFORE DELETE ON ledger_checkpoints
BEGIN SELECT RAISE(ABORT,
    '{_APPEND_ONLY.format(table="ledger_checkpoints", operation="DELETE")}');
END;
-- Operational state beside the evidence, changed in place: not entries, never chained.
CREATE TABLE IF NOT EXISTS ledger_leases (
    owner TEXT PRIMARY KEY,
    renewed_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
"""

_ROW_COLUMNS: Final = ", ".join(("seq", *COLUMNS, "entry"))
_INSERT: Final = f"INSERT INTO ledger_entries ({_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_HEAD: Final = "SELECT seq, hash FROM ledger_entries ORDER BY seq DESC LIMIT 1"
_HEAD_MOVED: Final = (
    "a new entry must take the next seq",
    "UNIQUE constraint failed: ledger_entries.seq",
)
"""What refusing a batch sealed after a stale head says: its first entry links to a hash
that is not its predecessor's, or takes a seq another writer already took."""
_ONE_STATEMENT_ROWS: Final = 1000
"""The most rows written by one multi-row INSERT (9 columns each: well within SQLite's limit
of 32,766 parameters); a larger batch is written row by row in one transaction."""
_VALUES: Final = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
OPEN_FIRES: Final = """
SELECT seq, entry FROM ledger_entries WHERE seq IN (
    SELECT MAX(CASE WHEN kind = 'fire' THEN seq END) FROM ledger_entries
    WHERE transition IS NOT NULL AND kind IN ('fire', 'settlement', 'refusal')
    GROUP BY session, transition
    HAVING MAX(CASE WHEN kind = 'fire' THEN seq END)
        > COALESCE(MAX(CASE WHEN kind <> 'fire' THEN seq END), 0)
) ORDER BY seq
"""
"""Each (session, transition)'s latest fire that no settlement or refusal follows: one
grouping pass over the rows' columns, and the open fires' bodies alone read."""
_ENDED: Final = (
    "SELECT 1 FROM ledger_entries WHERE transition = ? AND session IS ? "
    "AND kind IN ('settlement', 'refusal') AND seq > ? LIMIT 1"
)
_LEASES: Final = "SELECT owner, renewed_at, expires_at FROM ledger_leases ORDER BY owner"


@functools.lru_cache(maxsize=256)
def _insert_rows(count: int) -> str:
    return f"INSERT INTO ledger_entries ({_ROW_COLUMNS}) VALUES {', '.join([_VALUES] * count)}"


def _row_values(entries: list[Entry]) -> list[object]:
    return [value for entry in entries for value in entry_row(entry)]


def _held(owner: str, moment: datetime, duration_s: float) -> Lease:
    return Lease(owner, moment, moment + timedelta(seconds=duration_s), live=True)


def _lease_row(lease: Lease) -> tuple[str, str, str]:
    return lease.owner, format_timestamp(lease.renewed_at), format_timestamp(lease.expires_at)


def _lease(row: Sequence[Any], now: datetime) -> Lease:
    owner, renewed, expires = row
    expiry = datetime.fromisoformat(expires)
    return Lease(owner, datetime.fromisoformat(renewed), expiry, live=expiry > now)


def _ended(connection: sqlite3.Connection, closing: Closing) -> bool:
    """Whether a settlement or refusal of ``closing``'s pair follows its fire."""
    settlement = closing.settlement
    found = connection.execute(
        _ENDED, (settlement.transition, settlement.session, closing.fire_seq)
    ).fetchone()
    return found is not None


def _cannot_write(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because it may not write the file or create one beside it."""
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))


def _text(data: bytes) -> str:
    # Keeps bytes that are not UTF-8 (a tampered row) visible instead of failing the read.
    return data.decode("utf-8", "surrogateescape")


def _as_bytes(value: object) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, bytes):
        return value
    return repr(value).encode()


class SQLiteBackend(GroupCommittedBackend):
    """A ledger in one SQLite file, created with its schema if missing, unless ``create`` is
    false: then a path that holds no ledger is refused (``LedgerError``) and left untouched.

    Opening an existing ledger writes nothing: no write lock, so it never waits for another
    writer, and a file this process cannot write (read-only storage, another user's file)
    can still be read and verified. The write connection opens with the first append.
    When no other process has the file open (there is no ``-wal`` file beside it) and SQLite
    cannot create the files a WAL reader needs, the ledger is read as the file holds it.

    ``busy_timeout`` bounds how long a write waits for another process holding the file's
    write lock before the append fails.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 60.0, create: bool = True
    ) -> None:
        self._path = Path(path)
        self._url = f"sqlite:///{self._path}"
        self._busy_timeout = busy_timeout
        self._read_lock = threading.Lock()
        self._closed = False
        if create:
            self._reader = self._create()
        else:
            self._reader = self._open_existing()
        self._reader.text_factory = _text
        self._writer: sqlite3.Connection | None = None  # opened by the first append
        self._group = GroupCommit(self._write, name=self._url)
        self._leaser: sqlite3.Connection | None = None  # opened by the first lease change
        self._lease_lock = threading.Lock()

    @property
    def url(self) -> str:
        return self._url

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def read_canonical(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        span = seq_span(start, stop)
        if span is None:
            return []
        rows = self._fetch(
            "SELECT seq, entry FROM ledger_entries WHERE seq >= ? AND seq <= ? ORDER BY seq", span
        )
        return [(seq, _as_bytes(entry)) for seq, entry in rows]

    def size(self) -> int:
        ((last,),) = self._fetch("SELECT MAX(seq) FROM ledger_entries", ())
        return int(last or 0)

    def select(self, where: EntryFilter) -> list[Entry]:
        bounded = where.within_64_bits()
        if bounded is None:
            return []
        clauses = ["seq > ?"]
        parameters: list[Any] = [bounded.after]
        for column in ("session", "transition", "run", "kind"):
            value = getattr(bounded, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                parameters.append(value)
        if bounded.since is not None:
            clauses.append("timestamp >= ?")
            parameters.append(bounded.since)
        if bounded.until is not None:
            clauses.append("timestamp < ?")
            parameters.append(bounded.until)
        parameters.append(-1 if bounded.limit is None else bounded.limit)
        rows = self._fetch(
            f"SELECT seq, entry FROM ledger_entries WHERE {' AND '.join(clauses)} "
            "ORDER BY seq LIMIT ?",
            parameters,
        )
        return [entry_from_canonical(_as_bytes(entry), seq) for seq, entry in rows]

    def stored_rows(self) -> Iterator[StoredRow]:
        after = -(2**63)
        while True:
            rows = self._fetch(
                f"SELECT {_ROW_COLUMNS} FROM ledger_entries WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, BATCH),
            )
            for seq, *columns, entry in rows:
                yield StoredRow(seq, _as_bytes(entry), dict(zip(COLUMNS, columns, strict=True)))
            if len(rows) < BATCH:
                return
            after = rows[-1][0]

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._read_lock:
            self._check_open()
            try:
                self._reader.execute(
                    f"INSERT INTO ledger_checkpoints ({', '.join(CHECKPOINT_FIELDS)}) "
                    "VALUES (?, ?, ?, ?, ?)",
                    checkpoint_fields(checkpoint),
                )
            except sqlite3.Error as exc:
                raise self._error("cannot store a checkpoint in", exc) from exc

    def stored_checkpoints(self) -> list[StoredCheckpoint]:
        rows = self._fetch(
            f"SELECT number, {', '.join(CHECKPOINT_FIELDS)} FROM ledger_checkpoints "
            "ORDER BY number",
            (),
        )
        return stored_checkpoints_of(rows)

    def open_fires(self) -> list[Entry]:
        rows = self._fetch(OPEN_FIRES, ())
        return [entry_from_canonical(_as_bytes(entry), seq) for seq, entry in rows]

    def take_lease(self, owner: str, duration_s: float, *, now: datetime | None = None) -> Lease:
        check_lease(owner, duration_s)
        lease = _held(owner, local_now(now), duration_s)
        self._change_leases(
            lambda connection: connection.execute(
                "INSERT INTO ledger_leases (owner, renewed_at, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (owner) DO UPDATE SET renewed_at = excluded.renewed_at, "
                "expires_at = excluded.expires_at",
                _lease_row(lease),
            )
        )
        return lease

    def renew_lease(
        self, owner: str, duration_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        check_lease(owner, duration_s)
        lease = _held(owner, local_now(now), duration_s)
        owner_, renewed, expires = _lease_row(lease)
        renewed_rows = self._change_leases(
            lambda connection: (
                connection.execute(
                    "UPDATE ledger_leases SET renewed_at = ?, expires_at = ? WHERE owner = ?",
                    (renewed, expires, owner_),
                ).rowcount
            )
        )
        return lease if renewed_rows else None

    def release_lease(self, owner: str) -> None:
        self._change_leases(
            lambda connection: connection.execute(
                "DELETE FROM ledger_leases WHERE owner = ?", (owner,)
            )
        )

    def leases(self, *, now: datetime | None = None) -> list[Lease]:
        moment = local_now(now)
        return [_lease(row, moment) for row in self._fetch(_LEASES, ())]

    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        moment = local_now(now)

        def close(connection: sqlite3.Connection) -> list[Entry]:
            leases = {row[0]: _lease(row, moment) for row in connection.execute(_LEASES)}
            chosen = [
                closing
                for closing in closings
                if closeable(closing, ended=_ended(connection, closing), leases=leases, by=by)
            ]
            if not chosen:
                return []
            head = connection.execute(_HEAD).fetchone()
            entries = seal_all([c.settlement for c in chosen], *(head or (0, GENESIS_HASH)))
            connection.executemany(_INSERT, [entry_row(entry) for entry in entries])
            connection.executemany(
                "DELETE FROM ledger_leases WHERE owner = ?",
                [(owner,) for owner in taken_over(chosen, leases)],
            )
            return entries

        return self._change_leases(close)

    def _change_leases(self, change: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``change`` in a write transaction of the lease connection, durably committed."""
        with self._lease_lock:
            self._check_open()
            try:
                if self._leaser is None:
                    self._leaser = self._connect()
                connection = self._leaser
                connection.execute("BEGIN IMMEDIATE")
                try:
                    done = change(connection)
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._error("cannot change the leases in", exc) from exc
            return done

    def close(self) -> None:
        with self._read_lock:
            if self._closed:
                return
            self._closed = True
        self._group.close()
        if self._writer is not None:
            self._writer.close()
        with self._lease_lock:
            if self._leaser is not None:
                self._leaser.close()
        with self._read_lock:
            self._reader.close()

    def _create(self) -> sqlite3.Connection:
        """A connection to the ledger, its schema created if missing."""
        try:
            connection = self._connect()
        except sqlite3.Error as exc:
            raise self._error("cannot open", exc) from exc
        try:
            connection.executescript(f"BEGIN IMMEDIATE;{SCHEMA}COMMIT;")
        except sqlite3.Error as exc:
            connection.close()
            raise self._error("cannot create the ledger schema in", exc) from exc
        return connection

    def _open_existing(self) -> sqlite3.Connection:
        """A connection to the ledger already at the path, opened without writing anything;
        ``LedgerError``, leaving the path as it was, if there is none."""
        if not self._path.is_file():
            state = "is a directory" if self._path.is_dir() else "does not exist"
            raise LedgerError(
                f"there is no ledger at {self._url}: {self._path} {state}; check the path "
                "(reading a ledger never creates one)",
                url=self._url,
            )
        try:
            try:
                connection, found = self._probe("mode=rw")  # read-only if the file is
            except sqlite3.OperationalError as exc:
                # A WAL reader needs the -wal and -shm files; when it can create neither and
                # no other process has the file open, the file alone holds the whole ledger.
                if (
                    not _cannot_write(exc)
                    or self._path.with_name(f"{self._path.name}-wal").exists()
                ):
                    raise
                connection, found = self._probe("mode=ro&immutable=1")
        except sqlite3.Error as exc:
            raise self._error("cannot open", exc) from exc
        if not found:
            connection.close()
            raise LedgerError(
                f"there is no ledger at {self._url}: {self._path} is a SQLite database without "
                "assay's ledger_entries table; check the path",
                url=self._url,
            )
        return connection

    def _probe(self, parameters: str) -> tuple[sqlite3.Connection, bool]:
        """A connection with the URI ``parameters``, and whether the ledger's table is there."""
        connection = sqlite3.connect(
            f"{self._path.absolute().as_uri()}?{parameters}",
            uri=True,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            found = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ledger_entries'"
            ).fetchone()
        except BaseException:
            connection.close()
            raise
        return connection, found is not None

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self._path,
            timeout=self._busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            (mode,) = connection.execute("PRAGMA journal_mode=WAL").fetchone()
            if mode != "wal":
                raise sqlite3.OperationalError(f"journal_mode is {mode}, and WAL is needed")
            connection.execute("PRAGMA synchronous=FULL")
        except BaseException:
            connection.close()
            raise
        return connection

    def _write(self, drafts: list[EntryDraft], sealed: list[Entry] | None) -> list[Entry]:
        if self._writer is None:
            try:
                self._writer = self._connect()
            except sqlite3.Error as exc:
                raise self._error("cannot write to", exc) from exc
        if sealed is not None and len(sealed) <= _ONE_STATEMENT_ROWS:
            try:
                # One statement in autocommit: its own transaction, durable (synchronous=FULL)
                # when it returns, with one release of the GIL instead of one per row. The
                # trigger refuses it, storing nothing, if another process moved the head.
                self._writer.execute(_insert_rows(len(sealed)), _row_values(sealed))
            except sqlite3.IntegrityError as exc:
                if not any(sign in str(exc) for sign in _HEAD_MOVED):
                    raise
            else:
                return sealed
        return self._write_locked(drafts)

    def _write_locked(self, drafts: list[EntryDraft]) -> list[Entry]:
        """Read the head inside the write transaction, then seal and insert after it."""
        connection = self._writer
        assert connection is not None  # opened by _write
        try:
            connection.execute("BEGIN IMMEDIATE")
            head = connection.execute(_HEAD).fetchone()
            entries = seal_all(drafts, *(head or (0, GENESIS_HASH)))
            connection.executemany(_INSERT, [entry_row(entry) for entry in entries])
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return entries

    def _fetch(self, sql: str, parameters: Sequence[Any]) -> list[Any]:
        with self._read_lock:
            self._check_open()
            try:
                return self._reader.execute(sql, parameters).fetchall()
            except sqlite3.Error as exc:
                raise self._error("cannot read", exc) from exc

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError(f"the ledger {self._url} is closed; open it again", url=self._url)

    def _error(self, doing: str, exc: sqlite3.Error) -> LedgerError:
        hint = ""
        if "unable to open" in str(exc):
            hint = (
                f"; check that the directory {self._path.parent.absolute()} exists and is writable"
            )
            if not self._path.is_absolute():
                hint += (
                    " (a path after sqlite:/// is relative to the working directory; "
                    f"sqlite:////{self._path} names /{self._path})"
                )
        elif _cannot_write(exc):
            hint = "; check that this user may write the file and its directory"
        return LedgerError(f"{doing} the SQLite ledger {self._url}: {exc}{hint}", url=self._url)
