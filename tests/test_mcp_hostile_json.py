"""The hostile JSON corpus (``hostile_json``) against the MCP server, over stdio and
streamable HTTP: each body as a whole JSON-RPC message, and as the arguments of a call of
each tool. Each must be answered with an error that says what was wrong (a JSON-RPC error, or
a tool error), and the server must answer the next request.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from assay.examples.outpost import APPLICATION
from assay.host import Host
from assay.ledger import Ledger, MemoryBackend
from assay.mcp import build_server
from assay.mcp.http import StreamableHttpEndpoint
from hostile_json import CORPUS

pytestmark = pytest.mark.anyio

ASSAY = str(Path(sys.executable).parent / "assay")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
REFUSED = {-32700, -32600, -32602}
"""How JSON-RPC refuses a message: not JSON, not a request, params its method does not take."""

Exchange = Callable[[bytes, int, int], Awaitable[list[dict[str, Any]]]]
"""Send a message (of the given id, or -1 for none), then a ping of the given id; the
messages answered up to the ping's and the message's own, the ping's last."""


PLACED: dict[str, tuple[bytes, bytes]] = {
    "list_actions": (b"", b""),
    "fire": (b'{"action": "inbox.send", "args": ', b"}"),
    "did_it_work": (b'{"transition_id": ', b"}"),
    "get_state": (b'{"keys": ', b"}"),
    "verify": (b'{"expression": ', b', "timeout_ms": 0}'),
}
"""Where a hostile body goes in each tool's arguments: under the argument it would reach
(``list_actions`` takes none, so its arguments are the body itself)."""


VALID: frozenset[tuple[str, str]] = frozenset({("not an object", "verify")})
"""Bodies that are valid where they go: the expression ``[1, 2, 3]`` (an array literal) is
evaluated, as ``verify`` takes an expression that arrives as an array."""


def _messages() -> dict[tuple[str, str], tuple[bytes, int]]:
    """Each body of the corpus whole, and in each tool's arguments, with the id it carries
    (the body's own have none)."""
    sent: dict[tuple[str, str], tuple[bytes, int]] = {}
    for name, body in CORPUS.items():
        sent[name, "message"] = body, -1
        for tool, (before, after) in PLACED.items():
            request_id = len(sent) + 1
            head = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", ' % request_id
            params = b'"params": {"name": "%s", "arguments": ' % tool.encode()
            sent[name, tool] = head + params + before + body + after + b"}}", request_id
    return sent


def _refusal(answers: list[dict[str, Any]], request_id: int) -> str:
    """The text of the one refusal among ``answers`` (before the ping's answer): a JSON-RPC
    error under the request's id or a null id, or the request's tool error."""
    (answer,) = [a for a in answers[:-1] if a.get("id") in (request_id, None)]
    if "error" in answer:
        assert answer["error"]["code"] in REFUSED, answer
        return str(answer["error"]["message"])
    assert answer["result"]["isError"] is True, answer
    return str(answer["result"]["content"][0]["text"])


async def _exercise(exchange: Exchange) -> dict[tuple[str, str], str]:
    """Each message through ``exchange``: its refusal's text, the ping after it answered."""
    refusals: dict[tuple[str, str], str] = {}
    for ping, (key, (message, request_id)) in enumerate(_messages().items(), start=10_000):
        answers = await exchange(message, request_id, ping)
        assert answers[-1] == {"jsonrpc": "2.0", "id": ping, "result": {}}, (key, answers)
        if key in VALID:
            (answer,) = [a for a in answers if a.get("id") == request_id]
            assert answer["result"]["structuredContent"]["passed"] is True, key
            continue
        try:
            refusals[key] = _refusal(answers, request_id)
        except (ValueError, AssertionError) as error:
            raise AssertionError(f"{key}: {answers}") from error
        assert refusals[key], key
        assert "Traceback" not in refusals[key] and "Internal" not in refusals[key], key
    return refusals


def _ping(request_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode()


async def test_every_hostile_body_is_refused_over_stdio_and_the_server_lives() -> None:
    command = [ASSAY, "mcp", "--ledger", "memory:"]
    async with await anyio.open_process(command) as process:
        assert process.stdin is not None and process.stdout is not None
        pending = bytearray()

        async def line() -> dict[str, Any]:
            assert process.stdout is not None
            while b"\n" not in pending:
                pending.extend(await process.stdout.receive())
            end = pending.index(b"\n")
            text = bytes(pending[:end])
            del pending[: end + 1]
            answer: dict[str, Any] = json.loads(text)
            return answer

        async def exchange(message: bytes, request_id: int, ping: int) -> list[dict[str, Any]]:
            assert process.stdin is not None
            await process.stdin.send(message + b"\n" + _ping(ping) + b"\n")
            answers: list[dict[str, Any]] = []
            while not {ping} <= {a.get("id") for a in answers} or not {request_id, None} & {
                a.get("id") for a in answers
            }:
                answers.append(await line())
            ponged = [a for a in answers if a.get("id") == ping]
            return [a for a in answers if a.get("id") != ping] + ponged

        with anyio.fail_after(300):
            await process.stdin.send(json.dumps(INITIALIZE).encode() + b"\n")
            assert (await line())["id"] == 0
            await process.stdin.send(json.dumps(INITIALIZED).encode() + b"\n")
            refusals = await _exercise(exchange)
        await process.stdin.aclose()
        with anyio.fail_after(60):
            assert await process.wait() == 0
    _check(refusals, "stdio")


async def test_every_hostile_body_is_refused_over_streamable_http_and_the_server_lives() -> None:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
    }
    async with (
        Host(APPLICATION, Ledger(MemoryBackend())) as host,
        StreamableHttpEndpoint(build_server(host)) as served,
        httpx.AsyncClient(headers=headers, timeout=60) as http,
    ):
        opened = await http.post(served.url, json=INITIALIZE)
        http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        assert (await http.post(served.url, json=INITIALIZED)).status_code == 202

        async def post(body: bytes) -> list[dict[str, Any]]:
            answer = await http.post(served.url, content=body)
            if answer.headers["content-type"].startswith("application/json"):
                assert answer.status_code == 400, answer.text
                return [answer.json()]
            assert answer.status_code == 200, answer.text
            return [
                json.loads(line.removeprefix("data: "))
                for line in answer.text.splitlines()
                if line.startswith("data: {")
            ]

        async def exchange(message: bytes, request_id: int, ping: int) -> list[dict[str, Any]]:
            return [*await post(message), *await post(_ping(ping))]

        refusals = await _exercise(exchange)
    _check(refusals, "streamable HTTP")


def _check(refusals: dict[tuple[str, str], str], transport: str) -> None:
    assert len(refusals) == len(CORPUS) * (1 + len(PLACED)) - len(VALID) == 77
    assert refusals["integer of 5,000 digits in args", "fire"].startswith(
        "invalid params: params.arguments.args.args.n: an integer of 5,000 digits"
    )
    assert refusals["a key given twice", "fire"] == (
        "invalid request: the key 'a' is given twice in one object; give each key once (JSON "
        "readers differ on which of the two counts)"
    )
    assert refusals["NaN", "verify"] == (
        "invalid request: NaN is not a JSON number; send a finite number, or null for none"
    )
    assert refusals["a float beyond a double", "fire"] == (
        "invalid request: 1e400 is beyond the range of a double (±1.8e308); send a finite "
        "number, or null for none"
    )
    assert refusals["bytes that are not UTF-8", "message"].startswith(
        f"invalid request: the {'line' if transport == 'stdio' else 'body'} is not UTF-8 text"
    )
    print(f"MCP over {transport}: {len(refusals)} hostile messages refused, the server alive")
    for key, text in refusals.items():
        print(f"  {key}: {text[:120]}")
