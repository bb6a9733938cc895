"""Probes against real components: a local HTTP app, SQLite files, a PostgreSQL server;
the poller on virtual time. Async code runs under ``asyncio.run``; nothing sleeps to wait."""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import itertools
import json
import socket
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import psycopg
import pytest

from assay.clock import VirtualClock
from assay.errors import AssayError, ContractError, NotFoundError
from assay.redaction import Redaction
from assay.state.health import HealthWindow, ProbeHealth
from assay.state.probes import (
    CallableProbe,
    ClosableProbe,
    HttpProbe,
    JsonPointer,
    Poller,
    Probe,
    ProbeConfigError,
    ProbeError,
    SqlProbe,
)
from assay.state.probes.probe import display_url
from assay.state.probes.values import to_json
from assay.state.substrate import Substrate, SubstrateState
from local_http import QuietHandler, serve

T = TypeVar("T")


def run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return asyncio.run(wrapped())


def read(probe: Probe) -> dict[str, Any]:
    """One read of ``probe`` in a fresh event loop, closing what it opened."""

    async def main() -> dict[str, Any]:
        try:
            return await probe.read()
        finally:
            if isinstance(probe, ClosableProbe):
                await probe.aclose()

    return run(main)


def read_error(probe: Probe) -> str:
    with pytest.raises(ProbeError) as caught:
        read(probe)
    return str(caught.value)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# A real HTTP application on a free loopback port, whose state the tests change.


class App:
    def __init__(self) -> None:
        self.state: dict[str, Any] = {"inbox": {"sent_count": 14}, "drone": {"mode": "LOITER"}}
        self.release = threading.Event()
        self.gets = 0


SECRET = "s3cr3t-VALUE-123"
SECRET_BODIES: dict[str, tuple[int, str, bytes]] = {
    "/secret-nan": (
        200,
        "application/json",
        b'{"secret_token": "s3cr3t-VALUE-123", "view": {"domain": NaN}}',
    ),
    "/secret-500": (500, "text/plain", b"token s3cr3t-VALUE-123 rejected"),
    "/secret-broken": (200, "application/json", b'{"secret_token": "s3cr3t-VALUE-123",\n "x": }'),
    "/secret-latin": (
        200,
        "application/json",
        '{"secret_token": "s3cr3t-VALUE-123\xe9"}'.encode("latin-1"),
    ),
    "/secret-twice": (
        200,
        "application/json",
        b'{"view": {"secret_token": "s3cr3t-VALUE-123", "secret_token": "other"}}',
    ),
}


class Handler(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        app = self.server.app
        app.gets += 1
        if self.path == "/state":
            self.send(200, "application/json", json.dumps(app.state).encode())
        elif self.path == "/list":
            self.send(200, "application/json", b"[1, 2, 3]")
        elif self.path == "/html":
            self.send(200, "text/html", b"<html><body>Sign in</body></html>")
        elif self.path == "/nan":
            self.send(200, "application/json", b'{"x": NaN}')
        elif self.path == "/boom":
            self.send(500, "text/plain", b"database on fire")
        elif self.path in SECRET_BODIES:
            self.send(*SECRET_BODIES[self.path])
        elif self.path in ("/moved", "/moved-away"):
            self.send_response(307 if self.path == "/moved" else 302)
            self.send_header("Location", "/state" if self.path == "/moved" else "/gone")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/gone":
            self.send(410, "text/plain", b"")
        elif self.path == "/stall":
            app.release.wait(10)
            self.send(200, "application/json", b"{}")
        else:
            self.send(404, "text/plain", b"no such page")


@pytest.fixture
def app() -> Iterator[tuple[App, str]]:
    """The running application and its base URL."""
    state = App()
    with serve(Handler, state, release=state.release.set) as url:
        yield state, url


def test_http_probe_reads_top_level_keys_and_follows_changes(app: tuple[App, str]) -> None:
    state, base = app
    probe = HttpProbe(f"{base}/state")

    async def main() -> list[dict[str, Any]]:
        async with probe:
            first = await probe.read()
            state.state["inbox"]["sent_count"] = 15
            state.state["a.b"] = True
            return [first, await probe.read()]

    first, second = run(main)
    assert first == {"inbox": {"sent_count": 14}, "drone": {"mode": "LOITER"}}
    assert second == {"inbox": {"sent_count": 15}, "drone": {"mode": "LOITER"}, '["a.b"]': True}
    assert probe.name == f"{base}/state"


def test_http_probe_puts_a_pointer_selection_under_into(app: tuple[App, str]) -> None:
    _, base = app
    probe = HttpProbe(f"{base}/state", pointer="/inbox/sent_count", into="mail.sent")
    assert read(probe) == {"mail.sent": 14}
    assert read(HttpProbe(f"{base}/state", pointer="/drone")) == {"mode": "LOITER"}
    assert read(HttpProbe(f"{base}/list", into="items")) == {"items": [1, 2, 3]}
    assert read(HttpProbe(f"{base}/list", pointer="/2", into="third")) == {"third": 3}


def test_http_probe_failures_name_the_url_the_status_and_the_problem(
    app: tuple[App, str],
) -> None:
    _, base = app
    assert read_error(HttpProbe(f"{base}/boom")) == (
        f"GET {base}/boom answered HTTP 500 Internal Server Error, expected a 2xx JSON "
        "response; a body of 16 bytes (text/plain)"
    )
    assert read_error(HttpProbe(f"{base}/missing?token=s3cret")) == (
        f"GET {base}/missing?… answered HTTP 404 Not Found, expected a 2xx JSON response; "
        "a body of 12 bytes (text/plain)"
    )
    assert read_error(HttpProbe(f"{base}/html")) == (
        f"GET {base}/html answered HTTP 200 OK with a body of 33 bytes (text/html) that is not "
        "JSON: Expecting value at line 1 column 1"
    )
    assert read_error(HttpProbe(f"{base}/nan")) == (
        f"GET {base}/nan answered HTTP 200 OK with a body of 10 bytes (application/json) that "
        "is not JSON: it holds NaN, which JSON does not allow"
    )
    assert read_error(HttpProbe(f"{base}/list")) == (
        f"the response of GET {base}/list is an array; it must be an object, whose keys "
        "become state keys, unless the probe is given a state key to keep it whole under "
        "(into='key'; assay verify --into KEY)"
    )
    assert read_error(HttpProbe(f"{base}/gone")) == (
        f"GET {base}/gone answered HTTP 410 Gone, expected a 2xx JSON response; an empty body"
    )
    assert read_error(HttpProbe(f"{base}/state", pointer="/inbox/unread", into="x")) == (
        f"JSON pointer '/inbox/unread' does not resolve in the response of GET {base}/state: "
        "'/inbox' has no key 'unread'"
    )


def test_http_probe_failures_never_quote_the_body(app: tuple[App, str]) -> None:
    """A body can hold what redaction withholds; last_error in GET /v1/state used to quote
    it (a NaN beside a secret token, a 500 whose text named the token)."""
    _, base = app
    probes = [HttpProbe(f"{base}{path}", name=path) for path in SECRET_BODIES]

    async def main() -> SubstrateState:
        substrate = Substrate(
            probes=probes, redaction=Redaction(["secret_token", "**.secret_token"])
        )
        assert substrate.poller is not None
        await substrate.poller.read_once()
        await substrate.stop()
        return substrate.state()

    state = run(main)
    errors = {source.name: source.last_error for source in state.sources}
    assert SECRET not in state.model_dump_json()
    assert errors == {
        "/secret-nan": f"GET {base}/secret-nan answered HTTP 200 OK with a body of 61 bytes "
        "(application/json) that is not JSON: it holds NaN, which JSON does not allow",
        "/secret-500": f"GET {base}/secret-500 answered HTTP 500 Internal Server Error, "
        "expected a 2xx JSON response; a body of 31 bytes (text/plain)",
        "/secret-broken": f"GET {base}/secret-broken answered HTTP 200 OK with a body of 44 "
        "bytes (application/json) that is not JSON: Expecting value at line 2 column 7",
        "/secret-latin": f"GET {base}/secret-latin answered HTTP 200 OK with a body of 37 "
        "bytes (application/json) that is not JSON: it is not utf-8 text (byte 34)",
        "/secret-twice": f"GET {base}/secret-twice answered HTTP 200 OK with JSON that gives "
        "the key 'secret_token' twice in one object; JSON readers differ on which one "
        "counts, so neither is taken",
    }


def test_http_probe_pointer_to_an_object_without_into_owns_its_keys(
    app: tuple[App, str],
) -> None:
    _, base = app
    assert read(HttpProbe(f"{base}/state", pointer="/inbox")) == {"sent_count": 14}
    assert read_error(HttpProbe(f"{base}/state", pointer="/inbox/sent_count")) == (
        f"the value at JSON pointer '/inbox/sent_count' of GET {base}/state is a number; "
        "it must be an object, whose keys become state keys, unless the probe is given a "
        "state key to keep it whole under (into='key'; assay verify --into KEY)"
    )


def test_http_probe_follows_redirects_and_names_where_one_led(app: tuple[App, str]) -> None:
    """A state endpoint behind a redirect (a trailing slash, a moved route) is read where it
    led; it used to fail with 'answered HTTP 307 Temporary Redirect'."""
    state, base = app
    assert read(HttpProbe(f"{base}/moved")) == state.state
    assert read_error(HttpProbe(f"{base}/moved-away")) == (
        f"GET {base}/moved-away answered HTTP 410 Gone (redirected to {base}/gone), expected "
        "a 2xx JSON response; an empty body"
    )


def test_http_probe_connection_refused() -> None:
    port = free_port()
    message = read_error(HttpProbe(f"http://127.0.0.1:{port}/state"))
    assert message.startswith(f"GET http://127.0.0.1:{port}/state could not connect: ")
    assert "refused" in message or "failed" in message


def test_http_probe_times_out_on_a_stalled_handler(app: tuple[App, str]) -> None:
    _, base = app
    assert read_error(HttpProbe(f"{base}/stall", timeout=0.1)) == (
        f"GET {base}/stall timed out after 0.1 s while waiting for the response"
    )


def test_http_probe_uses_a_given_client_and_leaves_it_open(app: tuple[App, str]) -> None:
    state, base = app

    async def main() -> tuple[dict[str, Any], bool]:
        async with httpx.AsyncClient(headers={"X-Test": "1"}) as client:
            probe = HttpProbe(f"{base}/state", client=client, into="app")
            values = await probe.read()
            await probe.aclose()
            return values, client.is_closed

    values, closed = run(main)
    assert values == {"app": state.state}
    assert not closed


def test_http_probe_configuration_errors() -> None:
    with pytest.raises(ProbeConfigError, match="reads http:// or https:// URLs") as caught:
        HttpProbe("ftp://user:pw@example.test/state")
    assert caught.value.parameter == "url"
    assert "pw" not in str(caught.value)
    with pytest.raises(ProbeConfigError) as caught:
        HttpProbe("http://127.0.0.1/", pointer="inbox")
    assert str(caught.value) == (
        "invalid JSON pointer 'inbox': it must be empty or start with '/' (write '/inbox' to "
        "select the key 'inbox')"
    )
    with pytest.raises(ProbeConfigError, match="interval"):
        HttpProbe("http://127.0.0.1/", interval=0)
    with pytest.raises(ProbeConfigError) as caught:
        HttpProbe("http://[::1/")
    assert str(caught.value) == "'http://[::1/' is not a valid URL: Invalid port: ':1'"
    with pytest.raises(ProbeConfigError) as caught:
        HttpProbe("http://127.0.0.1/", into="a..b")
    assert caught.value.parameter == "into"
    assert str(caught.value).startswith("into 'a..b' is not a state key: invalid path 'a..b' ")


def test_json_pointer_follows_rfc_6901() -> None:
    document = {"a/b": {"m~n": [10, {"": "empty key"}]}, "list": []}
    assert JsonPointer("").resolve(document) is document
    assert JsonPointer("/a~1b/m~0n/0").resolve(document) == 10
    assert JsonPointer("/a~1b/m~0n/1/").resolve(document) == "empty key"
    with pytest.raises(LookupError) as caught:
        JsonPointer("/a~1b/m~0n/2").resolve(document)
    assert str(caught.value) == "'/a~1b/m~0n' has 2 elements, so there is no index 2"
    with pytest.raises(LookupError, match="'/a~1b/m~0n' is an array, and '01' is not"):
        JsonPointer("/a~1b/m~0n/01").resolve(document)
    with pytest.raises(LookupError, match="'/list' is an array, and '-' is not"):
        JsonPointer("/list/-").resolve(document)
    with pytest.raises(LookupError, match="'/a~1b/m~0n/0' is a number, so it has no 'x'"):
        JsonPointer("/a~1b/m~0n/0/x").resolve(document)
    with pytest.raises(LookupError, match="the document has no key 'nope'"):
        JsonPointer("/nope").resolve(document)
    with pytest.raises(ProbeConfigError, match="at position 2: '~' must be followed by 0 or 1"):
        JsonPointer("/a~2")


def test_display_url_hides_passwords_and_queries() -> None:
    assert display_url("postgresql://me:s3cret@db:5432/app?sslmode=require") == (
        "postgresql://me@db:5432/app?…"
    )
    assert display_url("http://[::1]:8000/state") == "http://[::1]:8000/state"
    assert display_url("http://:token@host/x") == "http://host/x"
    assert display_url("http://me:pw@[::1/x?k=v") == "http://me@[::1/x?…"


# SQLite: a real database file, changed between reads.


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE sent (id INTEGER PRIMARY KEY, subject TEXT);
            INSERT INTO sent (subject) VALUES ('hello'), ('again');
            CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT, total REAL, note BLOB);
            INSERT INTO orders VALUES ('o1', 'paid', 12.5, NULL), ('o2', 'open', 3, x'00ff');
            """
        )
    db.close()
    return path


def test_sqlite_scalars_rows_and_keyed_subtrees(shop: Path) -> None:
    probe = SqlProbe(
        f"sqlite:///{shop}",
        {
            "inbox.sent_count": "SELECT count(*) FROM sent",
            "orders.list": "SELECT id, status FROM orders ORDER BY id",
            "orders.by_id": {"sql": "SELECT id, status, total FROM orders", "key": "id"},
            "orders.first": {
                "sql": "SELECT id, status FROM orders WHERE id = 'o1'",
                "shape": "row",
            },
            "orders.ids": {"sql": "SELECT id FROM orders ORDER BY id", "shape": "rows"},
            "orders.missing": "SELECT status FROM orders WHERE id = 'nope'",
        },
    )
    assert read(probe) == {
        "inbox.sent_count": 2,
        "orders.list": [{"id": "o1", "status": "paid"}, {"id": "o2", "status": "open"}],
        "orders.by_id": {
            "o1": {"id": "o1", "status": "paid", "total": 12.5},
            "o2": {"id": "o2", "status": "open", "total": 3.0},
        },
        "orders.first": {"id": "o1", "status": "paid"},
        "orders.ids": [{"id": "o1"}, {"id": "o2"}],
        "orders.missing": None,
    }
    with sqlite3.connect(shop) as db:
        db.execute("INSERT INTO sent (subject) VALUES ('third')")
        db.execute("UPDATE orders SET status = 'shipped' WHERE id = 'o1'")
    db.close()
    again = read(probe)
    assert again["inbox.sent_count"] == 3
    assert again["orders.by_id"]["o1"]["status"] == "shipped"
    assert probe.name == f"sqlite:///{shop}"


def test_sqlite_refuses_what_does_not_fit_its_shape(shop: Path) -> None:
    url = f"sqlite:///{shop}"
    assert read_error(SqlProbe(url, {"ids": "SELECT id FROM orders"})) == (
        "the query for 'ids' returned 2 rows; a one-column query gives one value and must "
        "return at most one row (write {'sql': ..., 'shape': 'rows'} for a list of rows)"
    )
    assert read_error(SqlProbe(url, {"notes": "SELECT id, note FROM orders"})) == (
        "column 'note' of the query for 'notes' holds binary data (2 bytes), which has no JSON "
        "form; encode it in the query, e.g. encode(col, 'base64') in PostgreSQL or hex(col) "
        "in SQLite"
    )
    assert read(SqlProbe(url, {"note": "SELECT hex(note) FROM orders WHERE id = 'o2'"})) == {
        "note": "00FF"
    }
    assert read_error(SqlProbe(url, {"o": {"sql": "SELECT status FROM orders", "key": "id"}})) == (
        "the query for 'o' has no column 'id' to key its rows by; it returns ['status']"
    )
    assert read_error(
        SqlProbe(url, {"o": {"sql": "SELECT status AS id FROM orders, sent", "key": "id"}})
    ) == ("the query for 'o' has two rows with the same 'id'; the key column must be unique")
    assert read_error(SqlProbe(url, {"o": "SELECT id, status AS id FROM orders"})) == (
        "the query for 'o' returns the column 'id' twice; give each column its own name with AS"
    )
    assert read_error(SqlProbe(url, {"o": "SELECT id, status FROM orders"}, max_rows=1)) == (
        "the query for 'o' returned more than 1 rows; narrow it (WHERE, LIMIT) or raise max_rows"
    )


def test_sqlite_failures_name_the_key_the_error_and_the_sql(shop: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{shop}"
    assert read_error(SqlProbe(url, {"x": "SELECT * FROM nowhere"})) == (
        "the query for 'x' failed: no such table: nowhere (SQL: SELECT * FROM nowhere)"
    )
    assert read_error(SqlProbe(url, {"x": "DELETE FROM sent RETURNING id"})) == (
        "the query for 'x' failed: attempt to write a readonly database "
        "(SQL: DELETE FROM sent RETURNING id)"
    )
    missing = tmp_path / "absent.db"
    assert read_error(SqlProbe(f"sqlite:///{missing}", {"x": "SELECT 1"})) == (
        f"there is no SQLite database at {missing} (it is opened read-only, so it is never created)"
    )
    assert not missing.exists()


def test_sqlite_connection_factory(shop: Path) -> None:
    made: list[int] = []

    def connect() -> sqlite3.Connection:
        made.append(threading.get_ident())
        return sqlite3.connect(f"file:{quote(str(shop))}?mode=ro", uri=True)

    probe = SqlProbe(connect, {"n": "SELECT count(*) FROM sent"})
    assert read(probe) == {"n": 2}
    assert read(probe) == {"n": 2}
    assert len(made) == 2
    assert threading.get_ident() not in made
    assert probe.name.startswith("factory ")


def test_sql_probe_configuration_errors(shop: Path) -> None:
    url = f"sqlite:///{shop}"
    with pytest.raises(ProbeConfigError) as caught:
        SqlProbe(url, {"orders": "SELECT 1", "orders.count": "SELECT 2"})
    assert str(caught.value) == (
        "state key 'orders' is a parent of 'orders.count'; a probe's keys must not overlap, "
        "so read the parent whole or only its children"
    )
    with pytest.raises(ProbeConfigError, match="has both 'key' and 'shape'"):
        SqlProbe(url, {"o": {"sql": "SELECT 1", "key": "id", "shape": "rows"}})
    with pytest.raises(ProbeConfigError, match="has 'shape' 'list'; expected one of"):
        SqlProbe(url, {"o": {"sql": "SELECT 1", "shape": "list"}})
    with pytest.raises(ProbeConfigError, match=r"has unknown fields \['query'\]"):
        SqlProbe(url, {"o": {"query": "SELECT 1"}})
    with pytest.raises(ProbeConfigError, match="does not name a database file"):
        SqlProbe("sqlite:///:memory:", {"o": "SELECT 1"})
    with pytest.raises(ProbeConfigError) as caught:
        SqlProbe("mysql://root:hunter2@db/app", {"o": "SELECT 1"})
    assert str(caught.value) == (
        "connection 'mysql://root@db/app' is not a database URL this probe reads; write "
        "sqlite:///path.db or postgresql://user@host/db"
    )
    assert SqlProbe("postgresql://me:pw@db/app", {"o": "SELECT 1"}).name == (
        "postgresql://me@db/app"
    )


# PostgreSQL: the real server of the session, one schema per test.

_schemas = itertools.count()


@pytest.fixture
def pg(postgres_url: str) -> Iterator[tuple[str, psycopg.Connection[Any]]]:
    """A fresh schema: the probe's URL (search_path set to it) and an admin connection."""
    schema = f"probe_test_{next(_schemas)}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"SET search_path TO {schema}")
        yield f"{postgres_url}?options=-csearch_path%3D{schema}", admin
        admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_postgres_scalars_rows_keyed_and_changes(
    pg: tuple[str, psycopg.Connection[Any]],
) -> None:
    url, admin = pg
    admin.execute("CREATE TABLE sent (id serial PRIMARY KEY, subject text)")
    admin.execute("INSERT INTO sent (subject) VALUES ('a'), ('b')")
    admin.execute("CREATE TABLE orders (id text PRIMARY KEY, status text, qty int)")
    admin.execute("INSERT INTO orders VALUES ('o1', 'paid', 2), ('o2', 'open', 1)")
    probe = SqlProbe(
        url,
        {
            "inbox.sent_count": "SELECT count(*) FROM sent",
            "orders": {"sql": "SELECT id, status FROM orders", "key": "id"},
            "order_list": "SELECT id, qty FROM orders ORDER BY id",
            "total_qty": "SELECT sum(qty) FROM orders",
        },
    )

    async def main() -> list[dict[str, Any]]:
        async with probe:
            first = await probe.read()
            admin.execute("INSERT INTO sent (subject) VALUES ('c')")
            admin.execute("UPDATE orders SET status = 'cancelled' WHERE id = 'o2'")
            return [first, await probe.read()]

    first, second = run(main)
    assert first == {
        "inbox.sent_count": 2,
        "orders": {"o1": {"id": "o1", "status": "paid"}, "o2": {"id": "o2", "status": "open"}},
        "order_list": [{"id": "o1", "qty": 2}, {"id": "o2", "qty": 1}],
        "total_qty": 3,
    }
    assert second["inbox.sent_count"] == 3
    assert second["orders"]["o2"] == {"id": "o2", "status": "cancelled"}


def test_postgres_values_become_json(pg: tuple[str, psycopg.Connection[Any]]) -> None:
    url, _ = pg
    probe = SqlProbe(
        url,
        {
            "row": {
                "sql": """
                SELECT 2.50::numeric AS price, 10::numeric AS whole, true AS flag,
                       '2026-01-02 03:04:05+00'::timestamptz AS at, '2026-01-02'::date AS day,
                       '1 hour 30 minutes'::interval AS span,
                       'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS id,
                       '{"a": [1, null, "x"]}'::jsonb AS doc, ARRAY[1, 2] AS numbers,
                       NULL::text AS nothing, 1.5::float8 AS ratio
                """,
                "shape": "row",
            }
        },
    )
    assert read(probe) == {
        "row": {
            "price": 2.5,
            "whole": 10,
            "flag": True,
            "at": "2026-01-02T03:04:05+00:00",
            "day": "2026-01-02",
            "span": 5400.0,
            "id": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "doc": {"a": [1, None, "x"]},
            "numbers": [1, 2],
            "nothing": None,
            "ratio": 1.5,
        }
    }
    assert read_error(SqlProbe(url, {"b": "SELECT '\\x00ff'::bytea"})) == (
        "column 'bytea' of the query for 'b' holds binary data (2 bytes), which has no JSON "
        "form; encode it in the query, e.g. encode(col, 'base64') in PostgreSQL or hex(col) "
        "in SQLite"
    )
    assert read(SqlProbe(url, {"b": "SELECT encode('\\x00ff'::bytea, 'base64')"})) == {"b": "AP8="}
    assert read_error(SqlProbe(url, {"n": "SELECT 'NaN'::float8 AS n"})) == (
        "column 'n' of the query for 'n' is nan, which JSON cannot represent"
    )
    assert read(SqlProbe(url, {"p": "SELECT point(1, 2) AS p"})) == {"p": "(1,2)"}
    assert read_error(SqlProbe(url, {"r": "SELECT int4range(1, 5) AS r"})) == (
        "column 'r' of the query for 'r' holds a psycopg.types.range.Range, which has no JSON "
        "form; cast it to text in the query or return a JSON value"
    )


def test_postgres_failures_and_recovery(pg: tuple[str, psycopg.Connection[Any]]) -> None:
    url, admin = pg
    admin.execute("CREATE TABLE t (n int)")
    admin.execute("INSERT INTO t VALUES (1)")
    good = {"n": "SELECT n FROM t", "pid": "SELECT pg_backend_pid()"}
    probe = SqlProbe(url, good)
    broken = SqlProbe(url, {"x": "SELECT * FROM nowhere"})
    writer = SqlProbe(url, {"x": "INSERT INTO t VALUES (2) RETURNING n"})
    slow = SqlProbe(url, {"x": "SELECT pg_sleep(5)::text"}, timeout=0.2)

    async def main() -> list[Any]:
        outcomes: list[Any] = []
        for target in (broken, writer, slow):
            try:
                await target.read()
            except ProbeError as exc:
                outcomes.append(str(exc))
            await target.aclose()
        first = await probe.read()
        admin.execute("SELECT pg_terminate_backend(%s)", [first["pid"]])
        try:
            await probe.read()
        except ProbeError as exc:
            outcomes.append(str(exc))
        outcomes.append(await probe.read())
        await probe.aclose()
        return outcomes

    missing, refused, timed_out, terminated, recovered = run(main)
    assert missing == (
        "the query for 'x' failed: relation \"nowhere\" does not exist (SQLSTATE 42P01) "
        "(SQL: SELECT * FROM nowhere)"
    )
    assert refused == (
        "the query for 'x' failed: cannot execute INSERT in a read-only transaction "
        "(SQLSTATE 25006) (SQL: INSERT INTO t VALUES (2) RETURNING n)"
    )
    assert timed_out == (
        "the query for 'x' failed: canceling statement due to statement timeout "
        "(SQLSTATE 57014) (SQL: SELECT pg_sleep(5)::text)"
    )
    assert terminated.startswith("the query for 'n' failed: ")
    assert recovered["n"] == 1
    assert admin.execute("SELECT count(*) FROM t").fetchone() == (1,)


def test_postgres_query_is_one_statement_and_keeps_percent_signs(
    pg: tuple[str, psycopg.Connection[Any]],
) -> None:
    """psycopg sent a query without parameters through the simple protocol, which runs
    several statements: the commit ended the read-only transaction and the update stuck."""
    url, admin = pg
    admin.execute("CREATE TABLE knob (n int)")
    admin.execute("INSERT INTO knob VALUES (1)")
    admin.execute("CREATE TABLE secrets (v text)")
    admin.execute("INSERT INTO secrets VALUES (%s)", [SECRET])
    sneaky = "select 1; commit; update knob set n = n + 1; select 2"
    assert read_error(SqlProbe(url, {"k": sneaky})) == (
        "the query for 'k' failed: it holds more than one statement; a probe query is one "
        f"SELECT (SQLSTATE 42601) (SQL: {sneaky})"
    )
    assert admin.execute("SELECT n FROM knob").fetchone() == (1,)
    percent = {"hit": "SELECT 'a%s' LIKE '%%s'", "text": "SELECT '100%' AS t"}
    assert read(SqlProbe(url, percent)) == {"hit": True, "text": "100%"}
    # A data exception's message quotes the value ("invalid input syntax ...: <value>").
    assert read_error(SqlProbe(url, {"n": "SELECT v::int FROM secrets"})) == (
        "the query for 'n' failed: a data exception, InvalidTextRepresentation "
        "(SQLSTATE 22P02) (SQL: SELECT v::int FROM secrets)"
    )


def test_postgres_connection_refused_and_factories(postgres_url: str) -> None:
    port = free_port()
    message = read_error(SqlProbe(f"postgresql://me:pw@127.0.0.1:{port}/x", {"n": "SELECT 1"}))
    assert message.startswith(f"could not connect to postgresql://me@127.0.0.1:{port}/x: ")
    assert "pw" not in message

    async def connect() -> psycopg.AsyncConnection[Any]:
        return await psycopg.AsyncConnection.connect(postgres_url)

    probe = SqlProbe(connect, {"one": "SELECT 1", "two": "SELECT 2"})
    assert read(probe) == {"one": 1, "two": 2}
    assert read_error(SqlProbe(lambda: 42, {"n": "SELECT 1"})) == (
        "factory test_postgres_connection_refused_and_factories.<locals>.<lambda> made a int; "
        "a connection factory makes a sqlite3.Connection or a psycopg.AsyncConnection"
    )


def test_postgres_read_sees_one_snapshot(pg: tuple[str, psycopg.Connection[Any]]) -> None:
    url, admin = pg
    admin.execute("CREATE TABLE t (n int)")
    admin.execute("INSERT INTO t VALUES (1)")
    # The read blocks between its queries on a lock the test holds; a row committed then
    # is not seen by the read's later query, which shares the first one's snapshot.
    probe = SqlProbe(
        url,
        {
            "before": "SELECT count(*) FROM t",
            "waited": "SELECT true FROM pg_advisory_xact_lock_shared(42)",
            "after": "SELECT count(*) FROM t",
        },
    )
    waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"

    async def main() -> dict[str, Any]:
        admin.execute("SELECT pg_advisory_lock(42)")
        reading = asyncio.create_task(probe.read())
        for _ in range(500):  # until the read waits on the lock; 5 s at most
            if reading.done() or admin.execute(waiting).fetchone() == (1,):
                break
            await asyncio.sleep(0.01)
        admin.execute("INSERT INTO t VALUES (2)")
        admin.execute("SELECT pg_advisory_unlock(42)")
        try:
            return await reading
        finally:
            await probe.aclose()

    assert run(main) == {"before": 1, "waited": True, "after": 1}
    assert admin.execute("SELECT count(*) FROM t").fetchone() == (2,)


# Callables.


def test_callable_probe_plain_and_async() -> None:
    count = itertools.count(1)

    def plain() -> dict[str, Any]:
        return {"counter": next(count), "at": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)}

    async def coroutine() -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"drone.mode": "GUIDED", "price": Decimal("2.50")}

    probe = CallableProbe(plain)
    assert read(probe) == {"counter": 1, "at": "2026-01-01T00:00:00+00:00"}
    assert read(probe) == {"counter": 2, "at": "2026-01-01T00:00:00+00:00"}
    assert probe.name == "test_probes.test_callable_probe_plain_and_async.<locals>.plain"
    assert read(CallableProbe(coroutine, name="drone")) == {"drone.mode": "GUIDED", "price": 2.5}


def test_callable_probe_checks_what_it_is_given() -> None:
    assert read_error(CallableProbe(lambda: [1], name="f")) == (
        "probe function 'f' returned list; it must return a mapping of state keys to JSON values"
    )
    assert read_error(CallableProbe(lambda: {1: 2}, name="f")) == (
        "probe function 'f' returned the key 1; state keys are dotted path strings"
    )
    assert read_error(CallableProbe(lambda: {"x": {1, 2}}, name="f")) == (
        "the value of 'x' holds a builtins.set, which has no JSON form; cast it to text in the "
        "query or return a JSON value"
    )
    with pytest.raises(ContractError):
        read(CallableProbe(lambda: {"a..b": 1}))


def test_to_json_conversions() -> None:
    assert to_json(Decimal("1E+2"), "v") == 100
    assert to_json(Decimal("-0.125"), "v") == -0.125
    assert to_json(dt.time(12, 30), "v") == "12:30:00"
    assert to_json((1, [2, {"a": None}]), "v") == [1, [2, {"a": None}]]
    with pytest.raises(ProbeError, match=r"v\['k'\]\[0\] is inf, which JSON cannot represent"):
        to_json({"k": [float("inf")]}, "v")
    with pytest.raises(ProbeError, match="v is NaN"):
        to_json(Decimal("NaN"), "v")


# Health.


def test_health_window_ratio_counts_and_errors() -> None:
    window = HealthWindow("p", size=4)
    assert window.snapshot() == ProbeHealth("p", 1.0, 0, 0, 0, None, None, None)
    assert not window.snapshot().known
    window.record_failure(1.0, "boom")
    window.record_failure(2.0, "x" * 600)
    assert window.snapshot() == ProbeHealth("p", 0.0, 2, 2, 2, "x" * 499 + "…", None, 2.0)
    for at in (3.0, 4.0, 5.0):
        window.record_success(at)
    health = window.snapshot()
    assert (health.ratio, health.reads, health.recent) == (0.75, 5, 4)
    assert (health.consecutive_failures, health.last_success_at) == (0, 5.0)
    assert health.last_error == "x" * 499 + "…"
    window.record_success(6.0)
    assert window.ratio == 1.0
    with pytest.raises(ProbeConfigError, match="at least one read"):
        HealthWindow("p", size=0)


# The poller, on virtual time.


class Recorder:
    """A sink that remembers each call with the virtual time it came at."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.calls: list[tuple[float, str, dict[str, Any]]] = []

    def __call__(self, name: str, values: dict[str, Any], gone: frozenset[str]) -> None:
        self.calls.append((self.clock.monotonic(), name, values))


def test_poller_reads_each_probe_at_its_interval() -> None:
    fast_reads = itertools.count(1)
    slow_reads = itertools.count(1)

    async def slow() -> dict[str, Any]:
        return {"slow": next(slow_reads)}

    async def main() -> list[tuple[float, str, dict[str, Any]]]:
        clock = VirtualClock()
        sink = Recorder(clock)
        poller = Poller(
            [
                CallableProbe(lambda: {"fast": next(fast_reads)}, name="fast"),
                CallableProbe(slow, name="slow", interval=1.0),
            ],
            sink,
            clock,
        )
        task = asyncio.create_task(poller.run())
        for _ in range(4):
            await clock.advance(0.5)
        await poller.stop()
        await task
        await clock.advance(5)
        assert poller.all_health()["fast"].reads == 5
        return sink.calls

    assert sorted(run(main), key=lambda call: call[:2]) == [
        (0.0, "fast", {"fast": 1}),
        (0.0, "slow", {"slow": 1}),
        (0.5, "fast", {"fast": 2}),
        (1.0, "fast", {"fast": 3}),
        (1.0, "slow", {"slow": 2}),
        (1.5, "fast", {"fast": 4}),
        (2.0, "fast", {"fast": 5}),
        (2.0, "slow", {"slow": 3}),
    ]


def test_poller_records_failures_in_health_and_skips_the_sink() -> None:
    calls = itertools.count(1)

    def flaky() -> dict[str, Any]:
        n = next(calls)
        if n in (2, 3):
            raise OSError(f"read {n} failed")
        return {"n": n}

    async def main() -> tuple[list[Any], list[ProbeHealth]]:
        clock = VirtualClock()
        sink = Recorder(clock)
        poller = Poller([CallableProbe(flaky, name="flaky")], sink, clock)
        task = asyncio.create_task(poller.run())
        await clock.settle()
        healths = [poller.health("flaky")]
        for _ in range(3):
            await clock.advance(0.5)
            healths.append(poller.health("flaky"))
        await poller.stop()
        await task
        return sink.calls, healths

    calls_seen, healths = run(main)
    assert calls_seen == [(0.0, "flaky", {"n": 1}), (1.5, "flaky", {"n": 4})]
    assert healths == [
        ProbeHealth("flaky", 1.0, 1, 1, 0, None, 0.0, None),
        ProbeHealth("flaky", 0.5, 2, 2, 1, "OSError: read 2 failed", 0.0, 0.5),
        ProbeHealth("flaky", 1 / 3, 3, 3, 2, "OSError: read 3 failed", 0.0, 1.0),
        ProbeHealth("flaky", 0.5, 4, 4, 0, "OSError: read 3 failed", 1.5, 1.0),
    ]


def test_poller_hands_over_vanished_keys_as_gone_and_counts_a_refusing_sink() -> None:
    answers = iter([{"a": 1, "b": 2}, {"a": 1}, {"a": 3}, {"a": 4}])
    refuse = [False, False, True, False]

    async def main() -> tuple[list[tuple[dict[str, Any], frozenset[str]]], ProbeHealth]:
        seen: list[tuple[dict[str, Any], frozenset[str]]] = []

        def sink(name: str, values: dict[str, Any], gone: frozenset[str]) -> None:
            if refuse[len(seen)]:
                seen.append(({}, frozenset()))
                raise AssayError("conflicting keys")
            seen.append((values, gone))

        poller = Poller([CallableProbe(lambda: next(answers), name="p")], sink, VirtualClock())
        for _ in range(4):
            await poller.read_once()
        return seen, poller.health("p")

    seen, health = run(main)
    assert seen == [
        ({"a": 1, "b": 2}, frozenset()),
        ({"a": 1}, frozenset({"b"})),
        ({}, frozenset()),
        ({"a": 4}, frozenset()),
    ]
    assert health.last_error == "the sink refused the values: AssayError: conflicting keys"
    assert (health.reads, health.ratio, health.consecutive_failures) == (4, 0.75, 0)


class ClosingProbe:
    name = "closing"
    interval = 0.5

    def __init__(self) -> None:
        self.closed = 0

    async def read(self) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        self.closed += 1


def test_poller_stop_ends_run_and_closes_probes() -> None:
    probe = ClosingProbe()

    async def main() -> tuple[int, int, bool]:
        clock = VirtualClock()
        sink = Recorder(clock)
        poller = Poller([probe], sink, clock)
        task = asyncio.create_task(poller.run())
        await clock.settle()
        assert poller.running
        with pytest.raises(ProbeError, match="already running"):
            await poller.run()
        await poller.stop()
        await task
        await clock.advance(10)
        return len(sink.calls), probe.closed, poller.running

    assert run(main) == (1, 1, False)
    assert isinstance(probe, ClosableProbe)


def test_poller_configuration_errors() -> None:
    with pytest.raises(ProbeConfigError, match="two probes are named 'x'"):
        Poller([CallableProbe(dict, name="x"), CallableProbe(dict, name="x")], print)
    poller = Poller([CallableProbe(dict, name="x")], print)
    with pytest.raises(NotFoundError, match=r"no probe named 'y'; this poller polls \['x'\]"):
        poller.health("y")
    assert poller.names == ("x",)


def test_poller_refuses_a_key_another_probe_answers() -> None:
    """Two probes answering one key (or one holding the other's) would overwrite each other
    at every read: the later read is not taken, and its probe's health says why."""
    answers = {
        "sql": iter([{"inbox": {"count": 1, "unread": 0}}] * 3),
        "http": iter([{"inbox.count": 9}, {"drone.mode": "GUIDED"}, {"drone": {"mode": "LAND"}}]),
        "page": iter([{"inbox": 5}, {"view.domain": "billing"}, {"view.domain": "billing"}]),
    }
    taken: list[tuple[str, dict[str, Any]]] = []

    def sink(name: str, values: dict[str, Any], gone: frozenset[str]) -> None:
        taken.append((name, values))

    async def main() -> dict[str, ProbeHealth]:
        probes = [
            CallableProbe(lambda name=name: next(answers[name]), name=name) for name in answers
        ]
        poller = Poller(probes, sink, VirtualClock())
        for _ in range(3):
            for probe in probes:  # one at a time, so which read comes first is fixed
                await poller._read(probe)
        return poller.all_health()

    health = run(main)
    assert [name for name, _ in taken] == ["sql", "sql", "http", "page", "sql", "http", "page"]
    assert "probe 'http' answered 'inbox.count', and probe 'sql'" in str(health["http"].last_error)
    assert "probe 'page' answered 'inbox', and probe 'sql' answers 'inbox'" in str(
        health["page"].last_error
    )
    assert (health["sql"].ratio, health["http"].ratio, health["page"].ratio) == (1.0, 2 / 3, 2 / 3)
    assert taken[2] == ("http", {"drone.mode": "GUIDED"})
    assert taken[5] == ("http", {"drone": {"mode": "LAND"}})


@pytest.mark.parametrize(
    ("first", "second", "theirs"),
    [
        (
            {"inbox": {"count": 1}},
            {"inbox.count": 2},
            "'inbox.count', and probe 'a' answers 'inbox'",
        ),
        (
            {"inbox.count": 1},
            {"inbox": {"count": 2}},
            "'inbox', and probe 'a' answers 'inbox.count'",
        ),
        ({'a["x.y"]': 1}, {'a["x.y"]': 2}, """'a["x.y"]', and probe 'a' answers 'a["x.y"]'"""),
    ],
)
def test_poller_names_the_probes_and_keys_that_collide(
    first: dict[str, Any], second: dict[str, Any], theirs: str
) -> None:
    answers = {"a": iter([first]), "b": iter([second])}

    async def main() -> ProbeHealth:
        probes = [CallableProbe(lambda n=n: next(answers[n]), name=n) for n in answers]
        poller = Poller(probes, lambda *_: None, VirtualClock())
        for probe in probes:
            await poller._read(probe)
        return poller.health("b")

    assert run(main).last_error == (
        f"probe 'b' answered {theirs}: each key must come from one probe, so this read was not "
        "taken; narrow one of them (its queries, pointer or keys) so that they answer different "
        "keys"
    )


def test_a_read_failing_as_its_reader_is_cancelled_is_retrieved_not_logged() -> None:
    # The read fails in the same turn as the poller's reader is cancelled (a daemon
    # stopping): the reader never sees the failure, and asyncio must not report it as an
    # exception never retrieved (pytest's asyncio runner fails the test that collects one).
    gate: asyncio.Future[dict[str, Any]] | None = None
    reported: list[dict[str, Any]] = []

    async def read() -> dict[str, Any]:
        assert gate is not None
        return await gate

    async def main() -> None:
        nonlocal gate
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: reported.append(context))
        gate = loop.create_future()
        poller = Poller([CallableProbe(read, name="app")], lambda *values: None)
        reader = asyncio.ensure_future(poller.read_once())
        for _ in range(5):
            await asyncio.sleep(0)  # the read has started and waits on the gate
        gate.set_exception(ProbeError("the link went down"))
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        del reader, poller
        gc.collect()

    asyncio.run(main())
    assert [context["message"] for context in reported] == []
