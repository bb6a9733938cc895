"""``assay.tool.pydantic_ai``: verified tools on a pydantic-ai ``Agent``, run end to end
against ``FunctionModel``, with what reached the model and the ledger pinned."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from assay import Verified, verified
from assay.clock import VirtualClock
from assay.errors import WrongTypeError
from assay.tool.pydantic_ai import VerifiedToolset
from outbox import ALREADY_SETTLED, EVIDENCE, FIRE, NO_OP, VERIFY, Outbox

T = TypeVar("T")


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


class Model:
    """A model that calls ``send_message`` once, then answers; it keeps what it was sent."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        if len(self.seen) == 1:
            call = ToolCallPart("send_message", {"message_id": "m1", "to": "ann"}, "call-1")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    def returned(self) -> ToolReturnPart:
        """The tool's return part, as the model was sent it."""
        request = self.seen[1][-1]
        assert isinstance(request, ModelRequest)
        (part,) = [part for part in request.parts if isinstance(part, ToolReturnPart)]
        return part


def agent_for(outbox: Outbox, model: Model, **options: Any) -> tuple[Agent[None, str], Any]:
    @verified(
        substrate=outbox.substrate, ledger=outbox.ledger, exclude=["ctx"], **VERIFY, **options
    )
    async def send_message(ctx: RunContext[None], message_id: str, to: str) -> dict[str, str]:
        """Send the drafted message ``message_id`` to ``to``."""
        assert ctx.tool_call_id == "call-1"
        return outbox.send(message_id, to)

    agent = Agent(FunctionModel(model.respond), toolsets=[VerifiedToolset([send_message])])
    return agent, send_message


def test_a_silent_no_op_reaches_the_model_as_a_failed_tool_call() -> None:
    model = Model()

    async def main(clock: VirtualClock) -> tuple[Outbox, str]:
        outbox = Outbox(clock, m1="draft")
        agent, _ = agent_for(outbox, model, timeout_ms=3000)
        result = await outbox.run_until_started(agent.run("send m1 to ann"), 3.0)
        return outbox, result.output

    outbox, output = run(main)
    assert output == "done"
    part = model.returned()
    assert (part.outcome, part.content, part.metadata) == ("failed", NO_OP, None)
    assert outbox.calls == [("m1", "ann")]
    fired, settled = outbox.fire_and_settlement()
    assert fired == FIRE
    assert (settled["answer"], settled["error"]) == (
        "failed",
        'inbox.sent.m1.status remained "draft" after 1 poll cycle (3000ms); nothing '
        "observable changed. The action may have failed silently.",
    )


def test_an_already_true_call_carries_its_evidence_and_the_tool_ran() -> None:
    model = Model()

    async def main(clock: VirtualClock) -> Outbox:
        outbox = Outbox(clock, m1="sent")
        agent, _ = agent_for(outbox, model, timeout_ms=3000)
        await agent.run("send m1 to ann")
        return outbox

    outbox = run(main)
    assert outbox.calls == [("m1", "ann")]
    part = model.returned()
    assert isinstance(part.metadata, Verified)
    assert part.outcome == "success"
    assert part.content == part.metadata.model_dump(mode="json")
    assert part.content["result"] == {"id": "m1"}
    assert part.content["verification"]["answer"] == "already_true"
    assert part.content["verification"]["already_true"] == [EVIDENCE]
    assert part.content["summary"] == (
        "send_message: already true, inbox.sent.m1.status held before the call, which says "
        "nothing of its effect; the tool ran. The handler finished, and no change to the "
        "declared keys was observed."
    )
    assert outbox.entries() == [
        ("fire", {**FIRE, "already_true": [EVIDENCE]}),
        ("settlement", ALREADY_SETTLED),
    ]


def test_a_late_effect_is_pending_for_the_model_then_worked_when_asked() -> None:
    model = Model()

    async def main(clock: VirtualClock) -> tuple[Outbox, Any]:
        outbox = Outbox(clock, m1="draft")
        agent, send = agent_for(outbox, model, timeout_ms=1000, verify_timeout_ms=10_000)
        await outbox.run_until_started(agent.run("send m1 to ann"), 1.0)
        await clock.advance(2.0)
        outbox.mark_sent("m1")
        await clock.settle()
        return outbox, send.did_it_work("tools.send_message#1")

    outbox, later = run(main)
    part = model.returned()
    assert part.outcome == "success"
    verification = part.content["verification"]
    assert (verification["answer"], verification["waiting_on"], verification["pending_for_ms"]) == (
        "pending",
        'the verify contract {"inbox.sent.{message_id}.status":"sent"} to hold (on '
        "inbox.sent.m1.status)",
        1000,
    )
    assert part.content["summary"].endswith("ask did_it_work('tools.send_message#1') later")
    assert (later.answer, later.why) == (
        "worked",
        "Contract evaluated to true after 2 poll cycles (3000ms); inbox.sent.m1.status changed "
        'from "draft" to "sent".',
    )
    fired, settled = outbox.fire_and_settlement()
    assert fired == FIRE
    assert (settled["answer"], settled["commit"]) == (
        "worked",
        [{"after": "sent", "before": "draft", "key": "inbox.sent.m1.status", "kind": "changed"}],
    )


def test_a_raising_tool_ends_the_run_with_its_error_and_the_ledger_has_the_failure() -> None:
    model = Model()
    outbox: Outbox | None = None

    async def main(clock: VirtualClock) -> None:
        nonlocal outbox
        outbox = Outbox(clock, m1="draft")
        outbox.raises = ValueError("mailbox full")
        agent, _ = agent_for(outbox, model)
        await agent.run("send m1 to ann")

    with pytest.raises(ValueError, match="mailbox full") as raised:
        run(main)
    assert raised.value.__notes__ == [
        "assay: send_message: failed (handler). the handler raised ValueError: mailbox full"
    ]
    assert len(model.seen) == 1  # pydantic-ai ends the run: the model never sees the error
    assert outbox is not None
    fired, settled = outbox.fire_and_settlement()
    assert fired == FIRE
    assert (settled["answer"], settled["error"]) == (
        "failed",
        "the handler raised ValueError: mailbox full",
    )


def test_a_tool_that_raises_model_retry_is_retried_and_recorded_as_failed() -> None:
    model = Model()

    async def main(clock: VirtualClock) -> Outbox:
        outbox = Outbox(clock, m1="draft")
        outbox.raises = ModelRetry("ann's mailbox is full; ask the user for another address")
        agent, _ = agent_for(outbox, model)
        await agent.run("send m1 to ann")
        return outbox

    outbox = run(main)
    part = model.returned()
    assert (part.outcome, part.content) == (
        "retried",
        "ann's mailbox is full; ask the user for another address",
    )
    assert outbox.entries()[1][1]["error"] == (
        "the handler raised ModelRetry: ann's mailbox is full; ask the user for another address"
    )


def test_only_verified_tools_and_a_run_context_kept_out_of_the_record() -> None:
    def plain(message_id: str) -> None:
        """Not verified."""

    with pytest.raises(WrongTypeError) as raised:
        VerifiedToolset([plain])
    assert str(raised.value) == (
        "VerifiedToolset holds tools made by assay.verified, and 'plain' is not one; "
        "decorate it with @verified(substrate=..., writes=..., verify=...)"
    )

    async def main(clock: VirtualClock) -> None:
        @verified(substrate=Outbox(clock).substrate, **VERIFY)
        async def send_message(ctx: RunContext[None], message_id: str) -> None:
            """Send."""

        VerifiedToolset([send_message])

    with pytest.raises(WrongTypeError) as raised:
        run(main)
    assert str(raised.value) == (
        "'send_message' takes ctx: RunContext, which pydantic-ai passes and assay would record "
        "as an argument; declare @verified(..., exclude=['ctx'])"
    )
