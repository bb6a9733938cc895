"""Reading JSON text with Python's ``json``, its integer limit turned into a clear refusal.

Python converts no integer of more than ``sys.get_int_max_str_digits()`` digits (4,300 by
default) and raises a bare ``ValueError`` from inside the parser, naming neither where the
number stood nor the limit's reason. ``loads`` reads such a number as a placeholder, then
refuses the text with ``NumberTooLongError`` naming the number's path, its length and the
limit, so that every port can answer "bad input" rather than fail.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Final

from assay.errors import AssayError
from assay.expr.path import format_path

DEFAULT_DIGITS_LIMIT: Final = 4300
"""Python's own default; ``sys.get_int_max_str_digits()`` says what is in force."""


class NumberTooLongError(AssayError, ValueError):
    """A JSON integer has more digits than Python converts; ``path`` says where it is (keys
    and array indices from the top; empty when the text is the number itself), ``reason``
    what is wrong without saying where."""

    def __init__(self, path: tuple[str | int, ...], digits: int, limit: int) -> None:
        self.path = path
        self.digits = digits
        self.limit = limit
        self.reason = (
            f"an integer of {digits:,} digits, more than the {limit:,} a number may have; "
            "send it as a string if it is an identifier"
        )
        super().__init__(f"{where(path)}: {self.reason}")


class _TooLong:
    """Where a too-long integer stood, until its path is found."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


def loads(text: str | bytes, *, object_pairs_hook: Callable[..., Any] | None = None) -> Any:
    """``json.loads(text)``; ``NumberTooLongError`` for an integer too long to convert (and
    ``json.JSONDecodeError``, ``RecursionError`` or the hook's errors as ``json`` raises)."""
    limit = sys.get_int_max_str_digits() or 0
    found: list[_TooLong] = []

    def integer(digits: str) -> Any:
        length = len(digits) - digits.startswith("-")
        if limit and length > limit:
            placeholder = _TooLong(length)
            found.append(placeholder)
            return placeholder
        return int(digits)

    value = json.loads(text, parse_int=integer, object_pairs_hook=object_pairs_hook)
    if found:
        path = _path_to(value, found[0]) or ()
        raise NumberTooLongError(path, found[0].digits, limit)
    return value


def where(path: tuple[str | int, ...]) -> str:
    """A path as a state key is written (``args.ids[2]`` as ``args.ids.2``), or "the value"."""
    return format_path(tuple(str(part) for part in path)) if path else "the value"


def _path_to(value: Any, target: _TooLong) -> tuple[str | int, ...] | None:
    """The path of ``target`` in ``value``, searched without recursion (the value may nest
    as deeply as the parser allowed)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if isinstance(node, dict):
            stack.extend((item, (*path, key)) for key, item in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((item, (*path, index)) for index, item in reversed(list(enumerate(node))))
    return None
