"""What the daemon refuses in a request, and how it says so: query parameters, bodies,
content types and paths at their edges, each a 400 (or 404, 415) problem naming the part."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.host import Application
from http_daemon import Served, serving

pytestmark = pytest.mark.anyio

PROBLEM = "application/problem+json"


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    outpost = Outpost(delivery_delay=0.05, mode_delay=0.05, release_delay=0.05, mode="GUIDED")
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    async with serving(application) as served:
        yield served


@pytest.fixture
async def client(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        yield http


def _problem(response: httpx.Response, status: int, code: str = "invalid-request") -> Any:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["type"] == (f"urn:assay:problem:{code}" if code else "about:blank")
    return body


def _errors(response: httpx.Response) -> list[dict[str, str]]:
    errors: list[dict[str, str]] = _problem(response, 400)["errors"]
    return errors


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
async def test_a_ledger_time_beyond_utcs_range_is_a_400_naming_the_parameter(
    client: httpx.AsyncClient, name: str, value: str
) -> None:
    refused = await client.get("/v1/ledger/entries", params={name: value})
    body = _problem(refused, 400, "bad-request")
    assert body["field"] == name
    assert body["detail"].startswith(f"{name} is ")
    assert body["detail"].endswith(
        "in UTC, beyond the times a ledger can hold; give a time from 0001-01-01T00:00:00Z to "
        f"9999-12-31T23:59:59Z, not {value!r}"
    )


async def test_ledger_times_are_rfc_3339_exactly(client: httpx.AsyncClient) -> None:
    lower = await client.get("/v1/ledger/entries", params={"since": "2000-01-01t00:00:00z"})
    assert lower.status_code == 200, lower.text
    week = await client.get("/v1/ledger/entries", params={"until": "2026-W01-1T00:00:00Z"})
    assert _problem(week, 400, "bad-request")["detail"] == (
        "until must be an RFC 3339 time like 2026-01-01T00:00:00Z, not '2026-W01-1T00:00:00Z'"
    )


DEFAULT_SESSION = "an empty string names no session; leave session out for the default session"


async def test_an_empty_session_or_node_is_refused_naming_the_field(
    client: httpx.AsyncClient, served: Served
) -> None:
    fire = await client.post("/v1/actions", json={"action": "inbox.send", "session": ""})
    assert _errors(fire) == [
        {"field": "body.session", "message": DEFAULT_SESSION, "type": "string_too_short"}
    ]
    verify = await client.post("/v1/verify", json={"expression": "true", "session": ""})
    assert _errors(verify) == [
        {"field": "body.session", "message": DEFAULT_SESSION, "type": "string_too_short"}
    ]
    answer = await client.get("/v1/transitions/inbox.send%231", params={"session": ""})
    assert _errors(answer) == [
        {"field": "query.session", "message": DEFAULT_SESSION, "type": "string_too_short"}
    ]
    opened = await client.post("/v1/sessions", json={"node": ""})
    assert _errors(opened) == [
        {
            "field": "body.node",
            "message": "an empty string names no page; leave node out to open the session at "
            "the start page",
            "type": "string_too_short",
        }
    ]
    assert served.host.ledger.query(kind="fire") == []
    assert len(served.host.sessions) == 1
    null = await client.post("/v1/verify", json={"expression": "true", "session": None})
    assert null.status_code == 200, null.text  # null is as good as leaving it out


@pytest.mark.parametrize("name", ["session", "transition", "run"])
async def test_an_empty_ledger_filter_is_refused_rather_than_matching_nothing(
    client: httpx.AsyncClient, name: str
) -> None:
    # GET /v1/ledger/entries?session= answered 200 [] (no entry has an empty session).
    await client.post("/v1/verify", json={"expression": "true", "timeout_ms": 0})
    every = "every run, and those of none" if name == "run" else f"every {name}"
    assert _errors(await client.get("/v1/ledger/entries", params={name: ""})) == [
        {
            "field": f"query.{name}",
            "message": f"an empty string names no {name}; leave {name} out for the entries "
            f"of {every}",
            "type": "string_too_short",
        }
    ]


@pytest.mark.parametrize(
    ("url", "name", "instead"),
    [
        ("/v1/sessions", "session", "leave after out to start from the first session"),
        ("/v1/runs", "run", "leave after out to start from the first run"),
    ],
)
async def test_an_empty_after_is_refused_rather_than_naming_nothing(
    client: httpx.AsyncClient, url: str, name: str, instead: str
) -> None:
    # GET /v1/sessions?after= was a 404 saying no session is called ''; /v1/runs read it
    # as naming no run at all.
    assert _errors(await client.get(url, params={"after": ""})) == [
        {
            "field": "query.after",
            "message": f"an empty string names no {name}; {instead}",
            "type": "string_too_short",
        }
    ]


WHOLE = (
    "must be a whole number written in the digits 0-9 alone (no sign, space, point, exponent "
    "or separator), not "
)
SPACE = " (a + in a query string stands for a space)"


@pytest.mark.parametrize(
    ("url", "field", "message"),
    [
        ("/v1/ledger/entries/1.0", "path.seq", f"seq {WHOLE}'1.0'"),
        ("/v1/ledger/entries/%D9%A1%D9%A2", "path.seq", f"seq {WHOLE}'\u0661\u0662'"),
        ("/v1/ledger/entries/%2B1", "path.seq", f"seq {WHOLE}'+1'"),
        ("/v1/ledger/entries/%201", "path.seq", f"seq {WHOLE}' 1'{SPACE}"),
        ("/v1/ledger/entries/1e0", "path.seq", f"seq {WHOLE}'1e0'"),
        ("/v1/ledger/entries/1_0", "path.seq", f"seq {WHOLE}'1_0'"),
        ("/v1/ledger/entries/0", "path.seq", "seq must be 1 or more, not 0"),
        ("/v1/ledger/entries?after=%2B1", "query.after", f"after {WHOLE}'+1'"),
        ("/v1/ledger/entries?after=+1", "query.after", f"after {WHOLE}' 1'{SPACE}"),
        ("/v1/ledger/entries?after=-0", "query.after", f"after {WHOLE}'-0'"),
        ("/v1/ledger/entries?limit=1.0", "query.limit", f"limit {WHOLE}'1.0'"),
        ("/v1/ledger/entries?limit=", "query.limit", f"limit {WHOLE}''"),
        ("/v1/ledger/entries?limit=1001", "query.limit", "limit must be from 1 to 1,000, not 1001"),
        ("/v1/ledger/proofs/inclusion/1.0", "path.seq", f"seq {WHOLE}'1.0'"),
        ("/v1/ledger/proofs/inclusion/1?size=%EF%BC%91", "query.size", f"size {WHOLE}'\uff11'"),
        ("/v1/ledger/proofs/consistency?old=1e0", "query.old", f"old {WHOLE}'1e0'"),
        ("/v1/ledger/proofs/consistency?old=1&new=2.0", "query.new", f"new {WHOLE}'2.0'"),
        ("/v1/sessions?limit=1.5", "query.limit", f"limit {WHOLE}'1.5'"),
        ("/v1/runs?limit=%2B2", "query.limit", f"limit {WHOLE}'+2'"),
        ("/v1/transitions/inbox.send%231?wait_ms=1e3", "query.wait_ms", f"wait_ms {WHOLE}'1e3'"),
    ],
)
async def test_a_number_in_the_url_is_its_digits_alone(
    client: httpx.AsyncClient, url: str, field: str, message: str
) -> None:
    # /v1/ledger/entries/1.0 answered entry 1: pydantic reads '1.0', '+1', ' 1' and '1_0' as
    # numbers.
    await client.post("/v1/verify", json={"expression": "true", "timeout_ms": 0})
    (error,) = _errors(await client.get(url))
    assert (error["field"], error["message"]) == (field, message)


async def test_numbers_in_the_url_keep_their_range_and_length(client: httpx.AsyncClient) -> None:
    await client.post("/v1/verify", json={"expression": "true", "timeout_ms": 0})
    assert (await client.get("/v1/ledger/entries/001")).json()["seq"] == 1
    assert (await client.get("/v1/ledger/entries", params={"after": 10**99})).json() == []
    (error,) = _errors(await client.get("/v1/ledger/entries/" + "9" * 5000))
    assert error == {
        "field": "path.seq",
        "message": "seq must be 1 or more in at most 100 digits, not a number of 5,000 digits",
        "type": "int_parsing_size",
    }


async def test_proof_sizes_out_of_range_name_the_query_parameter_and_its_real_bounds(
    client: httpx.AsyncClient,
) -> None:
    for _ in range(3):
        await client.post("/v1/verify", json={"expression": "true", "timeout_ms": 0})

    async def detail(path: str, **params: int) -> tuple[str, str]:
        body = _problem(await client.get(path, params=params), 400, "bad-request")
        return body["parameter"], body["detail"]

    inclusion = "/v1/ledger/proofs/inclusion/2"
    assert await detail(inclusion, size=99999) == (
        "size",
        "size must be between 2 (the entry's seq: a smaller tree does not hold it) and the "
        "tree's size (3), not 99999; leave size out for the current tree",
    )
    assert (await detail(inclusion, size=1))[1].startswith("size must be between 2 ")
    consistency = "/v1/ledger/proofs/consistency"
    assert await detail(consistency, old=9) == (
        "old",
        "old must be between 1 and the tree's size (3), not 9",
    )
    assert await detail(consistency, old=3, new=2) == (
        "new",
        "new must be between old (3) and the tree's size (3), not 2; leave new out for the "
        "current tree",
    )
    assert await detail(consistency, old=1, new=4) == (
        "new",
        "new must be between old (1) and the tree's size (3), not 4; leave new out for the "
        "current tree",
    )
    assert (await client.get(consistency, params={"old": 2, "new": 3})).status_code == 200
    assert (await client.get(inclusion, params={"size": 2})).status_code == 200


async def test_a_consistency_proof_of_an_empty_ledger_says_it_is_empty(
    client: httpx.AsyncClient,
) -> None:
    refused = await client.get("/v1/ledger/proofs/consistency", params={"old": 1})
    assert _problem(refused, 400, "bad-request")["detail"] == (
        "the ledger is empty, so there is no tree to prove consistent yet; ask again once it "
        "holds an entry"
    )


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/verify/"),
        ("POST", "/v1/actions/"),
        ("GET", "/v1/state/"),
        ("GET", "/healthz/"),
    ],
)
async def test_a_trailing_slash_is_an_unknown_path_not_a_redirect(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    answer = await client.request(method, path, json={"expression": "true"})
    assert _problem(answer, 404, "")["detail"] == (
        f"no route is {path}; the routes are listed at /openapi.json"
    )


async def test_the_timeline_page_refuses_query_parameters(client: httpx.AsyncClient) -> None:
    for path in ("/", "/timeline/head"):
        (error,) = _errors(await client.get(path, params={"x": "1"}))
        assert error == {
            "field": "query.x",
            "message": "unknown query parameter; this route takes: none",
            "type": "extra_forbidden",
        }
    assert (await client.get("/")).status_code == 200


async def test_a_repeated_single_valued_query_parameter_is_refused_naming_it(
    client: httpx.AsyncClient,
) -> None:
    twice = await client.get("/v1/transitions/inbox.send%231?wait_ms=100&wait_ms=200")
    assert _errors(twice) == [
        {
            "field": "query.wait_ms",
            "message": "given 2 times; this parameter takes one value, so give it once",
            "type": "repeated_parameter",
        }
    ]
    entries = await client.get("/v1/ledger/entries?limit=1&kind=fire&limit=2&limit=3")
    assert [e["field"] for e in _errors(entries)] == ["query.limit"]
    keys = await client.get("/v1/state?keys=inbox.unread&keys=drone.mode")
    assert keys.status_code == 200, keys.text  # keys takes several
    assert set(keys.json()["objects"]) == {"inbox", "drone"}


JSON_BODIES = [
    ("/v1/actions", b'{"action": "inbox.send", "args": {"message_id": "m1", "to": "ops"}}'),
    ("/v1/verify", b'{"expression": "inbox.unread >= 0", "timeout_ms": 0}'),  # the hot path
    ("/v1/sessions", b'{"node": "drone"}'),
    ("/v1/state/reports", b'{"values": {"inbox.note": "hi"}}'),
    ("/v1/workflows/competitor_deep_dive/runs", b'{"input": {"company": "Acme"}}'),
]


@pytest.mark.parametrize(("path", "body"), JSON_BODIES)
@pytest.mark.parametrize(
    ("content_type", "sent"),
    [
        ("application/x-www-form-urlencoded", "is sent as application/x-www-form-urlencoded"),
        ("text/plain; charset=utf-8", "is sent as text/plain"),
        (None, "has no Content-Type"),
    ],
)
async def test_a_body_not_sent_as_json_is_a_415_naming_the_content_type(
    client: httpx.AsyncClient,
    served: Served,
    *,
    path: str,
    body: bytes,
    content_type: str | None,
    sent: str,
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    refused = await client.post(path, content=body, headers=headers)  # raw bytes: no type
    assert _problem(refused, 415, "")["detail"] == (
        f"the request body {sent}; send it as JSON, with the header Content-Type: application/json"
    )
    assert served.host.ledger.tree_head().size == 0  # nothing fired, verified or reported


@pytest.mark.parametrize(("path", "body"), JSON_BODIES)
async def test_every_json_route_reads_a_body_alike(
    client: httpx.AsyncClient, path: str, body: bytes
) -> None:
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        answer = await client.post(path, content=body, headers={"content-type": content_type})
        assert answer.status_code == 200, answer.text
    # A UTF-8 byte order mark is ignored (RFC 8259 §8.1 lets a reader), on every route.
    bom = await client.post(
        path, content=b"\xef\xbb\xbf" + body, headers={"content-type": "application/json"}
    )
    assert bom.status_code == 200, bom.text
    # Another encoding than UTF-8 is not JSON text here, on every route.
    utf16 = await client.post(
        path, content=body.decode().encode("utf-16"), headers={"content-type": "application/json"}
    )
    ((error),) = _errors(utf16)
    assert (error["type"], error["field"].split(".")[0]) == ("json_invalid", "body")


@pytest.mark.parametrize("path", [path for path, _ in JSON_BODIES])
async def test_a_key_given_twice_in_one_object_is_refused_naming_it(
    client: httpx.AsyncClient, served: Served, path: str
) -> None:
    bodies = {
        "/v1/actions": b'{"action": "inbox.send", "action": "inbox.mark-all-read"}',
        "/v1/verify": b'{"expression": {"inbox.unread": {"eq": 3, "eq": 0}}, "timeout_ms": 0}',
        "/v1/sessions": b'{"node": "drone", "node": "inbox"}',
        "/v1/state/reports": b'{"values": {"inbox.unread": 1, "inbox.unread": 2}}',
        "/v1/workflows/competitor_deep_dive/runs": b'{"input": {}, "input": {"company": "x"}}',
    }
    key = {"/v1/actions": "action", "/v1/verify": "eq", "/v1/sessions": "node"}.get(
        path, "input" if path.startswith("/v1/workflows") else "inbox.unread"
    )
    refused = await client.post(
        path, content=bodies[path], headers={"content-type": "application/json"}
    )
    assert _errors(refused) == [
        {
            "field": "body",
            "message": f"the key {key!r} is given twice in one object; give each key once "
            "(JSON readers differ on which of the two counts)",
            "type": "json_duplicate_key",
        }
    ]
    assert served.host.ledger.tree_head().size == 0


async def test_the_hot_path_tells_a_colon_in_a_string_from_a_repeated_key(
    client: httpx.AsyncClient,
) -> None:
    spelled = b'{"expression": "inbox.unread >= 0 ? true : false", "timeout_ms": 0}'
    answer = await client.post(
        "/v1/verify", content=spelled, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 200, answer.text
    escaped = b'{"expression": "true", "timeout_ms": 0, "timeout\\u005fms": 50}'
    refused = await client.post(
        "/v1/verify", content=escaped, headers={"content-type": "application/json"}
    )
    assert _errors(refused)[0]["message"].startswith("the key 'timeout_ms' is given twice")


async def _raw(url: str, request: bytes) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """Send ``request`` as bytes on a connection of its own: the status line, the headers
    (names in lower case) and the body of the answer."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status, *lines = head.removesuffix(b"\r\n\r\n").split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines)
        body = await reader.readexactly(int(headers[b"content-length"]))
    finally:
        writer.close()
    return status, headers, body


async def test_a_request_uvicorns_parser_cannot_read_is_answered_by_uvicorn_in_plain_text(
    served: Served,
) -> None:
    # Known and documented (docs/http.md): such a request never reaches the daemon, and
    # uvicorn offers no setting for its answer. A request target is read up to 65,535
    # bytes (httptools keeps URL offsets in 16 bits); a header value may not hold a control
    # character other than tab. If uvicorn starts passing these on, the daemon answers them.
    longest = b"/?x=" + b"a" * (65_535 - len("/?x="))
    status, headers, body = await _raw(served.url, b"GET " + longest + b" HTTP/1.1\r\n\r\n")
    assert (status, headers[b"content-type"]) == (b"HTTP/1.1 400 Bad Request", PROBLEM.encode())
    assert json.loads(body)["errors"][0]["field"] == "query.x"
    for request in (
        b"GET " + longest + b"a HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nX-Note: a\x7fb\r\n\r\n",
    ):
        status, headers, body = await _raw(served.url, request)
        assert (status, headers[b"content-type"]) == (
            b"HTTP/1.1 400 Bad Request",
            b"text/plain; charset=utf-8",
        )
        assert (body, headers[b"connection"]) == (b"Invalid HTTP request received.", b"close")
