"""pydantic-ai: verified tools as a toolset an ``Agent`` runs, each verdict in its tool return.

``VerifiedToolset`` is a ``FunctionToolset`` that holds only functions made by
``assay.verified``. A call that worked, is pending, was already true or is unobservable
returns the ``Verified`` to the model as JSON (its ``result``, ``verification`` and
``summary``), with the ``Verified`` itself as the return part's ``metadata`` for the
application. A call that failed or was refused raises pydantic-ai's ``ToolFailed`` with the
summary: the model sees a failed tool result naming what was seen, and is not asked to
retry, since calling the action again may do it twice (``ModelRetry`` is for arguments the
model got wrong). A tool that raises raises as it would without assay. A tool taking
``ctx: RunContext`` declares ``exclude=["ctx"]``, so the context reaches the function and
not assay's record of the call. The toolset also offers the model ``did_it_work``, to ask
about a call of its tools that came back pending (``did_it_work=False`` leaves it out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from assay.errors import WrongTypeError
from assay.tool.asking import DESCRIPTION, NAME, Inquiry
from assay.tool.decorator import tool_of
from assay.tool.result import NOT_DONE, Verified

try:
    from pydantic_ai import FunctionToolset, RunContext, Tool, ToolFailed, ToolReturn
    from pydantic_ai.tools import AgentDepsT
    from pydantic_ai.toolsets import ToolsetTool
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "assay.tool.pydantic_ai needs pydantic-ai; install it with "
        "pip install 'assay[pydantic-ai]'",
        name=error.name,
    ) from error


class VerifiedToolset(FunctionToolset[AgentDepsT]):
    """A ``FunctionToolset`` of verified tools, whose answers reach the model as verdicts.

    ``VerifiedToolset([send_message], **options)`` takes ``FunctionToolset``'s options; a
    function added later (``add_function``, the ``tool`` decorator) must be verified too.
    Unless ``did_it_work=False``, the toolset holds a ``did_it_work(transition_id)`` tool
    too, answering how a call of any of its verified tools stands now."""

    def __init__(
        self, tools: Sequence[Callable[..., Any]] = (), *, did_it_work: bool = True, **options: Any
    ) -> None:
        self.inquiry = Inquiry()
        super().__init__(list(tools), **options)
        if did_it_work:

            async def ask(transition_id: str) -> dict[str, Any] | str:
                return self.inquiry.answer(transition_id)

            ask.__doc__ = DESCRIPTION
            super().add_tool(Tool(ask, name=NAME))

    def add_tool(self, tool: Tool[AgentDepsT]) -> None:
        verified_tool = tool_of(tool.function)
        if verified_tool is None:
            raise WrongTypeError(
                f"VerifiedToolset holds tools made by assay.verified, and {tool.name!r} is "
                "not one; decorate it with @verified(substrate=..., writes=..., verify=...)",
                parameter="tools",
            )
        if tool.takes_ctx:
            ctx = next(iter(verified_tool.signature.parameters))
            if ctx not in verified_tool.exclude:
                raise WrongTypeError(
                    f"{tool.name!r} takes {ctx}: RunContext, which pydantic-ai passes and "
                    f"assay would record as an argument; declare @verified(..., "
                    f"exclude=[{ctx!r}])",
                    parameter="exclude",
                )
        super().add_tool(tool)
        self.inquiry.add(verified_tool)

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[AgentDepsT],
        tool: ToolsetTool[AgentDepsT],
    ) -> Any:
        returned = await super().call_tool(name, tool_args, ctx, tool)
        return answer(returned) if isinstance(returned, Verified) else returned


def answer(returned: Verified) -> ToolReturn:
    """What the model is given for a verified call (``ToolFailed`` when it did not work)."""
    if returned.verification.answer in NOT_DONE:
        raise ToolFailed(returned.summary)
    return ToolReturn(return_value=returned.model_dump(mode="json"), metadata=returned)
