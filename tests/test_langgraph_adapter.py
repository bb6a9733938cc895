"""``assay.tool.langgraph``: verified tools as LangChain tools in a LangGraph ``ToolNode``
graph, run end to end against a scripted fake chat model, with what reached the model and the
ledger pinned."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import Field

from assay import Verified, verified
from assay.clock import VirtualClock
from assay.errors import GraphError, WrongTypeError
from assay.tool.langgraph import did_it_work_tool, langchain_tool
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

ASK = {"messages": [("user", "send m1 to ann")]}


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


class Model(GenericFakeChatModel):
    """The fake chat model, scripted to call ``send_message`` once and then answer, with
    tools bound (it ignores them) and every list of messages it was sent kept. With
    ``thinking``, its second answer waits for it (while the effect lands) and asks
    ``did_it_work`` about the transition id of its call's answer and the ids in ``asks``."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    thinking: Any = None
    asks: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Model:  # type: ignore[override]
        return self

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        if len(self.seen) == 2 and self.thinking is not None:
            await self.thinking()
            ids = [json.loads(self.returned().text)["verification"]["transition_id"], *self.asks]
            calls = [
                {"name": "did_it_work", "args": {"transition_id": id}, "id": f"ask-{n}"}
                for n, id in enumerate(ids)
            ]
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=calls))])
        return self._generate(messages, *args, **kwargs)

    def returned(self) -> ToolMessage:
        """The tool's message, as the model was sent it."""
        message = self.seen[1][-1]
        assert isinstance(message, ToolMessage)
        return message


def scripted(**options: Any) -> Model:
    call = {"name": "send_message", "args": {"message_id": "m1", "to": "ann"}, "id": "call-1"}
    return Model(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("done")]), **options)


def graph_for(
    outbox: Outbox,
    model: Model,
    *,
    handle_tool_errors: bool = False,
    response_format: Any = "content",
    **options: Any,
) -> Any:
    @verified(substrate=outbox.substrate, ledger=outbox.ledger, **VERIFY, **options)
    async def send_message(message_id: str, to: str) -> dict[str, str]:
        """Send the drafted message ``message_id`` to ``to``."""
        return outbox.send(message_id, to)

    tools = [langchain_tool(send_message, response_format=response_format)]
    tools.append(did_it_work_tool(*tools))
    bound = model.bind_tools(tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=handle_tool_errors))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile(), send_message


def test_a_silent_no_op_reaches_the_model_as_an_error_tool_message() -> None:
    model = scripted()

    async def main(clock: VirtualClock) -> tuple[Outbox, Any]:
        outbox = Outbox(clock, m1="draft")
        graph, _ = graph_for(outbox, model, timeout_ms=3000)
        final = await outbox.run_until_started(graph.ainvoke(ASK), 3.0)
        return outbox, final

    outbox, final = run(main)
    assert final["messages"][-1].content == "done"
    message = model.returned()
    assert (message.status, message.content, message.artifact) == ("error", NO_OP, None)
    assert outbox.calls == [("m1", "ann")]
    fired, settled = outbox.fire_and_settlement()
    assert fired == FIRE
    assert (settled["answer"], settled["outcome"]["passed"]) == (
        "failed",
        False,
    )


def test_an_already_true_call_carries_its_evidence_and_the_tool_ran() -> None:
    model = scripted()

    async def main(clock: VirtualClock) -> Outbox:
        outbox = Outbox(clock, m1="sent")
        graph, _ = graph_for(outbox, model, timeout_ms=3000, response_format="content_and_artifact")
        await graph.ainvoke(ASK)
        return outbox

    outbox = run(main)
    assert outbox.calls == [("m1", "ann")]
    message = model.returned()
    assert message.status == "success"
    assert isinstance(message.artifact, Verified)
    assert message.content == message.artifact.model_dump_json()
    content = json.loads(message.content)
    assert content["verification"]["answer"] == "already_true"
    assert content["verification"]["already_true"] == [EVIDENCE]
    assert content["summary"] == ALREADY_TRUE
    assert outbox.entries() == [
        ("fire", {**FIRE, "already_true": [EVIDENCE]}),
        ("settlement", ALREADY_SETTLED),
    ]


def test_a_late_effect_is_pending_for_the_model_then_worked_when_it_asks() -> None:
    async def main(clock: VirtualClock) -> tuple[Outbox, Model]:
        outbox = Outbox(clock, m1="draft")

        model = scripted(thinking=outbox.lands_late, asks=["tools.archive_message#1"])
        graph, _ = graph_for(outbox, model, timeout_ms=1000, verify_timeout_ms=10_000)
        final = await outbox.run_until_started(graph.ainvoke(ASK), 1.0)
        assert final["messages"][-1].content == "done"
        return outbox, model

    outbox, model = run(main)
    message = model.returned()
    assert (message.status, message.artifact) == ("success", None)
    pending = json.loads(message.text)
    verification = pending["verification"]
    assert (verification["answer"], verification["waiting_on"], verification["pending_for_ms"]) == (
        "pending",
        WAITING_ON,
        1000,
    )
    assert pending["summary"] == PENDING
    asked, unknown = model.seen[2][-2:]
    assert isinstance(asked, ToolMessage) and isinstance(unknown, ToolMessage)
    assert (asked.name, asked.status, json.loads(asked.text)) == ("did_it_work", "success", WORKED)
    assert (unknown.status, unknown.content) == ("success", UNKNOWN_ID)
    fired, settled = outbox.fire_and_settlement()
    assert fired == FIRE
    assert (settled["answer"], settled["effect"]) == (
        "worked",
        "observed",
    )


def test_a_raising_tool_reaches_the_model_through_tool_node_error_handling() -> None:
    model = scripted()

    async def main(clock: VirtualClock) -> Outbox:
        outbox = Outbox(clock, m1="draft")
        outbox.raises = ValueError("mailbox full")
        graph, _ = graph_for(outbox, model, handle_tool_errors=True)
        await graph.ainvoke(ASK)
        return outbox

    outbox = run(main)
    message = model.returned()
    assert (message.status, message.content) == (
        "error",
        "Error: ValueError('mailbox full')\n Please fix your mistakes.",
    )
    fired, settled = outbox.fire_and_settlement()
    assert fired == FIRE
    assert (settled["answer"], settled["error"]) == (
        "failed",
        "the handler raised ValueError: mailbox full",
    )


def test_a_raising_tool_without_error_handling_ends_the_graph_run() -> None:
    model = scripted()

    async def main(clock: VirtualClock) -> None:
        outbox = Outbox(clock, m1="draft")
        outbox.raises = ValueError("mailbox full")
        graph, _ = graph_for(outbox, model)
        await graph.ainvoke(ASK)

    with pytest.raises(ValueError, match="mailbox full") as raised:
        run(main)
    assert raised.value.__notes__[0] == (
        "assay: send_message: failed (handler). the handler raised ValueError: mailbox full"
    )
    assert len(model.seen) == 1


def test_only_a_verified_tool_becomes_a_langchain_tool() -> None:
    def plain(message_id: str) -> None:
        """Not verified."""

    with pytest.raises(WrongTypeError) as raised:
        langchain_tool(plain)
    assert str(raised.value) == (
        "langchain_tool takes a tool made by assay.verified, and 'plain' is not one; decorate "
        "it with @verified(substrate=..., writes=..., verify=...)"
    )


def test_the_schema_and_description_are_the_function_s() -> None:
    async def main(clock: VirtualClock) -> Any:
        _, send = graph_for(Outbox(clock), scripted())
        return langchain_tool(send)

    tool = run(main)
    assert tool.name == "send_message"
    assert tool.description == "Send the drafted message ``message_id`` to ``to``."
    assert tool.tool_call_schema.model_json_schema()["required"] == ["message_id", "to"]


def test_did_it_work_tool_asks_verified_tools_only() -> None:
    def plain() -> None:
        """Nothing."""

    with pytest.raises(GraphError) as raised:
        did_it_work_tool(plain)
    assert str(raised.value) == (
        "did_it_work_tool asks verified tools only, and 'plain' was not made by "
        "langchain_tool or assay.verified"
    )
