"""Bounded excerpts of refusals: an answer names what was wrong without quoting all of it.

A refusal often quotes the value it refused (``args['message_id']: 'xx…' is too long``),
and an MCP answer carries it more than once (its text, the refused fire's ``error`` and
``why``): a 5 MiB argument made a 15.7 MB answer, past what a client's stdio reader takes.
``excerpt`` keeps a refusal's start, which names the field, and its end, which says why and
what to do, and says how much it left out between them; every port's refusal goes through
it.
"""

from __future__ import annotations

from typing import Final, TypeVar

from pydantic import BaseModel

EXCERPT_CHARACTERS: Final = 1000
"""How many characters of a refusal an answer quotes at most, its marker aside."""

Model = TypeVar("Model", bound=BaseModel)


def excerpt(text: str, limit: int = EXCERPT_CHARACTERS) -> str:
    """``text`` itself when it holds at most ``limit`` characters; else its first and last
    ``limit // 2`` characters around a marker saying how many were left out."""
    if len(text) <= limit:
        return text
    keep = limit // 2
    left_out = len(text) - 2 * keep
    return f"{text[:keep]}…[{left_out:,} characters left out]…{text[len(text) - keep :]}"


def excerpted(model: Model, limit: int = EXCERPT_CHARACTERS) -> Model:
    """``model`` with each of its string fields longer than ``limit`` cut by ``excerpt``
    (a refused fire's ``error`` and ``why`` quote what was refused)."""
    long = {
        name: excerpt(value, limit)
        for name, value in model
        if isinstance(value, str) and len(value) > limit
    }
    return model.model_copy(update=long) if long else model
