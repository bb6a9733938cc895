"""Tool results: a wire model as structured content, or an error that says what to fix.

Every tool answers a ``CallToolResult`` it builds itself, so the structured content is the
wire model exactly as HTTP renders it (``model_dump(mode="json")``) and the text block a
model reads is the same answer as compact JSON without its null fields.
"""

from __future__ import annotations

from typing import Final

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel

from assay.host.excerpt import EXCERPT_CHARACTERS, excerpt, excerpted

TEXT_CHARACTERS: Final = 4 * EXCERPT_CHARACTERS
"""The most characters an error's text quotes: an excerpt of what was refused, and room for
what to send instead (an action's input schema). Escaped as JSON at most six bytes each,
with the structured content's excerpts beside it, an answer stays well under 64 KiB."""


def answer(model: BaseModel) -> CallToolResult:
    """A successful result: ``model`` as structured content and as compact JSON text."""
    text = model.model_dump_json(exclude_none=True)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=model.model_dump(mode="json"),
    )


def problem(message: str, model: BaseModel | None = None) -> CallToolResult:
    """An ``isError`` result whose text says what was wrong and what to do instead, cut to
    an ``excerpt`` as its long fields are.

    ``model``, when given (a refused fire), rides along as structured content so a program
    still gets the refusal's figures and transition id.
    """
    structured = None if model is None else excerpted(model).model_dump(mode="json")
    return CallToolResult(
        content=[TextContent(type="text", text=excerpt(message, TEXT_CHARACTERS))],
        structured_content=structured,
        is_error=True,
    )
