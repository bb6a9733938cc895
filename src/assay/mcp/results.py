"""Tool results: a wire model as structured content, or an error that says what to fix.

Every tool answers a ``CallToolResult`` it builds itself, so the structured content is the
wire model exactly as HTTP renders it (``model_dump(mode="json")``) and the text block a
model reads is the same answer as compact JSON without its null fields.
"""

from __future__ import annotations

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel


def answer(model: BaseModel) -> CallToolResult:
    """A successful result: ``model`` as structured content and as compact JSON text."""
    text = model.model_dump_json(exclude_none=True)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json"),
    )


def problem(message: str, model: BaseModel | None = None) -> CallToolResult:
    """An ``isError`` result whose text says what was wrong and what to do instead.

    ``model``, when given (a refused fire), rides along as structured content so a program
    still gets the refusal's figures and transition id.
    """
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        structured_content=None if model is None else model.model_dump(mode="json"),
        is_error=True,
    )
