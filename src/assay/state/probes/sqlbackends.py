"""Where ``SqlProbe`` runs its queries: SQLite in a worker thread, PostgreSQL on psycopg.

A backend runs a list of ``(state key, SQL)`` queries, one statement each, in one read-only
transaction, and answers each query's column names and at most ``max_rows + 1`` rows, so the
caller can tell there were too many. Database errors become ``ProbeError`` naming the key, the
database's message and the SQL, or only the condition of a message that can quote the data. A
read is bounded by ``timeout``: overall in SQLite, per statement in PostgreSQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias
from urllib.parse import quote

import psycopg
from psycopg import IsolationLevel

from assay.errors import ProbeConfigError, ProbeError
from assay.state.probes.probe import display_url

Result: TypeAlias = tuple[list[str], list[tuple[Any, ...]]]
"""A query's column names and its rows."""

ConnectionFactory: TypeAlias = Callable[
    [],
    "sqlite3.Connection | psycopg.AsyncConnection[Any] | Awaitable[psycopg.AsyncConnection[Any]]",
]
"""Makes a new connection: a ``sqlite3.Connection``, or a ``psycopg.AsyncConnection``."""

_SQL_EXCERPT = 120
_PROGRESS_STEPS = 1000
"""SQLite virtual machine steps between two checks of a read's deadline."""


class Backend(Protocol):
    """Runs one read's queries; ``shown`` names the database without credentials."""

    shown: str

    async def run(self, queries: Sequence[tuple[str, str]], max_rows: int) -> list[Result]: ...

    async def aclose(self) -> None: ...


def _query_error(key: str, sql: str, message: str) -> ProbeError:
    text = " ".join(sql.split())
    if len(text) > _SQL_EXCERPT:
        text = text[: _SQL_EXCERPT - 1] + "…"
    return ProbeError(f"the query for {key!r} failed: {message} (SQL: {text})", source=key)


def _no_result(key: str, sql: str) -> ProbeError:
    return _query_error(key, sql, "it returned no rows and no columns; a probe query is a SELECT")


class _SqliteRead:
    """One SQLite read's deadline, and the event loop's way to stop it before then.

    SQLite's progress handler checks both every few thousand steps of a query; a query
    stopped there fails with "interrupted" and its thread ends, so a read never outlives its
    deadline nor keeps the database locked after it was given up.
    """

    __slots__ = ("deadline", "stopped", "timeout")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.stopped = False

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def interrupts(self) -> bool:
        """The progress handler: true (stop the query) once stopped or past the deadline."""
        return self.stopped or self.expired()


async def _in_thread(read: _SqliteRead, call: Callable[[], Any]) -> Any:
    """``call()`` in a worker thread; cancelled, it stops ``read`` and waits for the thread."""
    future = asyncio.ensure_future(asyncio.to_thread(call))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        read.stopped = True
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        await asyncio.wait((future,))  # the query stops at its next progress check
        raise


def _run_sqlite(
    connection: sqlite3.Connection,
    queries: Sequence[tuple[str, str]],
    max_rows: int,
    read: _SqliteRead,
) -> list[Result]:
    """Run ``queries`` in one transaction on ``connection`` and close it, in this thread."""
    try:
        connection.set_progress_handler(read.interrupts, _PROGRESS_STEPS)
        connection.isolation_level = None
        connection.execute("BEGIN")
        results: list[Result] = []
        for key, sql in queries:
            try:
                cursor = connection.execute(sql)
                if cursor.description is None:
                    raise _no_result(key, sql)
                columns = [str(column[0]) for column in cursor.description]
                rows = cursor.fetchmany(max_rows + 1)
                cursor.close()
            except sqlite3.Error as exc:
                if read.expired():
                    message = f"it gave no answer within {read.timeout:g} s and was interrupted"
                    raise _query_error(key, sql, message) from exc
                raise _query_error(key, sql, str(exc)) from exc
            results.append((columns, rows))
        return results
    finally:
        connection.close()


class SqliteProbeBackend:
    """A new read-only connection per read, made, used and closed in a worker thread."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        shown: str,
        timeout: float,
        path: Path | None = None,
    ) -> None:
        self._connect = connect
        self.shown = shown
        self._timeout = timeout
        self._path = path

    @classmethod
    def from_path(cls, text: str, timeout: float) -> SqliteProbeBackend:
        if not text or text == ":memory:" or "?" in text:
            raise ProbeConfigError(
                f"sqlite:///{text} does not name a database file; write sqlite:///file.db "
                "(relative to the working directory) or sqlite:////absolute/path.db",
                parameter="connection",
            )
        path = Path(text).absolute()
        uri = f"file:{quote(str(path))}?mode=ro"

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, timeout=timeout)

        return cls(connect, f"sqlite:///{text}", timeout, path)

    async def run(self, queries: Sequence[tuple[str, str]], max_rows: int) -> list[Result]:
        read = _SqliteRead(self._timeout)
        results: list[Result] = await _in_thread(read, lambda: self._read(queries, max_rows, read))
        return results

    async def aclose(self) -> None:
        """Nothing is held between reads."""

    def _read(
        self, queries: Sequence[tuple[str, str]], max_rows: int, read: _SqliteRead
    ) -> list[Result]:
        try:
            connection = self._connect()
        except sqlite3.Error as exc:
            if self._path is not None and not self._path.exists():
                raise ProbeError(
                    f"there is no SQLite database at {self._path} (it is opened read-only, "
                    "so it is never created)",
                    source=self.shown,
                ) from exc
            raise ProbeError(f"could not open {self.shown}: {exc}", source=self.shown) from exc
        return _run_sqlite(connection, queries, max_rows, read)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    message = lines[0] if lines else type(exc).__name__
    sqlstate = getattr(exc, "sqlstate", None)
    return f"{message} (SQLSTATE {sqlstate})" if sqlstate else message


def _statement_error(exc: psycopg.Error) -> str:
    """What was wrong with one query, without repeating data the message may quote."""
    sqlstate = exc.sqlstate or ""
    if sqlstate == "42601" and "multiple commands" in str(exc):
        return (
            f"it holds more than one statement; a probe query is one SELECT (SQLSTATE {sqlstate})"
        )
    if sqlstate.startswith("22"):
        # Data exceptions quote the offending value ("invalid input syntax for type
        # integer: ..."), which may be what redaction withholds.
        return f"a data exception, {type(exc).__name__} (SQLSTATE {sqlstate})"
    return _first_line(exc)


class PostgresProbeBackend:
    """One connection, kept between reads; each read is a ``REPEATABLE READ READ ONLY`` one."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[psycopg.AsyncConnection[Any]]],
        shown: str,
        timeout: float,
        connection: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        self._connect = connect
        self.shown = shown
        self._timeout = timeout
        self._connection = connection
        self._ready = False
        self._lock = asyncio.Lock()

    @classmethod
    def from_url(cls, url: str, timeout: float) -> PostgresProbeBackend:
        # libpq takes whole seconds and treats anything under 2 as 2.
        connect_timeout = max(2, math.ceil(timeout))

        async def connect() -> psycopg.AsyncConnection[Any]:
            return await psycopg.AsyncConnection.connect(url, connect_timeout=connect_timeout)

        return cls(connect, display_url(url), timeout)

    async def run(self, queries: Sequence[tuple[str, str]], max_rows: int) -> list[Result]:
        async with self._lock:
            connection = await self._open()
            try:
                results = await self._query(connection, queries, max_rows)
                await connection.rollback()
            except (ProbeError, psycopg.Error) as exc:
                await self._recover(connection)
                if isinstance(exc, psycopg.Error):
                    raise ProbeError(
                        f"reading {self.shown} failed: {_first_line(exc)}", source=self.shown
                    ) from exc
                raise
            except BaseException:
                # Cancelled mid-query: the connection's state is unknown, so it goes.
                await self._discard()
                raise
            return results

    async def aclose(self) -> None:
        await self._discard()

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        if not psycopg.Pipeline.is_supported():
            raise ProbeError(
                f"reading {self.shown} needs libpq 14 or later (pipeline mode, to run each "
                f"query as one statement); this is libpq {psycopg.pq.version()}",
                source=self.shown,
            )
        connection = self._connection
        if connection is not None and connection.closed:
            connection = self._connection = None
        try:
            if connection is None:
                connection = self._connection = await self._connect()
                self._ready = False
            if not self._ready:
                statement_timeout = max(1, round(self._timeout * 1000))
                await connection.execute(f"SET statement_timeout = {statement_timeout}")
                await connection.commit()
                await connection.set_isolation_level(IsolationLevel.REPEATABLE_READ)
                await connection.set_read_only(True)
                self._ready = True
        except psycopg.Error as exc:
            await self._discard()
            raise ProbeError(
                f"could not connect to {self.shown}: {_first_line(exc)}", source=self.shown
            ) from exc
        return connection

    async def _query(
        self,
        connection: psycopg.AsyncConnection[Any],
        queries: Sequence[tuple[str, str]],
        max_rows: int,
    ) -> list[Result]:
        results: list[Result] = []
        async with connection.cursor() as cursor:
            for key, sql in queries:
                try:
                    # Pipeline mode sends the query through the extended protocol, which
                    # refuses several statements, and leaves '%' in it alone.
                    async with connection.pipeline():
                        await cursor.execute(sql)
                    if cursor.description is None:
                        raise _no_result(key, sql)
                    columns = [column.name for column in cursor.description]
                    rows = await cursor.fetchmany(max_rows + 1)
                except psycopg.Error as exc:
                    raise _query_error(key, sql, _statement_error(exc)) from exc
                results.append((columns, rows))
        return results

    async def _recover(self, connection: psycopg.AsyncConnection[Any]) -> None:
        """End the failed transaction, or drop the connection if that cannot be done."""
        if connection.broken or connection.closed:
            await self._discard()
            return
        try:
            await connection.rollback()
        except psycopg.Error:
            await self._discard()

    async def _discard(self) -> None:
        connection, self._connection = self._connection, None
        self._ready = False
        if connection is not None and not connection.closed:
            with contextlib.suppress(psycopg.Error):
                await connection.close()


class FactoryProbeBackend:
    """A connection factory; which database it is becomes known at its first call.

    The factory is first called in a worker thread: a ``sqlite3.Connection`` is used there and
    then, and later reads go to a ``SqliteProbeBackend`` on the same factory; anything else is
    awaited (if need be) on the event loop and must be a ``psycopg.AsyncConnection``.
    """

    def __init__(self, factory: Callable[[], Any], timeout: float) -> None:
        self._factory = factory
        self._timeout = timeout
        self.shown = f"factory {getattr(factory, '__qualname__', None) or repr(factory)}"
        self._chosen: Backend | None = None

    async def run(self, queries: Sequence[tuple[str, str]], max_rows: int) -> list[Result]:
        if self._chosen is not None:
            return await self._chosen.run(queries, max_rows)
        read = _SqliteRead(self._timeout)
        made, results = await _in_thread(read, lambda: self._first_call(queries, max_rows, read))
        if results is not None:
            self._chosen = SqliteProbeBackend(self._factory, self.shown, self._timeout)
            return list(results)
        connection = await self._postgres(made)
        backend = PostgresProbeBackend(self._connect, self.shown, self._timeout, connection)
        self._chosen = backend
        return await backend.run(queries, max_rows)

    async def aclose(self) -> None:
        if self._chosen is not None:
            await self._chosen.aclose()

    def _first_call(
        self, queries: Sequence[tuple[str, str]], max_rows: int, read: _SqliteRead
    ) -> tuple[Any, list[Result] | None]:
        try:
            made = self._factory()
        except sqlite3.Error as exc:
            raise ProbeError(f"{self.shown} could not connect: {exc}", source=self.shown) from exc
        if isinstance(made, sqlite3.Connection):
            return made, _run_sqlite(made, queries, max_rows, read)
        return made, None

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        return await self._postgres(self._factory())

    async def _postgres(self, made: Any) -> psycopg.AsyncConnection[Any]:
        if inspect.isawaitable(made):
            try:
                made = await made
            except psycopg.Error as exc:
                raise ProbeError(
                    f"{self.shown} could not connect: {_first_line(exc)}", source=self.shown
                ) from exc
        if not isinstance(made, psycopg.AsyncConnection):
            raise ProbeError(
                f"{self.shown} made a {type(made).__qualname__}; a connection factory makes "
                "a sqlite3.Connection or a psycopg.AsyncConnection",
                source=self.shown,
            )
        return made
