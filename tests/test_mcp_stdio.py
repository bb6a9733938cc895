"""``assay mcp`` as a real subprocess, over stdio, driven by the SDK's own stdio client.

The subprocess hosts the built-in outpost (its effects land after real delays) and writes to
a SQLite ledger in a temporary folder, read back once the server has exited. Then the stdio
transport itself, fed raw JSON-RPC lines through pipes and from a file.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.server import MCPServer

from assay.ledger import open_ledger
from mcp_agent import check_outpost_journey, outpost_journey

pytestmark = pytest.mark.anyio

ASSAY = str(Path(sys.executable).parent / "assay")


def _server(ledger: Path) -> StdioServerParameters:
    return StdioServerParameters(command=ASSAY, args=["mcp", "--ledger", f"sqlite:///{ledger}"])


async def test_a_scripted_agent_completes_the_outpost_journey_over_stdio(tmp_path: Path) -> None:
    ledger_path = tmp_path / "evidence.db"
    async with Client(_server(ledger_path)) as client:
        steps = await outpost_journey(client)
    check_outpost_journey(steps)
    with open_ledger(f"sqlite:///{ledger_path}") as ledger:
        assert ledger.verify().ok
        settled = [e.transition for e in ledger.query(kind="settlement")]
    assert settled == [step.answer["transition_id"] for step in steps]


async def test_a_cancelled_fire_still_settles_in_the_ledger_over_stdio(tmp_path: Path) -> None:
    ledger_path = tmp_path / "evidence.db"
    async with Client(_server(ledger_path)) as client:
        waiting = anyio.Event()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            waiting.set()

        async def fire() -> None:
            # The message lands, but this extra contract never holds: the fire fails once
            # the action's 3 s verify timeout passes, long after the request is cancelled.
            arguments = {
                "action": "inbox.send",
                "args": {"message_id": "m-1", "to": "ops"},
                "verify_expression": "false",
                "wait_ms": 55_000,
            }
            await client.call_tool("fire", arguments, progress_callback=progress)

        async with anyio.create_task_group() as group:
            group.start_soon(fire)
            await waiting.wait()
            group.cancel_scope.cancel()
        settled = await client.call_tool(
            "did_it_work", {"transition_id": "inbox.send#1", "wait_ms": 20_000}
        )
        assert settled.structured_content is not None
        assert settled.structured_content["answer"] == "failed"
        assert settled.structured_content["why"].endswith(
            "but the expression still evaluated to false."
        )
    with open_ledger(f"sqlite:///{ledger_path}") as ledger:
        assert [(e.kind, e.transition) for e in ledger.query()] == [
            ("fire", "inbox.send#1"),
            ("settlement", "inbox.send#1"),
        ]


def _initialize(request_id: int) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "pipeline", "version": "1"},
        },
    }


def _lines(*messages: object) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


@pytest.mark.parametrize("stdin_is", ["a pipe", "a file"])
def test_requests_piped_in_are_all_answered_and_a_line_that_is_not_json_too(
    stdin_is: str, tmp_path: Path
) -> None:
    # A pipe is read on the event loop, a file in a worker thread: the same answers. The
    # first verify request is one line of 300 KB, read in several chunks; the second is
    # answered only when its 300 ms run out, long after stdin has ended (the SDK's server
    # would cancel it then, unanswered); the last request has no newline.
    long_expression = "inbox.unread === " + "1" * 300_000
    requests = (
        _lines(
            _initialize(1),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
        )
        + b"\n{not json\n"
        + _lines(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "verify", "arguments": {"expression": long_expression}},
            },
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {
                    "name": "verify",
                    "arguments": {"expression": "inbox.unread === 99", "timeout_ms": 300},
                },
            },
        )
        + json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).encode()
    )
    command = [ASSAY, "mcp", "--ledger", "memory:"]
    if stdin_is == "a pipe":
        done = subprocess.run(command, input=requests, capture_output=True, timeout=60, check=False)
    else:
        (tmp_path / "requests.jsonl").write_bytes(requests)
        with (tmp_path / "requests.jsonl").open("rb") as stdin:
            done = subprocess.run(
                command, stdin=stdin, capture_output=True, timeout=60, check=False
            )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    unread = [line for line in lines if line["id"] is None]
    assert unread == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32700,
                "message": "invalid request: the line is not JSON (Expecting property name "
                "enclosed in double quotes: line 1 column 2 (char 1))",
            },
        }
    ]
    answers = {message["id"]: message for message in lines if message["id"] is not None}
    assert sorted(answers) == [1, 2, 3, 4]
    assert answers[4]["result"]["structuredContent"]["passed"] is False
    verdict = answers[2]["result"]
    assert verdict["isError"] is True
    assert "the limit is 10000" in verdict["content"][0]["text"]
    tools = {tool["name"] for tool in answers[3]["result"]["tools"]}
    assert tools == {"list_actions", "fire", "did_it_work", "get_state", "verify"}


def test_a_request_that_is_not_a_valid_message_is_answered_with_an_error_naming_why() -> None:
    requests = (
        _lines(_initialize(1), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        # json.dumps writes the lone surrogate as the escape \ud800, as JSON.stringify does
        + _lines(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "verify", "arguments": {"expression": "a == '\ud800'"}},
            },
            {"jsonrpc": "2.0", "id": "three", "method": 3},
            {"id": 4, "method": "tools/list"},
            {"jsonrpc": "2.0", "method": 5},  # a notification, but not a valid one
            {"jsonrpc": "2.0", "id": True, "method": "tools/list"},
            [{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}],  # a batch: MCP has none
            {"jsonrpc": "2.0", "id": "\udc80", "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 7},  # neither a request nor a response
            {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
        )
    )
    done = subprocess.run(
        [ASSAY, "mcp", "--ledger", "memory:"],
        input=requests,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    # Those whose id cannot be answered are answered under a null id (JSON-RPC 2.0), in order.
    assert [line["error"] for line in lines if line["id"] is None] == [
        {"code": -32600, "message": "invalid request: method: Input should be a valid string"},
        {
            "code": -32600,
            "message": "invalid request: id: a request's id is a string or an integer, not true",
        },
        {"code": -32600, "message": "invalid request: the message: Input should be an object"},
        {
            "code": -32700,
            "message": "invalid request: a string holds half of a surrogate pair, such as "
            "\\ud800 alone, which is not Unicode text; send each character whole or as a full "
            "surrogate pair",
        },
        {
            "code": -32600,
            "message": "invalid request: the message has no method (a request or notification), "
            "result or error (a response to the server)",
        },
    ]
    answers = {message["id"]: message for message in lines if message["id"] is not None}
    assert sorted(answers, key=str) == [1, 2, 4, 6, "three"]
    assert answers[2]["error"] == {
        "code": -32700,
        "message": "invalid request: a string holds half of a surrogate pair, such as \\ud800 "
        "alone, which is not Unicode text; send each character whole or as a full surrogate pair",
    }
    assert answers["three"]["error"] == {
        "code": -32600,
        "message": "invalid request: method: Input should be a valid string",
    }
    assert answers[4]["error"] == {
        "code": -32600,
        "message": "invalid request: jsonrpc: Field required",
    }
    assert len(answers[6]["result"]["tools"]) == 5


ARGUMENTS_MUST_BE_AN_OBJECT = (
    "invalid params: params.arguments must be an object (the tool's arguments by name, as its "
    "inputSchema in tools/list gives them), not "
)


def test_params_that_are_not_what_the_method_takes_are_refused_naming_the_field() -> None:
    # The SDK answered each of these "Invalid request parameters", naming nothing.
    def call(request_id: int, params: object) -> dict[str, object]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    requests = _lines(
        _initialize(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call(2, {"name": "verify", "arguments": ["inbox.unread === 3"]}),
        call(3, {"name": "verify", "arguments": "inbox.unread === 3"}),
        call(4, {"name": "verify", "arguments": 7}),
        call(5, {"name": "verify", "arguments": list(range(100))}),
        call(6, {"arguments": {"expression": "inbox.unread === 3"}}),
        call(7, {"name": ["verify"], "arguments": {}}),
        call(8, {"name": "verify", "arguments": {}, "_meta": {"progressToken": 1.5}}),
        {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"cursor": {}}},
        call(10, {"name": "verify", "arguments": {"expression": "inbox.unread === 3"}}),
    )
    done = subprocess.run(
        [ASSAY, "mcp", "--ledger", "memory:"],
        input=requests,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = {line["id"]: line for line in map(json.loads, done.stdout.splitlines())}
    errors = {key: answers[key]["error"] for key in range(2, 10)}
    assert {error["code"] for error in errors.values()} == {-32602}
    assert {key: error["message"] for key, error in errors.items()} == {
        2: ARGUMENTS_MUST_BE_AN_OBJECT + 'an array: ["inbox.unread === 3"]',
        3: ARGUMENTS_MUST_BE_AN_OBJECT + 'a string: "inbox.unread === 3"',
        4: ARGUMENTS_MUST_BE_AN_OBJECT + "a number: 7",
        5: ARGUMENTS_MUST_BE_AN_OBJECT + "an array: [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,…",
        6: "invalid params: params.name is missing; tools/call requires it",
        7: 'invalid params: params.name must be a string, not an array: ["verify"]',
        8: "invalid params: params._meta.progressToken must be a string or an integer, not a "
        "number: 1.5",
        9: "invalid params: params.cursor must be a string, not an object: {}",
    }
    assert answers[10]["result"]["structuredContent"]["passed"] is True


STRAY_PRINTER = """
import asyncio
from mcp.server import MCPServer
from assay.mcp.stdio import serve_stdio

server = MCPServer("printer")

@server.tool()
def shout(text: str) -> str:
    print("stray output from a tool", flush=True)
    return text.upper()

asyncio.run(serve_stdio(server))
"""


def test_stray_output_from_a_tool_goes_to_stderr_not_the_wire() -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "shout", "arguments": {"text": "hi"}},
    }
    done = subprocess.run(
        [sys.executable, "-c", STRAY_PRINTER],
        check=False,
        input=_lines(
            _initialize(1), {"jsonrpc": "2.0", "method": "notifications/initialized"}, call
        ),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [1, 2]
    assert answers[1]["result"]["content"][0]["text"] == "HI"
    assert b"stray output from a tool" in done.stderr


CHECK_PIPES = "from assay.mcp.stdio import stdio_served_here; print(stdio_served_here())"


def test_the_event_loop_transport_serves_pipes_sockets_and_files(tmp_path: Path) -> None:
    def served(**streams: Any) -> str:
        command = [sys.executable, "-c", CHECK_PIPES]
        done = subprocess.run(command, stdout=subprocess.PIPE, timeout=60, check=False, **streams)
        return done.stdout.decode().strip()

    assert served(stdin=subprocess.PIPE, stderr=subprocess.PIPE) == "True"
    (tmp_path / "in").write_text("")
    with (tmp_path / "in").open() as regular_file:
        assert served(stdin=regular_file, stderr=subprocess.PIPE) == "True"
    with open(os.devnull) as device:  # a device (like a terminal): the SDK's transport
        assert served(stdin=device, stderr=subprocess.PIPE) == "False"
    # stdout and stderr on one pipe: the diverted stray output would reach the wire.
    assert served(stdin=subprocess.PIPE, stderr=subprocess.STDOUT) == "False"
    # The SDK offers no public way to run an MCPServer over given streams; the pinned
    # version's low-level server does, and an upgrade that drops it must fail here.
    lowlevel = getattr(MCPServer("probe"), "_lowlevel_server", None)
    assert callable(getattr(lowlevel, "run", None))
    assert callable(getattr(lowlevel, "create_initialization_options", None))


def _signalled_after_one_call(
    ledger_path: Path, call: dict[str, object], signal_number: int
) -> tuple[dict[str, Any], int]:
    """Start ``assay mcp`` on the ledger, make one tool call, then send it ``signal_number``:
    the call's answer and the server's exit code."""
    with subprocess.Popen(
        [ASSAY, "mcp", "--ledger", f"sqlite:///{ledger_path}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        try:
            server.stdin.write(_lines(_initialize(1)))
            server.stdin.flush()
            assert json.loads(server.stdout.readline())["id"] == 1
            server.stdin.write(_lines({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            server.stdin.write(_lines({"jsonrpc": "2.0", "id": 2, "method": "tools/call", **call}))
            server.stdin.flush()
            answer: dict[str, Any] = json.loads(server.stdout.readline())
            server.send_signal(signal_number)
            return answer, server.wait(timeout=30)
        finally:
            server.kill()


def test_an_interrupted_stdio_server_exits_130_with_its_evidence_stored(tmp_path: Path) -> None:
    ledger_path = tmp_path / "evidence.db"
    verify = {"params": {"name": "verify", "arguments": {"expression": "inbox.unread === 3"}}}
    answer, code = _signalled_after_one_call(ledger_path, verify, signal.SIGINT)
    assert answer["result"]["structuredContent"]["passed"] is True
    assert code == 130
    with open_ledger(f"sqlite:///{ledger_path}") as ledger:
        assert ledger.verify().ok
        assert [entry.kind for entry in ledger.query()] == ["verdict"]


def test_a_terminated_stdio_server_settles_its_pending_fire_and_exits_143(tmp_path: Path) -> None:
    ledger_path = tmp_path / "evidence.db"
    fire = {
        "params": {
            "name": "fire",
            # Its extra contract never holds, so it is still pending when the server stops.
            "arguments": {
                "action": "inbox.send",
                "args": {"message_id": "m-1", "to": "ops"},
                "verify_expression": "false",
                "wait_ms": 0,
            },
        },
    }
    answer, code = _signalled_after_one_call(ledger_path, fire, signal.SIGTERM)
    assert answer["result"]["structuredContent"]["effect_status"] == "pending"
    assert code == 143
    with open_ledger(f"sqlite:///{ledger_path}") as ledger:
        assert ledger.verify().ok
        entries = ledger.query()
    # A process ended by the signal left the fire alone, never to settle.
    assert [(e.kind, e.transition) for e in entries] == [
        ("fire", "inbox.send#1"),
        ("settlement", "inbox.send#1"),
    ]
    assert "the session was closed while it waited on" in json.dumps(entries[1].body)


def _file_size_limit(size: int) -> None:
    """In the child: writes that would grow a file past ``size`` bytes fail with EFBIG (as on
    a full disk) instead of killing the process with SIGXFSZ."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


def test_answers_that_cannot_be_written_are_incomplete_output_with_exit_2(tmp_path: Path) -> None:
    # Standard output is a file that cannot grow past 100 bytes: the first answer does not
    # fit. That is the output's failure, said as the CLI says it, not a bug in assay (70).
    answers = tmp_path / "answers.jsonl"
    with answers.open("wb") as stdout:
        done = subprocess.run(
            [ASSAY, "mcp", "--ledger", "memory:"],
            input=_lines(_initialize(1)),
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
            preexec_fn=lambda: _file_size_limit(100),
        )
    assert (done.returncode, done.stderr.decode()) == (
        2,
        f"assay mcp: error: cannot write to standard output ({answers}): File too large; "
        "the output is incomplete\n",
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs the /dev/full device")
def test_answers_to_a_device_that_is_full_are_incomplete_output_with_exit_2() -> None:
    # A device is served by the SDK's own transport, whose failed write was exit 70.
    with Path("/dev/full").open("wb") as full:
        done = subprocess.run(
            [ASSAY, "mcp", "--ledger", "memory:"],
            input=_lines(_initialize(1)),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert (done.returncode, done.stderr.decode()) == (
        2,
        "assay mcp: error: cannot write to standard output (/dev/full): No space left on "
        "device; the output is incomplete\n",
    )


def _panel(requests: bytes) -> dict[object, dict[str, Any]]:
    """``assay mcp`` on the panel (``user.token`` redacted) answering ``requests``, by id."""
    tests = str(Path(__file__).parent)
    done = subprocess.run(
        [ASSAY, "mcp", "--app", "mcp_apps:panel_application", "--ledger", "memory:"],
        input=requests,
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": tests},
    )
    assert done.returncode == 0, done.stderr
    return {line["id"]: line for line in map(json.loads, done.stdout.splitlines())}


def test_a_refused_value_under_a_redacted_key_is_named_never_quoted_over_stdio() -> None:
    def verify(request_id: int, contract: str) -> bytes:
        # Written by hand: 1e400 and a 5,000-digit integer have no Python value to dump.
        arguments = '{"expression": ' + contract + ', "timeout_ms": 0}'
        call = '"method": "tools/call", "params": {"name": "verify", "arguments": ' + arguments
        return f'{{"jsonrpc": "2.0", "id": {request_id}, {call}}}}}\n'.encode()

    answers = _panel(
        _lines(_initialize(1), {"jsonrpc": "2.0", "method": "notifications/initialized"})
        + verify(2, '{"user.token": {"matches": "(s3cret"}}')
        + verify(3, '{"user.token": {"eq": ' + "7" * 5000 + "}}")
        + verify(4, '{"system.armed": {"eq": false}}')
    )
    refused = answers[2]["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        "expression is not a valid filter contract: contract key 'user.token' (matches): the "
        "value sent is refused and not shown, as user.token is a redacted key; send an "
        "operand this operator takes"
    )
    assert "s3cret" not in json.dumps(answers[2])
    assert answers[3]["error"] == {
        "code": -32602,
        "message": 'invalid params: params.arguments.expression["user.token"].eq: an integer '
        "of 5,000 digits, more than the 4,300 a number may have; send it as a string if it is "
        "an identifier",
    }
    assert answers[4]["result"]["structuredContent"]["passed"] is True


FIVE_MIB = "x" * (5 << 20)
ANSWER_LIMIT = 64 << 10
"""What the TypeScript SDK's stdio reader takes in one line, and more than any answer holds."""


def test_a_5_mib_argument_to_each_tool_is_refused_in_under_64_kib_naming_the_field() -> None:
    # A refusal quoted the whole value three times (its text, the refused fire's error and
    # why): 15.7 MB, which broke the TypeScript SDK's stdio reader and its session.
    calls: dict[int, tuple[str, dict[str, object], str]] = {
        2: ("list_actions", {"note": FIVE_MIB}, "no argument is called 'note'"),
        3: ("list_actions", {FIVE_MIB: 1}, "no argument is called 'xxx"),
        4: ("fire", {"action": FIVE_MIB}, "action: String should have at most 200"),
        5: (
            "fire",
            {"action": "inbox.send", "args": {"message_id": FIVE_MIB, "to": "ops"}},
            "inbox.send: args['message_id']: 'xxx",
        ),
        6: ("fire", {"action": "inbox.send", "verify_expression": FIVE_MIB}, "verify_expression:"),
        7: ("did_it_work", {"transition_id": FIVE_MIB}, "has no transition 'xxx"),
        8: ("did_it_work", {"transition_id": "a#1", "session": FIVE_MIB}, "session: String"),
        9: ("get_state", {"keys": FIVE_MIB}, "keys: Input should be a valid list"),
        10: ("verify", {"expression": FIVE_MIB}, "the expression is 5242880 characters long"),
        11: ("verify", {"expression": {FIVE_MIB: {"eq": 1}}}, "expression: the filter contract"),
    }
    requests = _lines(
        _initialize(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(
            {
                "jsonrpc": "2.0",
                "id": key,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
            for key, (tool, arguments, _) in calls.items()
        ),
        {"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "list_actions"}},
    )
    done = subprocess.run(
        [ASSAY, "mcp", "--ledger", "memory:"],
        input=requests,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    sizes = {json.loads(line)["id"]: len(line) for line in lines}
    assert max(sizes.values()) < ANSWER_LIMIT, sizes
    answers = {line["id"]: line["result"] for line in map(json.loads, lines)}
    for key, (tool, _, names) in calls.items():
        assert answers[key]["isError"] is True, (key, tool)
        assert names in answers[key]["content"][0]["text"], (key, tool)
    fire = answers[5]
    assert fire["content"][0]["text"].startswith("inbox.send: args['message_id']: 'xxx")
    assert "characters left out]…" in fire["content"][0]["text"]
    assert fire["structuredContent"]["refusal"] == "bad_arguments"
    assert len(fire["structuredContent"]["error"]) < 1100
    assert answers[12]["structuredContent"]["actions"]  # the session is alive


def test_verify_with_a_null_expression_is_refused_naming_the_field() -> None:
    # The schema takes a string or an object; a null was evaluated as the expression null.
    call = {"name": "verify", "arguments": {"expression": None}}
    requests = _lines(
        _initialize(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
    )
    done = subprocess.run(
        [ASSAY, "mcp", "--ledger", "memory:"],
        input=requests,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = {line["id"]: line for line in map(json.loads, done.stdout.splitlines())}
    refused = answers[2]["result"]
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        "verify: the arguments do not match its input schema (see tools/list): expression: "
        "must be string or object, not null"
    )
