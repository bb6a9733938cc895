"""Verified tools in the OpenAI Agents SDK: ``Runner.run`` drives the real agent loop against a
scripted model, on virtual time, and each test reads what the model was sent back."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, function_tool
from agents.exceptions import ToolOutputGuardrailTripwireTriggered
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from assay import Ledger
from assay.clock import VirtualClock
from assay.errors import GraphError
from assay.ledger import MemoryBackend
from assay.state.probes import CallableProbe
from assay.state.store import StateStore
from assay.state.substrate import Substrate
from assay.tool.openai_agents import (
    did_it_work_tool,
    failure_with_verdict,
    verification_guardrail,
    verified_function_tool,
)
from outbox import ALREADY_TRUE, PENDING, SENT, WAITING_ON

T = TypeVar("T")

SEND = function_call("send_message", {"message_id": "m1", "to": "ann"}, call_id="call-1")
UNTRACED = RunConfig(tracing_disabled=True)


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


def inbox(clock: VirtualClock, **statuses: str) -> Substrate:
    """Pushed state: each message's status, heard from just now."""
    state = {"inbox": {"sent": {key: {"status": value} for key, value in statuses.items()}}}
    substrate = Substrate(StateStore(state, clock=clock), clock=clock)
    substrate.store.heartbeat("app")
    return substrate


def sender(
    substrate: Substrate, *, sends: bool, calls: list[str] | None = None, **options: Any
) -> FunctionTool:
    """``send_message`` as a verified SDK tool; it marks the message sent when ``sends``."""

    async def send_message(message_id: str, to: str, subject: str = "") -> dict[str, str]:
        """Send the drafted message ``message_id`` to ``to``.

        Args:
            message_id: The draft to send.
            to: The recipient.
            subject: The subject line.
        """
        if calls is not None:
            calls.append(message_id)
        if sends:
            substrate.store.report({f"inbox.sent.{message_id}.status": "sent"})
        return {"id": message_id, "status": "sent"}

    tool: FunctionTool = verified_function_tool(
        send_message, substrate=substrate, writes=[SENT], verify={SENT: "sent"}, **options
    )
    return tool


def compact(value: Any) -> str:
    """``value`` as the compact JSON pydantic writes."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def outputs(call: ModelCall) -> list[str]:
    """The tool outputs the model was sent in ``call``, in order."""
    return [item["output"] for item in call.input if item.get("type") == "function_call_output"]


async def until(condition: Callable[[], bool]) -> None:
    """Let the run go on until ``condition`` holds (never sleeping: virtual time stands)."""
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the run never got there")


async def drive(agent: Agent[Any], clock: VirtualClock, seconds: float) -> Any:
    """Run ``agent`` and, once a call waits on virtual time, advance it by ``seconds``."""
    running = asyncio.ensure_future(Runner.run(agent, "Send m1 to ann.", run_config=UNTRACED))
    await until(lambda: clock.sleepers > 0 or running.done())
    await clock.advance(seconds)
    return await running


def test_the_schema_and_description_are_function_tools_own() -> None:
    async def send_message(message_id: str, to: str, subject: str = "") -> dict[str, str]:
        """Send the drafted message ``message_id`` to ``to``.

        Args:
            message_id: The draft to send.
            to: The recipient.
            subject: The subject line.
        """
        return {}

    tool = verified_function_tool(send_message, substrate=Substrate(StateStore()), writes=[SENT])
    plain = function_tool(send_message)
    assert isinstance(tool, FunctionTool)
    assert tool.name == "send_message"
    assert (
        tool.description
        == plain.description
        == "Send the drafted message ``message_id`` to ``to``."
    )
    assert tool.strict_json_schema
    assert tool.params_json_schema == plain.params_json_schema
    assert tool.params_json_schema["additionalProperties"] is False
    assert tool.params_json_schema["required"] == ["message_id", "to", "subject"]
    assert tool.params_json_schema["properties"]["to"]["description"] == "The recipient."


def test_a_silent_no_op_reaches_the_model_as_failed_naming_the_unchanged_key() -> None:
    ledger = Ledger(MemoryBackend())
    model = ScriptedModel([[SEND], [assistant_message("It did not go out.")]])

    async def main(clock: VirtualClock) -> Any:
        tool = sender(
            inbox(clock, m1="draft"),
            sends=False,
            timeout_ms=3000,
            ledger=ledger,
            tool_output_guardrails=[],  # unguarded: the whole Verified reaches the model
        )
        return await drive(Agent(name="mailer", model=model, tools=[tool]), clock, 3.0)

    result = run(main)
    assert result.final_output == "It did not go out."
    [seen] = outputs(model.calls[1])
    why = (
        'inbox.sent.m1.status remained "draft" after 1 poll cycle (3000ms); nothing observable '
        "changed. The action may have failed silently."
    )
    assert seen == compact(
        {
            "result": {"id": "m1", "status": "sent"},
            "verification": {
                "answer": "failed",
                "why": why,
                "transition_id": "tools.send_message#1",
                "failure": "verification",
                "error": why,
                "narrative": why,
                "changed_fields": [],
            },
            "summary": f"send_message: failed (verification). {why}",
        }
    )
    entries = list(ledger.iterate())
    assert [entry.kind for entry in entries] == ["fire", "settlement"]
    assert entries[0].body["args"] == {"message_id": "m1", "to": "ann", "subject": ""}
    assert entries[0].body["source"] == "agent"
    assert entries[1].body["answer"] == "failed"
    assert entries[1].body["error"] == why
    assert entries[1].body["outcome"]["passed"] is False


def test_an_already_true_call_carries_its_evidence_and_the_tool_still_ran() -> None:
    ledger = Ledger(MemoryBackend())
    calls: list[str] = []
    model = ScriptedModel([[SEND], [assistant_message("It was already sent.")]])

    async def main(clock: VirtualClock) -> Any:
        substrate = inbox(clock, m1="sent")
        tool = sender(substrate, sends=False, calls=calls, timeout_ms=3000, ledger=ledger)
        return await drive(Agent(name="mailer", model=model, tools=[tool]), clock, 3.0)

    run(main)
    assert calls == ["m1"]
    [seen] = outputs(model.calls[1])
    verified = json.loads(seen)
    assert verified["verification"]["answer"] == "already_true"
    assert [
        (e["key"], e["op"], e["threshold"], e["actual_summary"], e["result"])
        for e in verified["verification"]["already_true"]
    ] == [("inbox.sent.m1.status", "eq", "sent", '"sent"', True)]
    assert verified["summary"] == ALREADY_TRUE
    entries = list(ledger.iterate())
    assert [entry.kind for entry in entries] == ["fire", "settlement"]
    assert entries[1].body["answer"] == "unobservable"


def test_a_late_effect_is_pending_at_the_ceiling_then_worked_when_the_model_asks() -> None:
    ledger = Ledger(MemoryBackend())
    landed = asyncio.Event()

    async def ask_later(call: ModelCall) -> Any:
        await landed.wait()  # the model thinks while the effect lands
        transition = json.loads(outputs(call)[0])["verification"]["transition_id"]
        return [function_call("did_it_work", {"transition_id": transition}, call_id="call-2")]

    model = ScriptedModel(
        [[SEND], ModelStep.respond(ask_later), [assistant_message("Sent, in the end.")]]
    )

    async def main(clock: VirtualClock) -> Any:
        substrate = inbox(clock, m1="draft")
        send = sender(
            substrate, sends=False, timeout_ms=1000, verify_timeout_ms=10_000, ledger=ledger
        )
        agent = Agent(name="mailer", model=model, tools=[send, did_it_work_tool(send)])
        running = asyncio.ensure_future(Runner.run(agent, "Send m1.", run_config=UNTRACED))
        await until(lambda: clock.sleepers > 0)
        await clock.advance(1.0)
        await until(lambda: len(model.calls) == 2)
        await clock.advance(2.0)
        substrate.store.report({"inbox.sent.m1.status": "sent"})
        await clock.settle()
        landed.set()
        return await running

    assert run(main).final_output == "Sent, in the end."
    pending = json.loads(outputs(model.calls[1])[0])
    assert pending["verification"]["answer"] == "pending"
    assert pending["verification"]["waiting_on"] == WAITING_ON
    assert pending["summary"] == PENDING
    later = json.loads(outputs(model.calls[2])[1])
    assert later["verification"]["answer"] == "worked"
    assert later["verification"]["changed_fields"] == [
        {"key": "inbox.sent.m1.status", "before": "draft", "after": "sent", "kind": "changed"}
    ]
    assert later["summary"].startswith("send_message: worked. ")
    entries = list(ledger.iterate())
    assert [entry.kind for entry in entries] == ["fire", "settlement"]
    assert entries[1].body["answer"] == "worked"


def raiser(substrate: Substrate, ledger: Ledger, **options: Any) -> FunctionTool:
    async def send_message(message_id: str) -> None:
        """Send a drafted message."""
        raise ValueError("mailbox full")

    tool: FunctionTool = verified_function_tool(
        send_message, substrate=substrate, writes=[SENT], ledger=ledger, **options
    )
    return tool


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        ({}, "An error occurred while running the tool."),
        (
            {"failure_error_function": failure_with_verdict},
            "An error occurred while running the tool. send_message: failed (handler). the "
            "handler raised ValueError: mailbox full",
        ),
    ],
    ids=["sdk-default", "with-verdict"],
)
def test_a_raising_tool_goes_through_the_sdks_failure_function(
    options: dict[str, Any], shown: str
) -> None:
    ledger = Ledger(MemoryBackend())
    call = function_call("send_message", {"message_id": "m1"}, call_id="call-1")
    model = ScriptedModel([[call], [assistant_message("The mailbox is full.")]])

    async def main(clock: VirtualClock) -> Any:
        tool = raiser(inbox(clock), ledger, **options)
        return await drive(Agent(name="mailer", model=model, tools=[tool]), clock, 0.0)

    run(main)
    assert outputs(model.calls[1]) == [shown]
    entries = list(ledger.iterate())
    assert [entry.kind for entry in entries] == ["fire", "settlement"]
    assert entries[0].body["args"] == {"message_id": "m1"}
    assert entries[1].body["answer"] == "failed"
    assert entries[1].body["error"] == "the handler raised ValueError: mailbox full"


def test_by_default_the_guardrail_withholds_a_failed_calls_own_claim_of_success() -> None:
    model = ScriptedModel([[SEND], [assistant_message("It did not go out.")]])

    async def main(clock: VirtualClock) -> Any:
        tool = sender(inbox(clock, m1="draft"), sends=False, timeout_ms=3000)  # guarded
        return await drive(Agent(name="mailer", model=model, tools=[tool]), clock, 3.0)

    result = run(main)
    assert outputs(model.calls[1]) == [
        "assay withheld this tool's result, since its call did not work: send_message: failed "
        '(verification). inbox.sent.m1.status remained "draft" after 1 poll cycle (3000ms); '
        "nothing observable changed. The action may have failed silently."
    ]
    [guarded] = result.tool_output_guardrail_results
    assert guarded.output.output_info == "failed"


def test_the_guardrail_lets_a_worked_call_through_and_can_halt_a_failed_one() -> None:
    worked = ScriptedModel([[SEND], [assistant_message("Sent.")]])
    failed = ScriptedModel([[SEND], [assistant_message("unreachable")]])

    async def main(clock: VirtualClock) -> Any:
        guard = [verification_guardrail(halt=True)]
        good = sender(inbox(clock, m1="draft"), sends=True, tool_output_guardrails=guard)
        await drive(Agent(name="mailer", model=worked, tools=[good]), clock, 0.0)
        bad = sender(inbox(clock, m1="draft"), sends=False, tool_output_guardrails=guard)
        return await drive(Agent(name="mailer", model=failed, tools=[bad]), clock, 5.0)

    with pytest.raises(ToolOutputGuardrailTripwireTriggered) as halted:
        run(main)
    assert json.loads(outputs(worked.calls[1])[0])["verification"]["answer"] == "worked"
    assert halted.value.output.output_info == "failed"
    assert len(failed.calls) == 1


def test_an_sdk_timeout_shorter_than_the_verdicts_wait_is_refused() -> None:
    async def touch() -> None:
        """Touch it."""

    with pytest.raises(GraphError) as raised:
        verified_function_tool(touch, substrate=Substrate(StateStore()), timeout=2)
    assert str(raised.value) == (
        "tools.touch: timeout: the SDK's timeout of 2 s would cancel a call still waiting for "
        "its verdict (timeout_ms=5000); give the SDK a longer timeout, or assay a shorter "
        "timeout_ms"
    )


def test_did_it_work_tool_asks_verified_tools_only() -> None:
    @function_tool
    def plain() -> None:
        """Nothing."""

    with pytest.raises(GraphError) as raised:
        did_it_work_tool(plain)
    assert str(raised.value) == (
        "did_it_work_tool asks verified tools only, and 'plain' was not made by "
        "verified_function_tool"
    )


def test_assay_does_not_import_the_sdk_and_the_adapter_names_the_extra_without_it() -> None:
    probe = (
        "import sys, assay, assay.tool\n"
        "assert 'agents' not in sys.modules, 'assay imported the SDK'\n"
        "sys.modules['agents'] = None\n"
        "try:\n"
        "    import assay.tool.openai_agents\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout == (
        "assay.tool.openai_agents needs the OpenAI Agents SDK: pip install 'assay[openai-agents]'\n"
    )


def test_a_sync_tool_runs_in_a_worker_thread_verified_on_the_runs_loop() -> None:
    app = {"on": False}
    substrate = Substrate(
        probes=[CallableProbe(lambda: {"lamp.on": app["on"]}, name="app", interval=0.02)]
    )
    threads: list[str] = []

    def switch(on: bool) -> str:
        """Switch the lamp."""
        threads.append(threading.current_thread().name)
        app["on"] = on
        return "switched"

    tool = verified_function_tool(
        switch, substrate=substrate, writes=["lamp.on"], verify="lamp.on === true", timeout_ms=600
    )
    model = ScriptedModel(
        [[function_call("switch", {"on": True}, call_id="call-1")], [assistant_message("On.")]]
    )
    agent = Agent(name="lamp", model=model, tools=[tool])
    try:
        assert Runner.run_sync(agent, "Light, please.", run_config=UNTRACED).final_output == "On."
    finally:
        # run_sync leaves its loop open, the substrate the tool started polling on it: stop
        # both, as a program would before it exits.
        loop = asyncio.get_event_loop_policy().get_event_loop()
        loop.run_until_complete(substrate.stop())
        loop.close()
        asyncio.set_event_loop(None)
    [seen] = outputs(model.calls[1])
    assert json.loads(seen)["verification"]["answer"] == "worked"
    assert json.loads(seen)["result"] == "switched"
    assert threads != [threading.current_thread().name]
