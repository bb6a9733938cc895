"""``build_server``: an ``MCPServer`` (official SDK) whose tools act on one ``Host`` session.

Annotations are hints a client shows its user or uses to ask for confirmation. The reads
(``list_actions``, ``did_it_work``, ``get_state``, ``verify``) are read-only. ``fire`` is one
tool for every action, so its hints must hold for the worst action it can fire: it is
destructive when the application declares any irreversible action, and its description
then names those actions, as ``list_actions`` marks each one's reversibility.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import Tool as MCPTool
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from assay import __version__
from assay.graph.declaration import Reversibility
from assay.graph.graph import NavigationGraph
from assay.host import Host
from assay.host.excerpt import excerpt
from assay.mcp.action_tools import ActionTool, action_tools
from assay.mcp.messages import ParamsRefusal
from assay.mcp.results import TEXT_CHARACTERS
from assay.mcp.tools import AssayTools

INSTRUCTIONS = (
    "assay fires actions on {app} and answers with evidence of what actually changed. "
    "Call list_actions to see what can be done here, fire to act (it waits for the effect, "
    "up to wait_ms), did_it_work to ask again about a pending fire, get_state to read the "
    "observed state and verify to check a condition. Trust answer/effect_status, never the "
    "absence of an error: a fire can be accepted and change nothing. When a pending answer's "
    "waiting_on names something that will not happen, stop waiting for it."
)


def irreversible_actions(graph: NavigationGraph) -> list[str]:
    """The ids of the graph's irreversible actions, in declaration order."""
    return [
        spec.id
        for actions in graph.pages.values()
        for spec in actions.values()
        if spec.reversibility is Reversibility.IRREVERSIBLE
    ]


def fire_annotations(graph: NavigationGraph) -> ToolAnnotations:
    """``fire``'s hints: destructive exactly when some action of ``graph`` is irreversible."""
    return ToolAnnotations(
        title="Fire an action",
        read_only_hint=False,
        destructive_hint=bool(irreversible_actions(graph)),
        idempotent_hint=False,
    )


def fire_description(graph: NavigationGraph, base: str) -> str:
    """``fire``'s description: ``base``, then the irreversible actions by name, if any."""
    irreversible = irreversible_actions(graph)
    if not irreversible:
        return base
    return (
        f"{base}\n\nIrreversible (cannot be undone; check get_state and the action's verify "
        f"contract before firing): {', '.join(irreversible)}."
    )


def build_server(
    host: Host,
    *,
    session: str | None = None,
    name: str = "assay",
    tool_per_action: bool = False,
) -> MCPServer:
    """An MCP server with the five tools, acting in ``session`` of ``host`` (the default
    session when ``None``). ``host`` must be started, and stay so while the server runs.
    With ``tool_per_action``, also a tool for each action (``assay.mcp.action_tools``);
    ``GraphError`` when two actions would make the same tool name."""
    tools = AssayTools(host, session)
    server = _Server(
        name,
        version=__version__,
        instructions=INSTRUCTIONS.format(app=host.graph.app),
        log_level="WARNING",
        middleware=[ParamsRefusal()],
    )
    fire = (
        tools.fire,
        fire_description(host.graph, _doc(tools.fire)),
        fire_annotations(host.graph),
    )
    registered = {
        "list_actions": _read_only(tools.list_actions, "List the actions available here"),
        "fire": fire,
        "did_it_work": _read_only(tools.did_it_work, "Did it work?"),
        "get_state": _read_only(tools.get_state, "Read the observed state"),
        "verify": _read_only(tools.verify, "Check a condition on the state"),
    }
    for tool_name, (function, description, hints) in registered.items():
        server.add_tool(function, tool_name, description=description, annotations=hints)
    if tool_per_action:
        for action_tool in action_tools(host.graph, taken=tuple(registered)):
            server.add_action_tool(action_tool, tools)
    return server


class _Server(MCPServer):
    """An ``MCPServer`` that refuses an argument its tool does not take (the SDK ignores it,
    so a misspelt ``wait_ms`` would silently not wait), and words a refusal of a tool's
    arguments as one line per field at fault, as the HTTP port does, where the SDK's dumps
    pydantic's report (error codes, the input echoed, a web address per error)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taken: dict[str, tuple[str, ...]] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        self._action_tools: dict[str, ActionTool] = {}

    def add_action_tool(self, tool: ActionTool, tools: AssayTools) -> None:
        """Serve ``tool``: listed with its strict input schema, called with its arguments
        packed as its function takes them (``ActionTool.packed``)."""
        self.add_tool(
            tool.firing(tools),
            tool.name,
            description=tool.description,
            annotations=tool.annotations,
        )
        self._action_tools[tool.name] = tool

    async def list_tools(self) -> list[MCPTool]:
        listed = await super().list_tools()
        return [
            tool.model_copy(update={"input_schema": self._action_tools[tool.name].input_schema})
            if tool.name in self._action_tools
            else tool
            for tool in listed
        ]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        # What the SDK's HTTP transport checks Mcp-Param headers against: the listed schema.
        if name in self._action_tools:
            return self._action_tools[name].input_schema
        return super()._tool_input_schema(name)

    async def arguments_taken(self, name: str) -> tuple[str, ...] | None:
        """The arguments tool ``name`` takes, as its input schema in ``tools/list`` names
        them; ``None`` for a tool there is not."""
        if name not in self._taken:
            tools = await self.list_tools()
            self._schemas = {tool.name: tool.input_schema.get("properties", {}) for tool in tools}
            self._taken = {tool: tuple(properties) for tool, properties in self._schemas.items()}
        return self._taken.get(name)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        taken = await self.arguments_taken(name)
        unknown = [key for key in arguments if taken is not None and key not in taken]
        if unknown:
            raise ToolError(
                excerpt(
                    f"{name}: no argument is called {', '.join(map(repr, unknown))}; it takes "
                    f"{', '.join(taken or ()) or 'none'}",
                    TEXT_CHARACTERS,
                )
            )
        nulls = [key for key, value in arguments.items() if value is None]
        refused = {key: kinds for key in nulls if "null" not in (kinds := self._kinds(name, key))}
        if refused:
            # Checked on the arguments as sent: the SDK reads the string "null" as null too.
            faults = "; ".join(
                f"{key}: must be {' or '.join(kinds) or 'given'}, not null"
                for key, kinds in refused.items()
            )
            raise ToolError(f"{name}: {_MISMATCH}: {faults}")
        if name in self._action_tools:
            arguments = self._action_tools[name].packed(arguments)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if type(error) is not ToolError or not isinstance(cause, ValidationError):
                raise
            raise ToolError(excerpt(invalid_arguments(name, cause), TEXT_CHARACTERS)) from cause

    def _kinds(self, name: str, argument: str) -> list[str]:
        """The JSON types argument ``argument`` of tool ``name`` takes, as its input schema
        in ``tools/list`` says (``arguments_taken`` has read them); empty when it says none."""
        schema = self._schemas.get(name, {}).get(argument, {})
        kinds: list[str] = []
        for option in (schema, *schema.get("anyOf", ())):
            given = option.get("type", [])
            kinds += [given] if isinstance(given, str) else list(given)
            if None in option.get("enum", ()):  # a strict tool's optional enum
                kinds.append("null")
        return list(dict.fromkeys(kinds))


def invalid_arguments(tool: str, error: ValidationError) -> str:
    """What is wrong with a call of ``tool`` whose arguments failed its input schema."""
    faults = "; ".join(
        f"{'.'.join(str(part) for part in found['loc']) or 'arguments'}: {found['msg']}"
        for found in error.errors()
    )
    return f"{tool}: {_MISMATCH}: {faults}"


_MISMATCH = "the arguments do not match its input schema (see tools/list)"


def _read_only(
    function: Callable[..., Any], title: str
) -> tuple[Callable[..., Any], str, ToolAnnotations]:
    hints = ToolAnnotations(
        title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True
    )
    return function, _doc(function), hints


def _doc(function: Callable[..., Any]) -> str:
    return inspect.getdoc(function) or ""
