"""The ``did_it_work`` question a model asks about a verified call that came back pending.

``Inquiry`` holds the verified tools a model may ask about and answers a ``transition_id``
from one of their calls with that call's ``verification`` as of now and its ``summary``; an
id none of them made gets a plain sentence saying so. Each framework adapter wraps it as a
tool in its own idiom.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from assay.errors import GraphError, NotFoundError
from assay.tool.decorator import VerifiedTool
from assay.tool.result import summary

NAME: Final = "did_it_work"
"""The tool's name, as a pending call's summary tells the model to call it."""
DESCRIPTION: Final = """Ask whether an earlier call of a verified tool worked, as of now.

Args:
    transition_id: The transition_id from that call's verification.
"""
"""The tool's docstring: its description, and its one parameter's."""


class Inquiry:
    """The verified tools a model may ask ``did_it_work`` about, by action id."""

    def __init__(self, tools: Iterable[VerifiedTool] = ()) -> None:
        self.tools: dict[str, VerifiedTool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: VerifiedTool) -> None:
        """Let the model ask about ``tool``'s calls too (``GraphError`` for another tool of
        the same name, whose transition ids would be the same)."""
        held = self.tools.setdefault(tool.action_id, tool)
        if held is not tool:
            raise GraphError(
                f"did_it_work asks about one verified tool per name, and two are named "
                f"{tool.name!r}; give one another name=",
                action=tool.name,
                field="tools",
            )

    def answer(self, transition_id: str) -> dict[str, Any] | str:
        """``{"verification": ..., "summary": ...}`` (``null`` fields left out) for a call of
        one of the tools, as of now; a sentence saying so for an id none of them made."""
        tool = self.tools.get(transition_id.rpartition("#")[0])
        try:
            if tool is None:
                asked = ", ".join(sorted(self.tools)) or "none"
                raise NotFoundError(
                    f"no call of the verified tools asked about here ({asked}) has the "
                    f"transition id {transition_id!r}",
                    kind="transition",
                    id=transition_id,
                )
            verification = tool.did_it_work(transition_id)
        except NotFoundError as error:
            return str(error)
        return {
            "verification": verification.model_dump(mode="json", exclude_none=True),
            "summary": summary(tool.name, verification),
        }


def inquiry(
    tools: Iterable[Any], verified_tool: Callable[[Any], VerifiedTool | None], maker: str
) -> Inquiry:
    """The inquiry over an adapter's ``tools``, each resolved by ``verified_tool``; one it
    cannot resolve was not made by ``maker`` (``GraphError``)."""
    found = Inquiry()
    for tool in tools:
        resolved = verified_tool(tool)
        if resolved is None:
            name = getattr(tool, "name", None) or getattr(tool, "__name__", tool)
            raise GraphError(
                f"did_it_work_tool asks verified tools only, and {name!r} was not made by {maker}",
                field="tools",
            )
        found.add(resolved)
    return found
