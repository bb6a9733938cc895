"""One MCP tool per action (``assay mcp --tool-per-action``), beside the generic ``fire``.

Each tool is named from its action's id (``tool_name``), described by its ``does`` and its
reversibility, hinted exactly by that reversibility, and takes the action's own arguments
under a strict input schema (``assay.mcp.strict``) with a nullable ``wait_ms`` beside them.
Calling one fires its action as ``fire`` would, with the same answer.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field, Strict

from assay.errors import GraphError
from assay.graph.declaration import ActionSpec, Reversibility
from assay.graph.graph import NavigationGraph
from assay.host.wire import MAX_WAIT_MS, ActionResponse
from assay.mcp.strict import placeholder_schema, strict_schema, without_null_optionals
from assay.mcp.tools import DEFAULT_WAIT_MS, AssayTools

TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")
"""What an MCP tool name may be (and an OpenAI function name)."""

WAIT_MS: Final = "wait_ms"

_REVERSIBILITY: Final = {
    Reversibility.REVERSIBLE: "Reversible.",
    Reversibility.COMPENSABLE: "Compensable: another action can make up for it.",
    Reversibility.IRREVERSIBLE: (
        "Irreversible: it cannot be undone; check get_state and its verify contract first."
    ),
}

_WAIT: Final = {
    "type": ["integer", "null"],
    "minimum": 0,
    "maximum": MAX_WAIT_MS,
    "description": "wait up to this long (ms) for its effect to be observed; null for "
    f"{DEFAULT_WAIT_MS}",
}


def tool_name(action: str) -> str:
    """The tool name for action id ``action``: its ``.`` (which tool names do not allow) as
    ``_``; ``inbox.send`` is ``inbox_send``, ``inbox.mark-all-read`` ``inbox_mark-all-read``."""
    return action.replace(".", "_")


@dataclass(frozen=True, slots=True)
class ActionTool:
    """The tool that fires one action: its name, description, hints and strict input schema."""

    name: str
    spec: ActionSpec
    input_schema: dict[str, Any]

    @property
    def description(self) -> str:
        return (
            f"{self.spec.does.rstrip('.')}. {_REVERSIBILITY[self.spec.reversibility]} Fires "
            f"{self.spec.id} as fire does, with the same answer."
        )

    @property
    def annotations(self) -> ToolAnnotations:
        return ToolAnnotations(
            title=f"Fire {self.spec.id}",
            read_only_hint=False,
            destructive_hint=self.spec.reversibility is Reversibility.IRREVERSIBLE,
            idempotent_hint=False,
        )

    def firing(self, tools: AssayTools) -> Callable[..., Awaitable[CallToolResult]]:
        """The tool's function: it fires this action through ``tools.fire``. It takes the
        arguments packed as ``args`` and ``wait_ms``, as ``_Server.call_tool`` passes them."""
        spec = self.spec

        async def fire_action(
            args: dict[str, Any],
            wait_ms: Annotated[int, Strict(), Field(ge=0, le=MAX_WAIT_MS)] | None = None,
            *,
            ctx: Context,
        ) -> Annotated[CallToolResult, ActionResponse]:
            given = without_null_optionals(args, spec.input_schema or {})
            wait = DEFAULT_WAIT_MS if wait_ms is None else wait_ms
            return await tools.fire(spec.id, given, wait, ctx=ctx)

        return fire_action

    def packed(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments of a call, as ``firing``'s function takes them."""
        args = {key: value for key, value in arguments.items() if key != WAIT_MS}
        return {"args": args, WAIT_MS: arguments.get(WAIT_MS)}


def action_tools(graph: NavigationGraph, taken: tuple[str, ...] = ()) -> list[ActionTool]:
    """A tool for each action of ``graph``, in declaration order. ``GraphError`` when an
    action id makes no tool name, two make the same one (or one of ``taken``), an action
    takes an argument called ``wait_ms``, or its schema cannot be made strict."""
    tools: list[ActionTool] = []
    named: dict[str, str] = dict.fromkeys(taken, "")
    for actions in graph.pages.values():
        for spec in actions.values():
            name = tool_name(spec.id)
            if not TOOL_NAME.match(name):
                raise GraphError(
                    f"{spec.id}: makes the tool name {name!r}, longer than the 64 characters "
                    "a tool name may have; shorten the page or action name",
                    action=spec.id,
                )
            if name in named:
                clash = (
                    f"actions {named[name]} and {spec.id} both make the tool name {name!r}; "
                    "rename one of them"
                    if named[name]
                    else f"action {spec.id} makes the tool name {name!r}, a generic tool's; "
                    "rename the action"
                )
                raise GraphError(f"{clash} to serve a tool per action", action=spec.id)
            named[name] = spec.id
            schema = (
                strict_schema(spec.input_schema, spec.id)
                if spec.input_schema is not None
                else placeholder_schema(spec.placeholders)
            )
            if WAIT_MS in schema["properties"]:
                raise GraphError(
                    f"{spec.id}: takes an argument called {WAIT_MS!r}, which its tool "
                    "keeps for the wait; rename the argument to serve a tool per action",
                    action=spec.id,
                    field="input",
                )
            schema["properties"][WAIT_MS] = dict(_WAIT)
            schema["required"].append(WAIT_MS)
            tools.append(ActionTool(name, spec, schema))
    return tools
