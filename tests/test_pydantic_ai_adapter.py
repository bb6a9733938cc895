"""``assay.tool.pydantic_ai``: verified tools on a pydantic-ai ``Agent``, run end to end
against ``FunctionModel``, with what reached the model and the ledger pinned."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
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
from outbox import (
    ALREADY_SETTLED,
    ALREADY_TRUE,
    EVIDENCE,
    FIRE,
    NO_OP,
    PENDING,
    UNKNOWN_ID,
    VERIFY,
    WAITING_ON,
    WORKED,
    Outbox,
)

T = TypeVar("T")


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


class Model:
    """A model that calls ``send_message`` once, then answers; it keeps what it was sent.
    With ``asks``, it then thinks (``thinking``, while the effect lands) and asks
    ``did_it_work`` about the transition id of its call's answer and the ids in ``asks``."""

    def __init__(
        self,
        *,
        thinking: Callable[[], Awaitable[None]] | None = None,
        asks: Sequence[str] = (),
    ) -> None:
        self.seen: list[list[ModelMessage]] = []
        self.thinking = thinking
        self.asks = asks

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        if len(self.seen) == 1:
            call = ToolCallPart("send_message", {"message_id": "m1", "to": "ann"}, "call-1")
            return ModelResponse(parts=[call])
        if len(self.seen) == 2 and self.thinking is not None:
            await self.thinking()
            ids = [self.returned().content["verification"]["transition_id"], *self.asks]
            asks = [
                ToolCallPart("did_it_work", {"transition_id": id}, f"ask-{n}")
                for n, id in enumerate(ids)
            ]
            return ModelResponse(parts=asks)
        return ModelResponse(parts=[TextPart("done")])

    def returned(self, step: int = 1) -> ToolReturnPart:
        """The tool's return part, as the model was sent it after its ``step``-th answer."""
        (part,) = self.returns(step)
        return part

    def returns(self, step: int) -> list[ToolReturnPart]:
        """The tool return parts the model was sent after its ``step``-th answer."""
        request = self.seen[step][-1]
        assert isinstance(request, ModelRequest)
        return [part for part in request.parts if isinstance(part, ToolReturnPart)]


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
    assert part.content["summary"] == ALREADY_TRUE
    assert outbox.entries() == [
        ("fire", {**FIRE, "already_true": [EVIDENCE]}),
        ("settlement", ALREADY_SETTLED),
    ]


def test_a_late_effect_is_pending_for_the_model_then_worked_when_it_asks() -> None:
    async def main(clock: VirtualClock) -> tuple[Outbox, Model]:
        outbox = Outbox(clock, m1="draft")

        model = Model(thinking=outbox.lands_late, asks=["tools.archive_message#1"])
        agent, _ = agent_for(outbox, model, timeout_ms=1000, verify_timeout_ms=10_000)
        result = await outbox.run_until_started(agent.run("send m1 to ann"), 1.0)
        assert result.output == "done"
        return outbox, model

    outbox, model = run(main)
    part = model.returned()
    assert part.outcome == "success"
    verification = part.content["verification"]
    assert (verification["answer"], verification["waiting_on"], verification["pending_for_ms"]) == (
        "pending",
        WAITING_ON,
        1000,
    )
    assert part.content["summary"] == PENDING
    asked, unknown = model.returns(2)
    assert (asked.tool_name, asked.outcome, asked.content) == ("did_it_work", "success", WORKED)
    assert (unknown.outcome, unknown.content) == ("success", UNKNOWN_ID)
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


def test_the_toolset_offers_did_it_work_unless_told_not_to() -> None:
    @verified(substrate=Outbox(VirtualClock()).substrate, **VERIFY)
    def send_message(message_id: str) -> None:
        """Send a drafted message."""

    assert list(VerifiedToolset([send_message]).tools) == ["send_message", "did_it_work"]
    assert list(VerifiedToolset([send_message], did_it_work=False).tools) == ["send_message"]
