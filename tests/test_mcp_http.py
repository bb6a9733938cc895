"""The MCP port over streamable HTTP, driven by the SDK's own client.

In process: an ``MCPServer`` served by ``StreamableHttpEndpoint`` on a free loopback port.
As a subprocess: ``assay mcp --transport http`` announcing its endpoint on stderr.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from assay.errors import RequestError
from assay.host import Host
from assay.host.wire import ReportRequest
from assay.ledger import Ledger, MemoryBackend, open_ledger
from assay.mcp import build_server
from assay.mcp.http import StreamableHttpEndpoint
from mcp_apps import ARMED, panel_application

pytestmark = pytest.mark.anyio

ASSAY = str(Path(sys.executable).parent / "assay")


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[Host, str]]:
    async with (
        Host(panel_application(), Ledger(MemoryBackend())) as host,
        StreamableHttpEndpoint(build_server(host)) as served,
    ):
        yield host, served.url


async def test_tools_answer_with_progress_over_streamable_http(
    endpoint: tuple[Host, str],
) -> None:
    host, url = endpoint
    assert url.startswith("http://127.0.0.1:")
    assert url.endswith("/mcp")
    seen: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(message)
        host.report(ReportRequest(values={"system.armed": True}))

    async with Client(url) as client:
        listed = await client.call_tool("list_actions")
        assert listed.structured_content is not None
        assert [a["id"] for a in listed.structured_content["actions"]] == ["panel.arm"]
        fired = await client.call_tool(
            "fire", {"action": "panel.arm", "wait_ms": 30_000}, progress_callback=progress
        )
        assert fired.structured_content is not None
        assert fired.structured_content["answer"] == "worked"
        assert seen == [f"waiting on the verify contract {ARMED} to hold (transition panel.arm#1)"]
        state = await client.call_tool("get_state", {"keys": ["system.armed"]})
        assert state.structured_content is not None
        assert state.structured_content["objects"] == {"system": {"armed": True}}
        unknown = await client.call_tool("fire", {"action": "panel.explode"})
        assert unknown.is_error
    kinds = [(e.kind, e.transition) for e in host.ledger.query()]
    assert kinds == [("fire", "panel.arm#1"), ("settlement", "panel.arm#1")]


HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


async def test_a_body_that_is_not_a_valid_message_is_refused_with_400_naming_why(
    endpoint: tuple[Host, str],
) -> None:
    _, url = endpoint
    async with httpx.AsyncClient(headers=HEADERS, timeout=30) as http:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
        opened = await http.post(url, json=initialize)
        assert opened.status_code == 200
        http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(url, json=initialized)).status_code == 202

        async def refusal(body: str) -> tuple[int, object, dict[str, object]]:
            answer = await http.post(url, content=body)
            assert answer.status_code == 400, answer.text
            assert answer.headers["content-type"] == "application/json"
            found = answer.json()
            return found["error"]["code"], found["id"], found["error"]

        # Read by the SDK as notifications, these were accepted (202) and never answered.
        for sent, shown in (
            ("true", "true"),
            ("1.5", "1.5"),
            ("null", "null"),
            ('{"a":1}', '{"a": 1}'),
        ):
            code, answered_id, error = await refusal(
                f'{{"jsonrpc":"2.0","id":{sent},"method":"ping"}}'
            )
            assert (code, answered_id) == (-32600, None)
            assert error["message"] == (
                f"invalid request: id: a request's id is a string or an integer, not {shown}"
            )
        # The SDK answered these with a dump of pydantic's errors, as "invalid params".
        assert await refusal('{"jsonrpc":"2.0","id":6,"method":7}') == (
            -32600,
            6,
            {"code": -32600, "message": "invalid request: method: Input should be a valid string"},
        )
        neither = await refusal('{"jsonrpc":"2.0","id":5}')
        assert neither[2]["message"] == (
            "invalid request: the message has no method (a request or notification), result or "
            "error (a response to the server)"
        )
        batch = await refusal('[{"jsonrpc":"2.0","id":4,"method":"ping"}]')
        assert batch[2]["message"] == "invalid request: the message: Input should be an object"
        code, _, error = await refusal("nope")
        assert code == -32700
        assert error["message"] == (
            "invalid request: the body is not JSON (Expecting value: line 1 column 1 (char 0))"
        )
        # A valid message whose params are not what tools/call takes: the SDK answered
        # "Invalid request parameters", naming nothing.
        listed = {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "get_state", "arguments": [["system.armed"]]},
        }
        refused = await http.post(url, json=listed)
        assert refused.status_code == 200, refused.text
        (event,) = [line for line in refused.text.splitlines() if line.startswith("data: {")]
        assert json.loads(event.removeprefix("data: ")) == {
            "jsonrpc": "2.0",
            "id": 8,
            "error": {
                "code": -32602,
                "message": "invalid params: params.arguments must be an object (the tool's "
                "arguments by name, as its inputSchema in tools/list gives them), not an "
                'array: [["system.armed"]]',
            },
        }
        # A valid request after all of that is served as before, its body replayed whole.
        pinged = await http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert pinged.status_code == 200
        assert '"id":9,"result":{}' in pinged.text


async def test_a_non_loopback_host_is_refused_before_anything_listens() -> None:
    async with Host(panel_application(), Ledger(MemoryBackend())) as host:
        with pytest.raises(RequestError, match="binds to loopback only") as caught:
            StreamableHttpEndpoint(build_server(host), host="0.0.0.0")
    assert caught.value.field == "host"
    result = subprocess.run(
        [ASSAY, "mcp", "--transport", "http", "--host", "0.0.0.0", "--ledger", "memory:"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(
        "assay mcp: error: --host 0.0.0.0: the MCP port has no authentication, so it binds "
        "to loopback only"
    )


async def test_assay_mcp_over_http_announces_its_endpoint_and_stops_on_interrupt(
    tmp_path: Path,
) -> None:
    ledger_url = f"sqlite:///{tmp_path / 'evidence.db'}"
    command = [ASSAY, "mcp", "--transport", "http", "--port", "0", "--ledger", ledger_url]
    async with await anyio.open_process(command) as process:
        assert process.stderr is not None
        announced = b""
        with anyio.fail_after(60):
            while not announced.endswith(b"\n"):
                announced += await process.stderr.receive(1)
        prefix = "assay mcp: serving outpost at "
        line = announced.decode()
        assert line.startswith(prefix), line
        async with Client(line.removeprefix(prefix).strip()) as client:
            outcome = await client.call_tool("verify", {"expression": "inbox.unread === 3"})
            assert outcome.structured_content is not None
            assert outcome.structured_content["passed"] is True
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(30):
            assert await process.wait() == 130
    with open_ledger(ledger_url) as ledger:
        assert [e.kind for e in ledger.query()] == ["verdict"]
        assert ledger.verify().ok


async def _opened(http: httpx.AsyncClient, url: str) -> None:
    """Initialize an MCP session over ``http``, its id kept in the client's headers."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    opened = await http.post(url, json=initialize)
    assert opened.status_code == 200
    http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized)).status_code == 202


async def test_a_cancelled_request_gets_no_response_and_the_session_stays_usable(
    endpoint: tuple[Host, str],
) -> None:
    # The SDK's transport answered a request cancelled in flight with -32800, which the
    # MCP spec forbids: the server sends no response for it.
    host, url = endpoint
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "verify",
            "arguments": {"expression": "system.armed === 'never'", "timeout_ms": 50_000},
            "_meta": {"progressToken": "p"},
        },
    }
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "the user stopped it"},
    }
    events: list[dict[str, object]] = []
    async with httpx.AsyncClient(headers=HEADERS, timeout=30) as http:
        await _opened(http, url)
        async with http.stream("POST", url, json=call) as stream:
            lines = stream.aiter_lines()
            async for line in lines:  # up to the first progress: the verify is in flight
                if line.startswith("data: {"):
                    events.append(json.loads(line.removeprefix("data: ")))
                    break
            assert (await http.post(url, json=cancel)).status_code == 202
            async for line in lines:  # the stream ends; nothing answers request 2
                if line.startswith("data: {"):
                    events.append(json.loads(line.removeprefix("data: ")))
        pinged = await http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert [event.get("method") for event in events] == ["notifications/progress"]
    assert pinged.status_code == 200
    assert '"id":3,"result":{}' in pinged.text
    assert host.ledger.query() == []  # a cancelled verify records nothing
