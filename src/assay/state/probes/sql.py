"""``SqlProbe``: one SQL query per state key, against SQLite or PostgreSQL.

A plain query with one column gives a **scalar** (``null`` for no row, a failed read for
several), with several columns the **rows**; ``{"sql": ..., "key": "id"}`` gives rows
**keyed** by that column, and ``{"sql": ..., "shape": "scalar" | "row" | "rows"}`` states the
shape outright. All queries of one read run in one read-only transaction, values are converted
to JSON as ``assay.state.probes.values`` documents, and more than ``max_rows`` rows fail the
read. docs/verification.md, "A database", has the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from assay.errors import ProbeConfigError, ProbeError
from assay.state.probes.probe import (
    DEFAULT_INTERVAL,
    check_interval,
    check_keys,
    check_timeout,
    display_url,
)
from assay.state.probes.sqlbackends import (
    Backend,
    ConnectionFactory,
    FactoryProbeBackend,
    PostgresProbeBackend,
    Result,
    SqliteProbeBackend,
)
from assay.state.probes.values import to_json

Shape: TypeAlias = Literal["scalar", "row", "rows", "keyed"]
QuerySpec: TypeAlias = str | Mapping[str, str]
"""A query as given: its SQL text, or ``{"sql": ..., "key": column}`` or ``{..., "shape"}``."""

DEFAULT_MAX_ROWS: Final = 10_000
_SHAPES: Final[dict[str, Shape]] = {"scalar": "scalar", "row": "row", "rows": "rows"}


@dataclass(frozen=True, slots=True)
class Query:
    """One state key's query, its shape (``None``: inferred from the columns) and key column."""

    key: str
    sql: str
    shape: Shape | None = None
    by: str | None = None

    @classmethod
    def parse(cls, key: str, spec: QuerySpec) -> Query:
        """Read a query as given to ``SqlProbe``; ``ProbeConfigError`` names what is wrong."""
        if isinstance(spec, str):
            return cls(key, _sql(key, spec))
        if not isinstance(spec, Mapping):
            raise ProbeConfigError(
                f"the query for {key!r} must be SQL text or a mapping with 'sql', got "
                f"{type(spec).__name__}",
                parameter="queries",
            )
        unknown = sorted(set(spec) - {"sql", "key", "shape"})
        if unknown or "sql" not in spec:
            problem = f"unknown fields {unknown}" if unknown else "no 'sql'"
            raise ProbeConfigError(
                f"the query for {key!r} has {problem}; write {{'sql': ..., 'key': column}} "
                "or {'sql': ..., 'shape': 'scalar' | 'row' | 'rows'}",
                parameter="queries",
            )
        sql = _sql(key, spec["sql"])
        if "key" in spec:
            if "shape" in spec:
                raise ProbeConfigError(
                    f"the query for {key!r} has both 'key' and 'shape'; a 'key' column "
                    "already makes it an object of rows keyed by that column",
                    parameter="queries",
                )
            column = spec["key"]
            if not isinstance(column, str) or not column:
                raise ProbeConfigError(
                    f"the query for {key!r} has 'key' {column!r}; it must name a column",
                    parameter="queries",
                )
            return cls(key, sql, "keyed", column)
        given = spec.get("shape")
        shape = _SHAPES.get(given) if isinstance(given, str) else None
        if shape is None:
            raise ProbeConfigError(
                f"the query for {key!r} has 'shape' {given!r}; expected one of "
                "'scalar', 'row', 'rows'",
                parameter="queries",
            )
        return cls(key, sql, shape)

    def value(self, result: Result, max_rows: int) -> Any:
        """The key's JSON value from the query's ``result``; ``ProbeError`` if it does not fit."""
        columns, rows = result
        here = f"the query for {self.key!r}"
        seen: set[str] = set()
        for column in columns:
            if column in seen:
                raise ProbeError(
                    f"{here} returns the column {column!r} twice; give each column its own "
                    "name with AS",
                    source=self.key,
                )
            seen.add(column)
        if len(rows) > max_rows:
            raise ProbeError(
                f"{here} returned more than {max_rows} rows; narrow it (WHERE, LIMIT) or raise "
                "max_rows",
                source=self.key,
            )
        shape = self.shape or ("scalar" if len(columns) == 1 else "rows")
        if shape == "scalar":
            if len(columns) != 1:
                raise ProbeError(
                    f"{here} returns {len(columns)} columns; a scalar comes from one column",
                    source=self.key,
                )
            if len(rows) > 1:
                raise ProbeError(
                    f"{here} returned {len(rows)} rows; a one-column query gives one value and "
                    "must return at most one row (write {'sql': ..., 'shape': 'rows'} for a "
                    "list of rows)",
                    source=self.key,
                )
            return self._cell(columns[0], rows[0][0]) if rows else None
        if shape == "row":
            if len(rows) > 1:
                raise ProbeError(
                    f"{here} returned {len(rows)} rows; shape 'row' takes at most one",
                    source=self.key,
                )
            return self._row(columns, rows[0]) if rows else None
        if shape == "rows":
            return [self._row(columns, row) for row in rows]
        return self._keyed(columns, rows, here)

    def _keyed(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], here: str) -> Any:
        by = self.by
        if by not in columns:
            raise ProbeError(
                f"{here} has no column {by!r} to key its rows by; it returns {list(columns)}",
                source=self.key,
            )
        position = columns.index(by)
        keyed: dict[str, Any] = {}
        for row in rows:
            raw = row[position]
            # The messages name the rows, not their values, which may be withheld ones.
            if isinstance(raw, bool) or not isinstance(raw, str | int):
                what = "null" if raw is None else f"a {type(raw).__name__}"
                raise ProbeError(
                    f"{here} has a row whose key column {by!r} is {what}; keys must be "
                    "non-null strings or integers",
                    source=self.key,
                )
            name = str(raw)
            if name in keyed:
                raise ProbeError(
                    f"{here} has two rows with the same {by!r}; the key column must be unique",
                    source=self.key,
                )
            keyed[name] = self._row(columns, row)
        return keyed

    def _row(self, columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
        return {
            column: self._cell(column, value) for column, value in zip(columns, row, strict=True)
        }

    def _cell(self, column: str, value: Any) -> Any:
        return to_json(value, f"column {column!r} of the query for {self.key!r}")


def _sql(key: str, sql: object) -> str:
    if not isinstance(sql, str) or not sql.strip():
        raise ProbeConfigError(
            f"the query for {key!r} must have SQL text, got {sql!r}", parameter="queries"
        )
    return sql


class SqlProbe:
    """Reads state keys with SQL queries from SQLite or PostgreSQL.

    ``connection`` is ``sqlite:///relative.db``, ``sqlite:////absolute.db`` (opened
    read-only, once per read, in a worker thread), ``postgresql://...`` (one connection,
    kept between reads and made again after a failure), or a factory: a zero-argument
    callable making a new ``sqlite3.Connection`` (called in the worker thread; the probe
    closes it after the read) or an awaitable ``psycopg.AsyncConnection`` (kept like a URL's).
    ``timeout`` bounds a whole read in SQLite (a query still running then is interrupted),
    and the connection and each statement in PostgreSQL; a ``Poller`` abandons any read
    that has not answered within it. Each query is one statement.
    """

    def __init__(
        self,
        connection: str | ConnectionFactory,
        queries: Mapping[str, QuerySpec],
        *,
        interval: float = DEFAULT_INTERVAL,
        timeout: float = 2.0,
        max_rows: int = DEFAULT_MAX_ROWS,
        name: str | None = None,
    ) -> None:
        if not queries:
            raise ProbeConfigError("an SqlProbe needs at least one query", parameter="queries")
        check_keys(queries, "queries")
        timeout = check_timeout(timeout)
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ProbeConfigError(
                f"max_rows is a positive integer, got {max_rows!r}", parameter="max_rows"
            )
        self.queries = tuple(Query.parse(key, spec) for key, spec in queries.items())
        self.interval = check_interval(interval)
        self.timeout = float(timeout)
        self.max_rows = max_rows
        self._backend = _backend(connection, self.timeout)
        self.name = name if name is not None else self._backend.shown

    def __repr__(self) -> str:
        keys = [query.key for query in self.queries]
        return f"SqlProbe({self._backend.shown!r}, keys={keys}, name={self.name!r})"

    async def __aenter__(self) -> SqlProbe:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def read(self) -> dict[str, Any]:
        """Run every query in one read-only transaction and shape each key's value."""
        results = await self._backend.run(
            [(query.key, query.sql) for query in self.queries], self.max_rows
        )
        return {
            query.key: query.value(result, self.max_rows)
            for query, result in zip(self.queries, results, strict=True)
        }

    async def aclose(self) -> None:
        """Close the PostgreSQL connection, if one is open; the next read makes a new one."""
        await self._backend.aclose()


def _backend(connection: str | Callable[..., Any], timeout: float) -> Backend:
    if callable(connection):
        return FactoryProbeBackend(connection, timeout)
    if not isinstance(connection, str):
        raise ProbeConfigError(
            f"connection is a URL or a factory, got {type(connection).__name__}",
            parameter="connection",
        )
    if connection.startswith("sqlite:///"):
        return SqliteProbeBackend.from_path(connection.removeprefix("sqlite:///"), timeout)
    if connection.startswith(("postgresql://", "postgres://")):
        return PostgresProbeBackend.from_url(connection, timeout)
    raise ProbeConfigError(
        f"connection {display_url(connection)!r} is not a database URL this probe reads; "
        "write sqlite:///path.db or postgresql://user@host/db",
        parameter="connection",
    )
