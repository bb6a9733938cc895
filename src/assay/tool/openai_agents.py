"""Verified tools for the OpenAI Agents SDK (``pip install 'assay[openai-agents]'``).

``verified_function_tool`` is ``function_tool`` for a function whose every call assay
verifies: the SDK builds the tool's strict schema and description from the function's own
signature and docstring, and the model reads assay's answer in the tool's output, the
``Verified`` of the call as JSON (``null`` fields left out), whose ``summary`` says plainly
when the call failed, is pending or was refused. A tool that raises goes through the SDK's
``failure_error_function`` as any tool's error does (the SDK's default shows the model a fixed
message; ``failure_with_verdict`` adds assay's summary). ``did_it_work_tool`` lets the model
ask about a pending call later, and ``verification_guardrail`` is a tool output guardrail that
keeps a tool's own result from standing beside a verdict that says it did not work.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
from collections.abc import Callable, Iterable
from typing import Any, Final

try:
    from agents import FunctionTool, RunContextWrapper, function_tool
    from agents.tool_guardrails import (
        ToolGuardrailFunctionOutput,
        ToolOutputGuardrail,
        ToolOutputGuardrailData,
    )
except ImportError as missing:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "assay.tool.openai_agents needs the OpenAI Agents SDK: pip install 'assay[openai-agents]'"
    ) from missing

from assay.errors import GraphError
from assay.state.substrate import Substrate
from assay.tool.asking import DESCRIPTION, NAME, inquiry
from assay.tool.decorator import PAGE, VerifiedTool, tool_of, verified
from assay.tool.loops import LoopBinding
from assay.tool.result import VerificationKind, Verified

_NOTE: Final = "assay: "
_SDK_FAILURE: Final = "An error occurred while running the tool."
"""The SDK's ``default_tool_error_function`` message, which ``failure_with_verdict`` extends."""


def verified_function_tool(
    fn: Callable[..., Any] | None = None, /, *, substrate: Substrate, **options: Any
) -> Any:
    """``fn`` as an SDK ``FunctionTool`` whose calls are verified (``@verified_function_tool(
    substrate=..., ...)`` or ``verified_function_tool(fn, substrate=..., ...)``): ``options``
    are ``assay.verified``'s (``writes``, ``verify``, ``timeout_ms``, ``ledger``, ...), and
    the rest go to ``function_tool`` (``failure_error_function``, ``tool_output_guardrails``,
    ``timeout``, ...). ``name`` names the tool and its action. Unless ``tool_output_guardrails``
    are given, ``verification_guardrail()`` guards it: a failed or refused call reaches the
    model as its summary alone, never beside the tool's own claim of success. An SDK
    ``timeout`` must exceed ``timeout_ms``, or the SDK would cancel every call that waits for
    its verdict (``GraphError``)."""
    assay_options = {key: value for key, value in options.items() if key in _VERIFIED_OPTIONS}
    sdk_options = {key: value for key, value in options.items() if key not in _VERIFIED_OPTIONS}
    sdk_options.setdefault("tool_output_guardrails", [verification_guardrail()])

    def build(function: Callable[..., Any]) -> FunctionTool:
        tool_name = assay_options.get("name") or function.__name__
        timeout_ms = assay_options.get("timeout_ms", _VERIFIED_OPTIONS["timeout_ms"].default)
        sdk_timeout = sdk_options.get("timeout")
        if sdk_timeout is not None and sdk_timeout * 1000 <= timeout_ms:
            raise GraphError(
                f"{PAGE}.{tool_name}: timeout: the SDK's timeout of {sdk_timeout:g} s would "
                f"cancel a call still waiting for its verdict (timeout_ms={timeout_ms}); give "
                "the SDK a longer timeout, or assay a shorter timeout_ms",
                page=PAGE,
                action=tool_name,
                field="timeout",
            )
        wrapper = verified(function, substrate=substrate, **{**assay_options, "name": tool_name})
        invoke = _invoker(function, wrapper, substrate.shared(LoopBinding), tool_name)
        return function_tool(invoke, name_override=tool_name, **sdk_options)

    return build if fn is None else build(fn)


_VERIFIED_OPTIONS: Final = {
    name: parameter
    for name, parameter in inspect.signature(verified).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "substrate"
}
"""``assay.verified``'s own options; a ``verified_function_tool`` option not among them is
``function_tool``'s."""


def _invoker(
    fn: Callable[..., Any], wrapper: Any, binding: LoopBinding, tool_name: str
) -> Callable[..., Any]:
    """The async function the SDK calls: ``fn``'s parameters and docstring, answering the
    model with the call's ``Verified`` as JSON. A sync ``fn`` runs in a worker thread, as the
    SDK runs any sync tool, verified on the run's loop."""

    async def invoke(*args: Any, **kwargs: Any) -> str:
        if inspect.iscoroutinefunction(fn):
            returned: Verified = await wrapper(*args, **kwargs)
        else:
            binding.bind(asyncio.get_running_loop(), tool_name)
            returned = await asyncio.to_thread(wrapper, *args, **kwargs)
        return returned.model_dump_json(exclude_none=True)

    functools.update_wrapper(invoke, fn)
    invoke.__signature__ = inspect.signature(fn).replace(  # type: ignore[attr-defined]
        return_annotation=str
    )
    invoke.__annotations__ = {**getattr(fn, "__annotations__", {}), "return": str}
    invoke.__assay_tool__ = tool_of(wrapper)  # type: ignore[attr-defined]
    return invoke


def did_it_work_tool(*tools: FunctionTool, name: str = NAME) -> FunctionTool:
    """A tool the model calls with a ``transition_id`` from an earlier answer of any of
    ``tools`` (made by ``verified_function_tool``) to hear how that call stands now."""
    asked = inquiry(tools, _verified_tool, "verified_function_tool")

    async def did_it_work(transition_id: str) -> str:
        answered = asked.answer(transition_id)
        return answered if isinstance(answered, str) else json.dumps(answered, ensure_ascii=False)

    did_it_work.__doc__ = DESCRIPTION
    return function_tool(did_it_work, name_override=name)


def _verified_tool(tool: object) -> VerifiedTool | None:
    """The verified tool a ``verified_function_tool`` stands for; ``None`` for another tool."""
    invoke = getattr(tool, "__wrapped__", None) if isinstance(tool, FunctionTool) else None
    return tool_of(invoke)


def failure_with_verdict(context: RunContextWrapper[Any], error: Exception) -> str:
    """A ``failure_error_function`` that tells the model what assay recorded of a verified
    tool that raised (its summary names the exception and its message), beside the SDK's own
    fixed message; an error assay did not record gets the fixed message alone."""
    notes = [note for note in getattr(error, "__notes__", ()) if note.startswith(_NOTE)]
    if not notes:
        return _SDK_FAILURE
    return f"{_SDK_FAILURE} {notes[-1].removeprefix(_NOTE)}"


def verification_guardrail(
    *, blocks: Iterable[VerificationKind] = ("failed", "refused"), halt: bool = False
) -> ToolOutputGuardrail[Any]:
    """A tool output guardrail for verified tools: an answer in ``blocks`` replaces the
    output with the summary alone, so the tool's own result (``{"status": "sent"}``) cannot
    read as success, or with ``halt`` stops the run (``ToolOutputGuardrailTripwireTriggered``).
    Its ``output_info`` is the verification's answer; other outputs pass."""
    blocked = frozenset(blocks)

    def guard(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        answer, line = _verdict(data.output)
        if answer is None or answer not in blocked:
            return ToolGuardrailFunctionOutput.allow(output_info=answer)
        if halt:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=answer)
        return ToolGuardrailFunctionOutput.reject_content(
            f"assay withheld this tool's result, since its call did not work: {line}",
            output_info=answer,
        )

    return ToolOutputGuardrail(guardrail_function=guard, name="assay_verification")


def _verdict(output: Any) -> tuple[str | None, str]:
    """The answer and summary in a verified tool's output; ``None`` for any other output."""
    try:
        parsed = json.loads(output) if isinstance(output, str) else None
    except ValueError:
        return None, ""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("verification"), dict):
        return None, ""
    answer = parsed["verification"].get("answer")
    return (answer if isinstance(answer, str) else None), str(parsed.get("summary", ""))
