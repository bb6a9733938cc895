"""Reading JSON text with Python's ``json``, its integer limit turned into a clear refusal.

``loads`` refuses a number of more than ``sys.get_int_max_str_digits()`` digits (4,300 by
default) with ``NumberTooLongError``, naming its path, its length and the limit, where Python
raises a bare ``ValueError``. ``read_document`` reads a whole JSON document given on the
command line by the rules of the HTTP body reader (UTF-8 with an optional byte order mark,
each key once per object); other text is a ``JSONTextError`` saying which rule it broke.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, Final

from assay.errors import AssayError
from assay.json.path import format_path
from assay.state.canonical import MAX_DEPTH, RepeatedKeyError, unique_keys

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


class JSONTextError(AssayError, ValueError):
    """A JSON document breaks one of ``read_document``'s rules: ``named`` is the document as
    the message calls it, ``reason`` what is wrong with it (and where), ``kind`` which rule
    (``utf8``, ``syntax``, ``too_long``, ``too_deep``, ``duplicate_key``)."""

    def __init__(self, named: str, reason: str, *, kind: str) -> None:
        self.named = named
        self.reason = reason
        self.kind = kind
        # "the state file 'a.json' is not valid JSON: …", "… 'a.json': inbox.count: an integer…"
        super().__init__(f"{named}{': ' if kind == 'too_long' else ' '}{reason}")


def read_document(
    data: str | bytes,
    *,
    named: str,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] = unique_keys,
) -> Any:
    """The JSON value ``data`` holds; ``JSONTextError`` naming the document as ``named`` when
    it is not UTF-8 text (a leading byte order mark is ignored), not JSON, gives a key twice
    in one object, holds an integer too long to convert, or nests too deeply to parse.
    ``object_pairs_hook`` may refuse repeated keys its own way (its errors propagate)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            byte = error.object[error.start]
            reason = f"is not UTF-8 text: it holds the byte 0x{byte:02x} at offset {error.start}"
            raise JSONTextError(named, reason, kind="utf8") from None
    try:
        return loads(data.removeprefix("\ufeff"), object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as error:
        reason = f"is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        raise JSONTextError(named, reason, kind="syntax") from None
    except NumberTooLongError as error:
        raise JSONTextError(named, str(error), kind="too_long") from None
    except RecursionError:
        reason = (
            f"nests deeper than {MAX_DEPTH} levels (too deeply to read); flatten it or send "
            "less of it"
        )
        raise JSONTextError(named, reason, kind="too_deep") from None
    except RepeatedKeyError as repeated:
        reason = (
            f"gives the key {repeated.key!r} twice in one object; give each key once (JSON "
            "readers differ on which of the two counts)"
        )
        raise JSONTextError(named, reason, kind="duplicate_key") from None


def json_kind(value: object) -> str:
    """JSON's name for the kind of a value ``loads`` answered, with its article: ``an
    object``, ``an array``, ``a string``, ``a number``, ``a boolean`` or ``null``."""
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    return "a string" if isinstance(value, str) else "a number"


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
