"""The MCP port in process, driven by the SDK's own client (its in-memory pairing).

The panel (``mcp_apps``) settles only when the test reports its state; the outpost journey
runs the real example application on a loopback port (its effects land after real delays).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client

from assay.cli import already_true
from assay.errors import WrongTypeError
from assay.examples.outpost import APPLICATION as OUTPOST
from assay.host import Host
from assay.host.wire import MAX_WAIT_MS, ActionResponse, ReportRequest, TransitionAnswer
from assay.ledger import Ledger, MemoryBackend
from assay.mcp import DEFAULT_WAIT_MS, AssayTools, build_server
from mcp_agent import ScriptedAgent, check_outpost_journey, outpost_journey
from mcp_apps import ARMED, panel_application

pytestmark = pytest.mark.anyio


@pytest.fixture
async def panel() -> AsyncIterator[tuple[Host, Client]]:
    async with (
        Host(panel_application(), Ledger(MemoryBackend())) as host,
        Client(build_server(host)) as c,
    ):
        yield host, c


def _text(result: Any) -> str:
    assert result.is_error, result.structured_content
    (block,) = result.content
    return str(block.text)


async def test_tools_have_output_schemas_from_the_wire_types_and_annotations() -> None:
    async with Host(OUTPOST, Ledger(MemoryBackend())) as host, Client(build_server(host)) as c:
        tools = {tool.name: tool for tool in (await c.list_tools()).tools}
    assert list(tools) == ["list_actions", "fire", "did_it_work", "get_state", "verify"]
    fire = tools["fire"]
    assert fire.output_schema is not None
    assert set(fire.output_schema["properties"]) == set(ActionResponse.model_fields)
    did_it_work = tools["did_it_work"].output_schema
    assert did_it_work is not None
    assert set(did_it_work["properties"]) == set(TransitionAnswer.model_fields)
    wait = fire.input_schema["properties"]["wait_ms"]
    assert (wait["default"], wait["maximum"]) == (DEFAULT_WAIT_MS, MAX_WAIT_MS)
    assert fire.input_schema["required"] == ["action"]
    assert fire.annotations is not None
    assert (fire.annotations.read_only_hint, fire.annotations.destructive_hint) == (False, True)
    assert fire.description is not None
    assert fire.description.endswith(
        "Irreversible (cannot be undone; check get_state and the action's verify contract "
        "before firing): drone.release-payload."
    )
    for name in ("list_actions", "did_it_work", "get_state", "verify"):
        hints = tools[name].annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint) == (True, False), name


async def test_fire_is_not_destructive_when_no_action_is_irreversible(
    panel: tuple[Host, Client],
) -> None:
    _, client = panel
    (fire,) = [tool for tool in (await client.list_tools()).tools if tool.name == "fire"]
    assert fire.annotations is not None
    assert fire.annotations.destructive_hint is False
    assert fire.description is not None
    assert "Irreversible" not in fire.description


async def test_bad_arguments_are_tool_errors_that_say_what_to_fix(
    panel: tuple[Host, Client],
) -> None:
    host, client = panel
    unknown = await client.call_tool("fire", {"action": "panel.disarm"})
    assert _text(unknown) == (
        "no action is called 'panel.disarm'; available here: panel.arm "
        "(list_actions shows each one's arguments)"
    )
    bad = await client.call_tool("fire", {"action": "panel.arm", "args": {"zone": 0}})
    assert _text(bad) == (
        "panel.arm: args['zone']: 0 is less than the minimum of 1; the arguments must match "
        'this schema: {"type":"object","properties":{"zone":{"type":"integer","minimum":1}},'
        '"additionalProperties":false}'
    )
    assert bad.structured_content is not None
    assert bad.structured_content["refusal"] == "bad_arguments"
    syntax = await client.call_tool("verify", {"expression": "system.(", "timeout_ms": 0})
    assert _text(syntax) == (
        "expression has a syntax error: expected a property name after '.', found '(' at "
        "position 7\nsystem.(\n       ^"
    )
    extra = await client.call_tool(
        "fire", {"action": "panel.arm", "verify_expression": "system.armed &&"}
    )
    assert _text(extra).startswith("verify_expression has a syntax error: ")
    assert _text(extra).endswith("at position 15\nsystem.armed &&\n               ^")
    contract = await client.call_tool("verify", {"expression": {"system.armed": {"equals": 1}}})
    assert _text(contract).startswith("expression is not a valid filter contract: ")
    missing = await client.call_tool("did_it_work", {"transition_id": "panel.arm#7"})
    assert re.fullmatch(
        r"session 'panel-[0-9a-f]{12}' has no transition 'panel\.arm#7'; transition ids look "
        r"like page\.action#N and belong to the session that fired them",
        _text(missing),
    )
    # The SDK's own wording was a dump of pydantic's report: codes, the input, web addresses.
    too_long = await client.call_tool("fire", {"action": "panel.arm", "wait_ms": 60_000})
    assert _text(too_long) == (
        "fire: the arguments do not match its input schema (see tools/list): wait_ms: Input "
        "should be less than or equal to 55000"
    )
    # A boolean is not a number of milliseconds (it waited 1 ms), as over HTTP.
    for tool, arguments in (
        ("fire", {"action": "panel.arm", "wait_ms": True}),
        ("did_it_work", {"transition_id": "panel.arm#1", "wait_ms": True}),
        ("verify", {"expression": "true", "timeout_ms": True}),
        ("verify", {"expression": "true", "settle_ms": False}),
    ):
        refused = await client.call_tool(tool, arguments)
        assert refused.is_error is True
        name = next(key for key in arguments if key.endswith("_ms"))
        assert _text(refused) == (
            f"{tool}: the arguments do not match its input schema (see tools/list): {name}: "
            "Input should be a valid integer"
        )
    wrong = await client.call_tool("get_state", {"keys": "system.armed"})
    assert _text(wrong) == (
        "get_state: the arguments do not match its input schema (see tools/list): keys: Input "
        "should be a valid list"
    )
    # The SDK ignored an argument its tool does not take: this fire would not have waited.
    misspelt = await client.call_tool("fire", {"action": "panel.arm", "wait": 30_000})
    assert _text(misspelt) == (
        "fire: no argument is called 'wait'; it takes action, args, wait_ms, verify_expression, "
        "idempotency_key"
    )
    listed = await client.call_tool("list_actions", {"page": "panel"})
    assert _text(listed) == "list_actions: no argument is called 'page'; it takes none"
    # What a refusal says a tool takes is what tools/list shows the client it takes.
    for tool in (await client.list_tools()).tools:
        refused = await client.call_tool(tool.name, {"zzz": 1})
        taken = ", ".join(tool.input_schema.get("properties", {})) or "none"
        assert _text(refused) == f"{tool.name}: no argument is called 'zzz'; it takes {taken}"
    assert [entry.kind for entry in host.ledger.query()] == ["refusal"]


async def test_get_state_selects_keys_and_withholds_redacted_ones(
    panel: tuple[Host, Client],
) -> None:
    _, client = panel
    chosen = await client.call_tool("get_state", {"keys": ["user.name", "system.missing"]})
    assert chosen.structured_content is not None
    assert chosen.structured_content["objects"] == {"user": {"name": "ada"}}
    whole = await client.call_tool("get_state")
    assert "s3cret" not in json.dumps(whole.structured_content)
    assert "s3cret" not in json.dumps([block.model_dump() for block in whole.content])
    bad = await client.call_tool("get_state", {"keys": ["user..name"]})
    assert _text(bad).startswith("keys: 'user..name' is not a state path: ")


async def test_verify_checks_expressions_and_filter_contracts_and_records_verdicts(
    panel: tuple[Host, Client],
) -> None:
    host, client = panel
    held = await client.call_tool("verify", {"expression": "user.name === 'ada'"})
    assert held.structured_content is not None
    assert (held.structured_content["passed"], held.structured_content["result"]) == (True, True)
    failed = await client.call_tool(
        "verify", {"expression": {"system.armed": {"eq": True}}, "timeout_ms": 0}
    )
    assert failed.is_error is False
    assert failed.structured_content is not None
    assert failed.structured_content["passed"] is False
    assert failed.structured_content["narrative"].startswith("system.armed remained false")
    assert [entry.kind for entry in host.ledger.query()] == ["verdict", "verdict"]


async def test_expressions_that_read_as_json_arrive_as_sent(panel: tuple[Host, Client]) -> None:
    # The SDK parses a string argument as JSON before validating it; an array literal or
    # null must still be evaluated as the expression the agent wrote, with JS semantics.
    host, client = panel
    answers = {}
    for expression in ("null", "[]", "[1, 2]"):
        result = await client.call_tool("verify", {"expression": expression, "timeout_ms": 0})
        assert result.is_error is False, result.content
        assert result.structured_content is not None
        answers[result.structured_content["expression"]] = result.structured_content["result"]
    assert answers == {"null": False, "[]": True, "[1, 2]": True}  # an array is truthy
    fired = await client.call_tool(
        "fire", {"action": "panel.arm", "wait_ms": 0, "verify_expression": "[0]"}
    )
    assert fired.is_error is False, fired.content
    (fire,) = host.ledger.query(kind="fire")
    assert fire.body["contract"] == (
        '{"system.armed":{"eq":true}} (declared) and [0] (given with the fire)'
    )
    # An optional expression sent as null (or "null", which the SDK reads as JSON) is none
    # at all, as docs/mcp.md says; it crashed the tool ("Error executing tool fire").
    for absent in (None, "null"):
        fired = await client.call_tool(
            "fire", {"action": "panel.arm", "wait_ms": 0, "verify_expression": absent}
        )
        assert fired.is_error is False, fired.content
    contracts = [entry.body["contract"] for entry in host.ledger.query(kind="fire")]
    assert contracts[1:] == ['{"system.armed":{"eq":true}}'] * 2


@pytest.mark.parametrize(
    ("tool", "arguments", "waiting_on"),
    [
        ("fire", {"action": "panel.arm"}, f"the verify contract {ARMED} to hold"),
        # verify waited up to 55 s without a word, where fire and did_it_work notified.
        ("verify", {"expression": "system.armed === true"},
         "the contract system.armed === true to hold"),
    ],
)  # fmt: skip
async def test_progress_is_notified_while_a_tool_waits(
    panel: tuple[Host, Client], tool: str, arguments: dict[str, Any], waiting_on: str
) -> None:
    host, client = panel
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))
        host.report(ReportRequest(values={"system.armed": True}))  # lands after the first

    ceiling = "wait_ms" if tool == "fire" else "timeout_ms"
    result = await client.call_tool(
        tool, {**arguments, ceiling: 30_000}, progress_callback=progress
    )
    assert result.structured_content is not None
    answered = result.structured_content
    assert answered["answer"] == "worked" if tool == "fire" else answered["passed"] is True
    ((done, total, message),) = seen
    assert total == 30_000
    if tool == "fire":  # told before any wait, with the transition to ask about
        assert done == 0
        assert message == f"waiting on {waiting_on} (transition panel.arm#1)"
    else:
        assert 1000 <= done < 30_000
        assert message == f"waiting on {waiting_on}"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_cancelled_wait_leaves_the_fire_and_its_later_settlement_in_the_ledger(
    mode: str,
) -> None:
    async with Host(panel_application(), Ledger(MemoryBackend())) as host:
        async with Client(build_server(host), mode=mode) as client:
            waiting = anyio.Event()

            async def progress(done: float, total: float | None, message: str | None) -> None:
                waiting.set()

            async def fire() -> None:
                arguments = {"action": "panel.arm", "wait_ms": MAX_WAIT_MS}
                await client.call_tool("fire", arguments, progress_callback=progress)

            with anyio.fail_after(20):  # a swallowed cancellation would wait out the 55 s
                async with anyio.create_task_group() as group:
                    group.start_soon(fire)
                    await waiting.wait()
                    group.cancel_scope.cancel()
            await host.evidence.durable()
            assert [(e.kind, e.transition) for e in host.ledger.query()] == [
                ("fire", "panel.arm#1")
            ]
            pending = await client.call_tool("did_it_work", {"transition_id": "panel.arm#1"})
            assert pending.structured_content is not None
            assert pending.structured_content["answer"] == "pending"
            assert pending.structured_content["waiting_on"] == (
                f"the verify contract {ARMED} to hold"
            )

            host.report(ReportRequest(values={"system.armed": True}))
            settled = await client.call_tool(
                "did_it_work", {"transition_id": "panel.arm#1", "wait_ms": 10_000}
            )
            assert settled.structured_content is not None
            assert settled.structured_content["answer"] == "worked"
        entries = host.ledger.query()
        assert [(e.kind, e.transition) for e in entries] == [
            ("fire", "panel.arm#1"),
            ("settlement", "panel.arm#1"),
        ]
        assert entries[1].body["answer"] == "worked"


async def test_the_agent_stops_rather_than_wait_on_a_settlement_that_cannot_come() -> None:
    desk = already_true.desk("billing")
    async with Host(desk, Ledger(MemoryBackend())) as host, Client(build_server(host)) as client:
        agent = ScriptedAgent(client, patience_ms=MAX_WAIT_MS)
        step = await agent.press("workspace.open-billing-writes-only")
    assert step.stopped
    assert step.asked_again == 0
    assert step.waited_on == ["a state report writing view.domain"]
    assert step.outcome == "unknown"


async def test_a_scripted_agent_completes_the_outpost_journey_in_process() -> None:
    async with Host(OUTPOST, Ledger(MemoryBackend())) as host:
        async with Client(build_server(host)) as client:
            steps = await outpost_journey(client)
        check_outpost_journey(steps)
        assert host.ledger.verify().ok


async def test_every_tool_runs_on_the_hosts_event_loop(panel: tuple[Host, Client]) -> None:
    # The SDK runs plain functions on worker threads, where the host must not be touched.
    tools = AssayTools(panel[0])
    for name in ("list_actions", "fire", "did_it_work", "get_state", "verify"):
        assert inspect.iscoroutinefunction(getattr(tools, name)), name


async def test_a_server_for_a_session_named_by_nothing_is_refused(
    panel: tuple[Host, Client],
) -> None:
    # An empty session id reached every tool, which then failed its wire model's check.
    for wrong in ("", 7):
        with pytest.raises(WrongTypeError, match="session must be a session id"):
            build_server(panel[0], session=wrong)  # type: ignore[arg-type]


async def test_an_action_on_another_page_says_where_to_go() -> None:
    async with Host(OUTPOST, Ledger(MemoryBackend())) as host, Client(build_server(host)) as c:
        result = await c.call_tool("fire", {"action": "drone.set-mode", "args": {"mode": "RTL"}})
    assert _text(result) == (
        "drone.set-mode is not available at 'inbox'; it is available at drone; navigate there "
        "first (list_actions shows what is available)"
    )
