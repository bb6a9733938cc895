"""LangChain and LangGraph: a verified tool as a LangChain ``StructuredTool``.

``langchain_tool(send_message)`` makes a tool that LangGraph's ``ToolNode`` (and any agent
built on it) runs. A call that worked, is pending, was already true or is unobservable
answers the model with the ``Verified`` as JSON in the ``ToolMessage`` content; with
``response_format="content_and_artifact"`` the ``Verified`` itself is the message's
``artifact``. A call that failed or was refused raises ``ToolException`` with the summary,
which the tool handles (``handle_tool_error``): the ``ToolMessage`` has ``status="error"``
and the summary as content, so the model cannot take it for a result. A tool that raises
anything else raises as it would without assay, and ``ToolNode``'s ``handle_tool_errors``
decides what the model sees. Parameters LangChain injects (``InjectedToolCallId``,
``InjectedState``, ``ToolRuntime``) are kept out of the record with ``verified``'s
``exclude``. ``did_it_work_tool(*tools)`` is a tool the model calls to ask how a call of any
of ``tools`` that came back pending stands now.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Any, Literal

from assay.errors import WrongTypeError
from assay.tool.asking import DESCRIPTION, NAME, inquiry
from assay.tool.decorator import VerifiedTool, tool_of
from assay.tool.result import NOT_DONE, Verified

try:
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "assay.tool.langgraph needs langchain-core and langgraph; install them with "
        "pip install 'assay[langgraph]'",
        name=error.name,
    ) from error

ResponseFormat = Literal["content", "content_and_artifact"]


def langchain_tool(
    fn: Callable[..., Any], *, response_format: ResponseFormat = "content", **options: Any
) -> StructuredTool:
    """The LangChain tool for ``fn``, a function made by ``assay.verified``: its name, its
    docstring as description, its parameters as the schema. ``options`` go to
    ``StructuredTool.from_function`` (``description``, ``return_direct``, ...)."""
    tool = tool_of(fn)
    if tool is None:
        raise WrongTypeError(
            f"langchain_tool takes a tool made by assay.verified, and "
            f"{getattr(fn, '__name__', repr(fn))!r} is not one; decorate it with "
            "@verified(substrate=..., writes=..., verify=...)",
            parameter="fn",
        )
    if response_format not in ("content", "content_and_artifact"):
        raise WrongTypeError(
            f'response_format is "content" or "content_and_artifact", not {response_format!r}',
            parameter="response_format",
        )

    def answer(returned: Verified) -> Any:
        if returned.verification.answer in NOT_DONE:
            raise ToolException(returned.summary)
        content = returned.model_dump_json()
        return (content, returned) if response_format == "content_and_artifact" else content

    if inspect.iscoroutinefunction(tool.fn):

        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return answer(await fn(*args, **kwargs))

        calls: dict[str, Any] = {"coroutine": functools.wraps(fn)(call_async)}
    else:

        def call(*args: Any, **kwargs: Any) -> Any:
            return answer(fn(*args, **kwargs))

        calls = {"func": functools.wraps(fn)(call)}
    options.setdefault("handle_tool_error", True)
    return StructuredTool.from_function(
        name=tool.name, response_format=response_format, **calls, **options
    )


def did_it_work_tool(*tools: BaseTool | Callable[..., Any], name: str = NAME) -> StructuredTool:
    """A tool the model calls with a ``transition_id`` from an earlier answer of any of
    ``tools`` (made by ``langchain_tool``, or the verified functions themselves) to hear how
    that call stands now: the ``verification`` as of now and its ``summary`` as JSON, or a
    sentence saying no call of these tools has that id."""
    asked = inquiry(tools, _verified_tool, "langchain_tool or assay.verified")

    def did_it_work(transition_id: str) -> str:
        answered = asked.answer(transition_id)
        return answered if isinstance(answered, str) else json.dumps(answered, ensure_ascii=False)

    async def did_it_work_async(transition_id: str) -> str:
        return did_it_work(transition_id)

    did_it_work.__doc__ = DESCRIPTION
    return StructuredTool.from_function(
        did_it_work, coroutine=did_it_work_async, name=name, parse_docstring=True
    )


def _verified_tool(tool: object) -> VerifiedTool | None:
    """The verified tool a ``langchain_tool`` (or a verified function) stands for."""
    if isinstance(tool, StructuredTool):
        return tool_of(tool.coroutine or tool.func)
    return tool_of(tool)
