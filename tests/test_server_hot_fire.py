"""``POST /v1/actions`` answered ahead of FastAPI (``server.hot``) answers as its route does.

Each request goes to two daemons over the same application, fresh for each: one as served
(the hot path), one whose requests all go through FastAPI's middleware and router. Status,
content type and body must agree, well-formed fires and refusals alike, so the hot path
cannot drift from the declared route.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from assay.examples.outpost import APPLICATION
from assay.host import Host
from assay.ledger import Ledger
from assay.ledger.backends.memory import MemoryBackend
from assay.server import create_app
from http_daemon import TOKENS, bearer

pytestmark = pytest.mark.anyio

FIRE = {"action": "inbox.send", "args": {"message_id": "m1", "to": "ops"}, "wait_ms": 0}
JSON = {"Content-Type": "application/json"}

SENT = json.dumps(FIRE).encode()
ACTOR = {**JSON, **bearer("actor")}


def _fire(args: bytes, rest: bytes = b"") -> bytes:
    return b'{"action": "inbox.send", "args": ' + args + rest + b"}"


# (name, body bytes, headers, query)
REQUESTS: list[tuple[str, bytes, Mapping[str, str], str]] = [
    ("a well-formed fire", SENT, ACTOR, ""),
    ("an admin's fire", SENT, {**JSON, **bearer("admin")}, ""),
    ("with a key", SENT, {**ACTOR, "Idempotency-Key": "k1"}, ""),
    ("a key of a space inside", SENT, {**ACTOR, "Idempotency-Key": "a b"}, ""),
    ("a key too long", SENT, {**ACTOR, "Idempotency-Key": "k" * 256}, ""),
    ("a key with a control character", SENT, {**ACTOR, "Idempotency-Key": "a\tb"}, ""),
    ("a reader's token", SENT, {**JSON, **bearer("reader")}, ""),
    ("no token", SENT, JSON, ""),
    ("a query", SENT, ACTOR, "wait_ms=5"),
    ("no content type", SENT, bearer("actor"), ""),
    ("text/plain", SENT, {**bearer("actor"), "Content-Type": "text/plain"}, ""),
    ("a +json type", SENT, {**bearer("actor"), "Content-Type": "application/problem+json"}, ""),
    ("a byte order mark", b"\xef\xbb\xbf" + SENT, ACTOR, ""),
    ("an empty body", b"", ACTOR, ""),
    ("not JSON", b"{", ACTOR, ""),
    ("no action", b'{"args": {}}', ACTOR, ""),
    ("an unknown action", b'{"action": "inbox.fly"}', ACTOR, ""),
    ("a duplicate key", b'{"action": "inbox.send", "action": "inbox.open-drone"}', ACTOR, ""),
    ("a duplicate argument", _fire(b'{"to": "a", "to": "b", "message_id": "m"}'), ACTOR, ""),
    ("NaN", _fire(b'{"message_id": NaN, "to": "ops"}'), ACTOR, ""),
    ("Infinity", _fire(b'{"message_id": "m", "to": [Infinity]}'), ACTOR, ""),
    ("1e400", _fire(b'{"message_id": "m", "to": {"a": 1e400}}'), ACTOR, ""),
    ("a long integer", _fire(b'{"message_id": ' + b"9" * 5000 + b"}"), ACTOR, ""),
    ("half a surrogate pair", _fire(b'{"message_id": "\\ud800", "to": "ops"}'), ACTOR, ""),
    ("a missing argument", _fire(b'{"to": "ops"}'), ACTOR, ""),
    ("a wait too long", _fire(b'{"message_id": "m"}', b', "wait_ms": 99999999'), ACTOR, ""),
    ("a string for a number", _fire(b'{"message_id": "m"}', b', "wait_ms": "5"'), ACTOR, ""),
    ("an unknown field", _fire(b'{"message_id": "m"}', b', "colour": 1'), ACTOR, ""),
    ("a colon in a string", _fire(b'{"message_id": "a:b:c", "to": "x:y"}'), ACTOR, ""),
]


def _routed(app: FastAPI) -> Any:
    """``app`` with every request taken through FastAPI's middleware and router."""

    async def routed(scope: Scope, receive: Receive, send: Send) -> None:
        await FastAPI.__call__(app, scope, receive, send)

    return routed


async def _answer(
    routed: bool, body: bytes, headers: Mapping[str, str], query: str
) -> tuple[int, str | None, Any]:
    async with Host(APPLICATION, Ledger(MemoryBackend())) as host:
        app = create_app(host, tokens=TOKENS)
        transport = httpx.ASGITransport(app=_routed(app) if routed else app)
        async with httpx.AsyncClient(transport=transport, base_url="http://daemon") as client:
            url = "/v1/actions" + (f"?{query}" if query else "")
            response = await client.post(url, content=body, headers=dict(headers))
    content = response.json() if response.content else None
    if isinstance(content, dict):
        content.pop("session", None)  # a default session is named afresh by each host
    return response.status_code, response.headers.get("content-type"), content


@pytest.mark.parametrize(
    ("body", "headers", "query"),
    [request[1:] for request in REQUESTS],
    ids=[request[0] for request in REQUESTS],
)
async def test_the_hot_fire_answers_as_the_route_does(
    body: bytes, headers: Mapping[str, str], query: str
) -> None:
    hot = await _answer(False, body, headers, query)
    routed = await _answer(True, body, headers, query)
    assert hot == routed


async def test_the_hot_fire_fires_a_well_formed_request_itself() -> None:
    status, _, content = await _answer(False, SENT, ACTOR, "")
    assert (status, content["transition_id"], content["effect_status"]) == (
        200,
        "inbox.send#1",
        "pending",
    )
