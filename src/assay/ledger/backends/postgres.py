"""The PostgreSQL backend: one gapless order shared by writers in many processes and machines.

Each append transaction takes a transaction-level advisory lock, so writers anywhere
serialize while readers never wait; within one process appends go through ``GroupCommit``,
one pipelined transaction per batch. Triggers refuse UPDATE, DELETE and TRUNCATE of entries
and checkpoints, and an insert that does not take the next seq and link to the last hash. The
schema is created on open. Leases live in ``ledger_leases``, timed by the server's ``now()``;
``close_fires`` runs under the append lock, the lease rows locked.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, LiteralString, NoReturn

import psycopg
from psycopg import sql

from assay.errors import LedgerError
from assay.ledger.backends.group_commit import GroupCommit, GroupCommittedBackend
from assay.ledger.backends.protocol import BATCH
from assay.ledger.backends.query import EntryFilter, seq_span
from assay.ledger.backends.stored import (
    COLUMNS,
    StoredCheckpoint,
    StoredRow,
    checkpoint_fields,
    entry_row,
    stored_checkpoints_of,
)
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.credentials import hide_password, shows_password, withheld_reason
from assay.ledger.entry import GENESIS_HASH, Entry, EntryDraft, entry_from_canonical, seal_all
from assay.ledger.lease import Closing, Lease, check_lease, closeable, local_now, taken_over

_SCHEMA: Final[LiteralString] = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {entries} (
    seq bigint PRIMARY KEY,
    timestamp text NOT NULL,
    kind text NOT NULL,
    session text,
    run text,
    transition text,
    prev_hash text NOT NULL,
    hash text NOT NULL,
    entry text NOT NULL
);
-- Lookups are by equality, which NULL never meets: an entry without a session, run or
-- transition (a verify verdict has neither run nor transition) costs that index nothing.
CREATE INDEX IF NOT EXISTS ledger_entries_session ON {entries} (session)
    WHERE session IS NOT NULL;
CREATE INDEX IF NOT EXISTS ledger_entries_transition ON {entries} (transition)
    WHERE transition IS NOT NULL;
CREATE INDEX IF NOT EXISTS ledger_entries_run ON {entries} (run)
    WHERE run IS NOT NULL;
CREATE INDEX IF NOT EXISTS ledger_entries_kind ON {entries} (kind);
CREATE INDEX IF NOT EXISTS ledger_entries_timestamp ON {entries} (timestamp);
CREATE TABLE IF NOT EXISTS {checkpoints} (
    number bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    size bigint NOT NULL,
    root text NOT NULL,
    timestamp text NOT NULL,
    key_id text NOT NULL,
    signature text NOT NULL
);
CREATE OR REPLACE FUNCTION {refuse}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'assay ledger: % is append-only; % refused', TG_TABLE_NAME, TG_OP;
END
$$;
CREATE OR REPLACE FUNCTION {in_order}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    last_seq bigint;
    last_hash text;
BEGIN
    SELECT seq, hash INTO last_seq, last_hash FROM {entries} ORDER BY seq DESC LIMIT 1;
    IF NEW.seq IS DISTINCT FROM COALESCE(last_seq, 0) + 1
       OR NEW.prev_hash IS DISTINCT FROM COALESCE(last_hash, {genesis}) THEN
        RAISE EXCEPTION 'assay ledger: a new entry must take the next seq (%) and link to '
            'the last entry''s hash', COALESCE(last_seq, 0) + 1;
    END IF;
    RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON {entries}
    FOR EACH ROW EXECUTE FUNCTION {refuse}();
CREATE OR REPLACE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON {entries}
    FOR EACH STATEMENT EXECUTE FUNCTION {refuse}();
CREATE OR REPLACE TRIGGER ledger_entries_in_order BEFORE INSERT ON {entries}
    FOR EACH ROW EXECUTE FUNCTION {in_order}();
CREATE OR REPLACE TRIGGER ledger_checkpoints_append_only BEFORE UPDATE OR DELETE
    ON {checkpoints} FOR EACH ROW EXECUTE FUNCTION {refuse}();
CREATE OR REPLACE TRIGGER ledger_checkpoints_no_truncate BEFORE TRUNCATE ON {checkpoints}
    FOR EACH STATEMENT EXECUTE FUNCTION {refuse}();
"""

_LEASES_SCHEMA: Final[LiteralString] = """
CREATE TABLE IF NOT EXISTS {leases} (
    owner text PRIMARY KEY,
    renewed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
)
"""
"""Operational state beside the evidence, changed in place: not entries, never chained."""

_NOW: Final[LiteralString] = "(SELECT COALESCE(%(now)s::timestamptz, now()) AS t) AS clock"
"""The moment a lease statement judges by: the server's clock unless the caller gave one."""
_LEASE_COLUMNS: Final[LiteralString] = "owner, renewed_at, expires_at, expires_at > clock.t"
_OPEN_FIRES: Final[LiteralString] = """
SELECT seq, entry FROM {entries} WHERE seq IN (
    SELECT MAX(CASE WHEN kind = 'fire' THEN seq END) FROM {entries}
    WHERE transition IS NOT NULL AND kind IN ('fire', 'settlement', 'refusal')
    GROUP BY session, transition
    HAVING MAX(CASE WHEN kind = 'fire' THEN seq END)
        > COALESCE(MAX(CASE WHEN kind <> 'fire' THEN seq END), 0)
) ORDER BY seq
"""

_ROW_COLUMNS: Final[LiteralString] = (
    "seq, timestamp, kind, session, run, transition, prev_hash, hash, entry"
)
_OUT_OF_ORDER: Final = "a new entry must take the next seq"
_CHECKPOINT_COLUMNS: Final[LiteralString] = "size, root, timestamp, key_id, signature"


class _WritersPipelineWarnings(logging.Filter):
    """Drops psycopg's warning that a pipeline could not be ended while an error passed
    through it (the connection was lost mid-append), for the writers' own connections only:
    that error reaches every appender in the batch as a ``LedgerError`` saying the same, so
    the warning would only repeat it on stderr, once for each pipeline psycopg nests."""

    _MESSAGE: Final = "error ignored terminating %r: %s"

    def __init__(self) -> None:
        super().__init__()
        self.connections: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != self._MESSAGE or not isinstance(record.args, tuple) or not record.args:
            return True
        return getattr(record.args[0], "_conn", None) not in self.connections


_writers_pipeline_warnings = _WritersPipelineWarnings()
logging.getLogger("psycopg").addFilter(_writers_pipeline_warnings)


def _moment(now: datetime | None) -> dict[str, datetime | None]:
    """``now`` checked, as the parameter ``_NOW`` takes: ``None`` for the server's clock."""
    return {"now": None if now is None else local_now(now)}


def _lease_parameters(owner: str, duration_s: float, now: datetime | None) -> dict[str, Any]:
    return {"owner": owner, "duration": float(duration_s), **_moment(now)}


def _lease(row: Sequence[Any]) -> Lease:
    owner, renewed, expires, live = row
    return Lease(owner, renewed.astimezone(UTC), expires.astimezone(UTC), live=bool(live))


def lock_key(schema: str) -> int:
    """The advisory lock id that serializes appends to the ledger in ``schema``."""
    digest = hashlib.sha256(f"assay-ledger:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresBackend(GroupCommittedBackend):
    """A ledger in PostgreSQL tables ``ledger_entries`` and ``ledger_checkpoints``.

    ``schema`` names the PostgreSQL schema that holds them (``public`` by default), so one
    database can hold several ledgers; it is created, with the tables, when missing, unless
    ``create`` is false: then a schema without them is refused (``LedgerError``).
    """

    def __init__(self, url: str, *, schema: str = "public", create: bool = True) -> None:
        self._conninfo = url
        self._url = hide_password(url)
        self._schema = schema
        self._lock_key = lock_key(schema)
        self._entries = sql.Identifier(schema, "ledger_entries")
        self._checkpoints = sql.Identifier(schema, "ledger_checkpoints")
        self._leases = sql.Identifier(schema, "ledger_leases")
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._closed = False
        try:
            self._reader = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            self._fail("cannot connect to", exc)
        try:
            if not self._has_tables():
                if not create:
                    raise LedgerError(
                        f"there is no ledger in schema {schema!r} of {self._url}; check the "
                        "URL's schema parameter (reading a ledger never creates one)",
                        url=self._url,
                    )
                self._create_schema()
            elif create:
                self._create_leases()  # a ledger made before leases were kept
        except psycopg.Error as exc:
            self._reader.close()
            self._fail("cannot create the ledger schema in", exc)
        except LedgerError:
            self._reader.close()
            raise
        self._writer: psycopg.Connection[Any] | None = None
        # The last (seq, hash) this writer committed, or None to read it under the lock.
        self._insert_query = sql.SQL(
            "INSERT INTO {} (" + _ROW_COLUMNS + ") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        ).format(self._entries)
        self._head_query = sql.SQL("SELECT seq, hash FROM {} ORDER BY seq DESC LIMIT 1").format(
            self._entries
        )
        self._group = GroupCommit(self._write, name=self._url)

    @property
    def url(self) -> str:
        if self._schema == "public":
            return self._url
        return f"{self._url}{'&' if '?' in self._url else '?'}schema={self._schema}"

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding the ledger's tables."""
        return self._schema

    def read_canonical(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        span = seq_span(start, stop)
        if span is None:
            return []
        rows = self._fetch(
            sql.SQL("SELECT seq, entry FROM {} WHERE seq >= %s AND seq <= %s ORDER BY seq").format(
                self._entries
            ),
            span,
        )
        return [(seq, entry.encode()) for seq, entry in rows]

    def size(self) -> int:
        ((last,),) = self._fetch(sql.SQL("SELECT MAX(seq) FROM {}").format(self._entries), ())
        return int(last or 0)

    def select(self, where: EntryFilter) -> list[Entry]:
        bounded = where.within_64_bits()
        if bounded is None:
            return []
        clauses: list[sql.Composable] = [sql.SQL("seq > %s")]
        parameters: list[Any] = [bounded.after]
        for column in ("session", "transition", "run", "kind"):
            value = getattr(bounded, column)
            if value is not None:
                clauses.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
                parameters.append(value)
        if bounded.since is not None:
            clauses.append(sql.SQL("timestamp >= %s"))
            parameters.append(bounded.since)
        if bounded.until is not None:
            clauses.append(sql.SQL("timestamp < %s"))
            parameters.append(bounded.until)
        parameters.append(bounded.limit)
        query = sql.SQL("SELECT seq, entry FROM {} WHERE {} ORDER BY seq LIMIT %s").format(
            self._entries, sql.SQL(" AND ").join(clauses)
        )
        return [
            entry_from_canonical(entry.encode(), seq)
            for seq, entry in self._fetch(query, parameters)
        ]

    def stored_rows(self) -> Iterator[StoredRow]:
        query = sql.SQL(
            "SELECT " + _ROW_COLUMNS + " FROM {} WHERE seq > %s ORDER BY seq LIMIT %s"
        ).format(self._entries)
        after = -(2**63)
        while True:
            rows = self._fetch(query, (after, BATCH))
            for seq, *columns, entry in rows:
                yield StoredRow(seq, entry.encode(), dict(zip(COLUMNS, columns, strict=True)))
            if len(rows) < BATCH:
                return
            after = rows[-1][0]

    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        query = sql.SQL(
            "INSERT INTO {} (" + _CHECKPOINT_COLUMNS + ") VALUES (%s, %s, %s, %s, %s)"
        ).format(self._checkpoints)
        with self._read_lock:
            self._check_open()
            try:
                self._reader.execute(query, checkpoint_fields(checkpoint))
            except psycopg.Error as exc:
                self._fail("cannot store a checkpoint in", exc)

    def stored_checkpoints(self) -> list[StoredCheckpoint]:
        rows = self._fetch(
            sql.SQL("SELECT number, " + _CHECKPOINT_COLUMNS + " FROM {} ORDER BY number").format(
                self._checkpoints
            ),
            (),
        )
        return stored_checkpoints_of(rows)

    def close(self) -> None:
        with self._read_lock:
            if self._closed:
                return
            self._closed = True
        self._group.close()
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
        with self._read_lock:
            self._reader.close()

    def _has_tables(self) -> bool:
        exists = self._reader.execute(
            "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
            (
                self._entries.as_string(self._reader),
                self._checkpoints.as_string(self._reader),
            ),
        ).fetchone()
        return bool(exists and exists[0])

    def _create_schema(self) -> None:
        with self._reader.transaction():
            self._reader.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
            self._reader.execute(
                sql.SQL(_SCHEMA).format(
                    schema=sql.Identifier(self._schema),
                    entries=self._entries,
                    checkpoints=self._checkpoints,
                    refuse=sql.Identifier(self._schema, "ledger_refuse_change"),
                    in_order=sql.Identifier(self._schema, "ledger_check_insert"),
                    genesis=sql.Literal(GENESIS_HASH),
                )
            )
            self._reader.execute(sql.SQL(_LEASES_SCHEMA).format(leases=self._leases))

    def _create_leases(self) -> None:
        exists = self._reader.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (self._leases.as_string(self._reader),)
        ).fetchone()
        if exists and exists[0]:
            return
        with self._reader.transaction():
            self._reader.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
            self._reader.execute(sql.SQL(_LEASES_SCHEMA).format(leases=self._leases))

    def open_fires(self) -> list[Entry]:
        query = sql.SQL(_OPEN_FIRES).format(entries=self._entries)
        return [entry_from_canonical(entry.encode(), seq) for seq, entry in self._fetch(query, ())]

    def take_lease(self, owner: str, duration_s: float, *, now: datetime | None = None) -> Lease:
        check_lease(owner, duration_s)
        query = sql.SQL(
            "INSERT INTO {leases} AS held (owner, renewed_at, expires_at) "
            "SELECT %(owner)s, clock.t, clock.t + make_interval(secs => %(duration)s) FROM "
            + _NOW
            + " ON CONFLICT (owner) DO UPDATE SET renewed_at = excluded.renewed_at, "
            "expires_at = excluded.expires_at RETURNING owner, renewed_at, expires_at, true"
        ).format(leases=self._leases)
        (row,) = self._fetch(query, _lease_parameters(owner, duration_s, now), "keep a lease in")
        return _lease(row)

    def renew_lease(
        self, owner: str, duration_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        check_lease(owner, duration_s)
        query = sql.SQL(
            "UPDATE {leases} SET renewed_at = clock.t, "
            "expires_at = clock.t + make_interval(secs => %(duration)s) FROM "
            + _NOW
            + " WHERE owner = %(owner)s RETURNING owner, renewed_at, expires_at, true"
        ).format(leases=self._leases)
        rows = self._fetch(query, _lease_parameters(owner, duration_s, now), "keep a lease in")
        return _lease(rows[0]) if rows else None

    def release_lease(self, owner: str) -> None:
        query = sql.SQL("DELETE FROM {leases} WHERE owner = %s RETURNING owner").format(
            leases=self._leases
        )
        self._fetch(query, (owner,), "keep a lease in")

    def leases(self, *, now: datetime | None = None) -> list[Lease]:
        return [_lease(row) for row in self._fetch(self._leases_query(), _moment(now))]

    def _leases_query(self, *, lock: bool = False) -> sql.Composed:
        query = "SELECT " + _LEASE_COLUMNS + " FROM {leases} AS held, " + _NOW
        query += " ORDER BY owner FOR UPDATE OF held" if lock else " ORDER BY owner"
        return sql.SQL(query).format(leases=self._leases)

    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        ended = sql.SQL(
            "SELECT 1 FROM {} WHERE transition = %s AND session IS NOT DISTINCT FROM %s "
            "AND kind IN ('settlement', 'refusal') AND seq > %s LIMIT 1"
        ).format(self._entries)
        drop = sql.SQL("DELETE FROM {} WHERE owner = %s").format(self._leases)
        entries: list[Entry] = []
        with self._write_lock:
            try:
                connection = self._connection()
                with connection.transaction():
                    # The append lock: no other writer anywhere stores between the checks
                    # below and the insert; the lease rows are locked against renewal too.
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    rows = connection.execute(self._leases_query(lock=True), _moment(now))
                    leases = {lease.owner: lease for lease in map(_lease, rows.fetchall())}
                    chosen = []
                    for closing in closings:
                        settlement = closing.settlement
                        found = connection.execute(
                            ended, (settlement.transition, settlement.session, closing.fire_seq)
                        ).fetchone()
                        if closeable(closing, ended=found is not None, leases=leases, by=by):
                            chosen.append(closing)
                    if chosen:
                        head = connection.execute(self._head_query).fetchone()
                        sealed = [closing.settlement for closing in chosen]
                        entries = seal_all(sealed, *(head or (0, GENESIS_HASH)))
                        self._insert(connection, entries, locked=True)
                        for owner in taken_over(chosen, leases):
                            connection.execute(drop, (owner,))
            except psycopg.Error as exc:
                self._fail("cannot close fires in", exc)
        return entries

    def _connection(self) -> psycopg.Connection[Any]:
        """The writer's connection, made again if the last one broke."""
        if self._writer is None or self._writer.closed or self._writer.broken:
            if self._writer is not None:
                self._writer.close()
            self._writer = psycopg.connect(self._conninfo, autocommit=True)
            _writers_pipeline_warnings.connections.add(self._writer)
            # Durable on commit whatever the server's default, so an append is acknowledged
            # only once it would survive a crash of the server too.
            self._writer.execute("SET synchronous_commit = on")
        return self._writer

    def _write(self, drafts: list[EntryDraft], sealed: list[Entry] | None) -> list[Entry]:
        with self._write_lock:
            try:
                connection = self._connection()
                if sealed is not None:
                    try:
                        # Sealed after the head this process last stored, and sent with the
                        # lock, the insert and the commit in one pipeline: one round trip.
                        # The trigger refuses it whole if another writer moved the head.
                        with connection.pipeline(), connection.transaction():
                            self._insert(connection, sealed)
                    except psycopg.errors.RaiseException as exc:
                        if _OUT_OF_ORDER not in str(exc):
                            raise
                    else:
                        return sealed
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    head = connection.execute(self._head_query).fetchone()
                    entries = seal_all(drafts, *(head or (0, GENESIS_HASH)))
                    self._insert(connection, entries, locked=True)
            except psycopg.Error as exc:
                # The commit may or may not have happened: the group forgets the head.
                self._fail("cannot append to", exc)
        return entries

    def _insert(
        self, connection: psycopg.Connection[Any], entries: list[Entry], *, locked: bool = False
    ) -> None:
        """Take the advisory lock (unless ``locked``) and insert ``entries`` (in a transaction)."""
        if not locked:
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
        with connection.cursor() as cursor:
            cursor.executemany(self._insert_query, [entry_row(entry) for entry in entries])

    def _fetch(
        self,
        query: sql.SQL | sql.Composed,
        parameters: Sequence[Any] | Mapping[str, Any],
        doing: str = "read",
    ) -> list[Any]:
        """Run a read (or a lease change, which repeats as safely); once more on a new
        connection if the old one broke (unlike an append, whose commit may have happened)."""
        with self._read_lock:
            self._check_open()
            try:
                return self._read(query, parameters)
            except psycopg.Error as exc:
                if not self._reader.broken:
                    self._fail(f"cannot {doing}", exc)
            try:
                return self._read(query, parameters)
            except psycopg.Error as exc:
                self._fail(f"cannot {doing}", exc)

    def _read(
        self, query: sql.SQL | sql.Composed, parameters: Sequence[Any] | Mapping[str, Any]
    ) -> list[Any]:
        if self._reader.broken:  # the server restarted, or the network dropped
            self._reader.close()
            self._reader = psycopg.connect(self._conninfo, autocommit=True)
        return list(self._reader.execute(query, parameters).fetchall())

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerError(f"the ledger {self.url} is closed; open it again", url=self._url)

    def _fail(self, doing: str, exc: psycopg.Error) -> NoReturn:
        """Raise a ``LedgerError`` saying what failed, with psycopg's reason (its first line)
        and ``exc`` as its cause, unless any of ``exc``'s text shows the password: libpq quotes
        what it cannot parse. Then neither is kept, and the error says what to check."""
        said = str(exc).strip()
        withheld = shows_password(said, self._conninfo)
        if withheld:
            reason = withheld_reason(self._conninfo)
        else:
            reason = said.splitlines()[0] if said else type(exc).__name__
        error = LedgerError(f"{doing} the PostgreSQL ledger {self.url}: {reason}", url=self._url)
        if withheld:
            raise error from None
        raise error from exc
