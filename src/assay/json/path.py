"""Dotted state paths: ``inbox.sent_count``, ``orders["a.b"].status``, ``items[0]``.

A path is a tuple of string segments. In text, a segment is written after a dot (any run of
characters other than ``.``, ``[`` and ``]``) or in brackets: a quoted string with JavaScript
escapes (``["a.b"]``, ``['it\\'s']``) or a canonical array index (``[0]``). Arrays are
indexed by canonical decimal segments (``"0"``, ``"12"``; never ``"01"`` or ``"-1"``).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final, Literal, NamedTuple

from assay.errors import ContractError
from assay.json.strings import utf16_length
from assay.json.values import array_index


class _Missing(enum.Enum):
    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""What ``read_path`` answers for a path that leads nowhere; distinct from a JSON ``null``."""

Missing = Literal[_Missing.MISSING]

_PLAIN = re.compile(r"[A-Za-z0-9_$-]+|\{[A-Za-z_][A-Za-z0-9_]*\}")
_INDEX = re.compile(r"0|[1-9][0-9]*")
_SIMPLE_ESCAPES: Final = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\n": "",
}


def _path_error(text: str, position: int, problem: str, instead: str) -> ContractError:
    return ContractError(
        f"invalid path {text!r} at position {position}: {problem}; {instead}", key=text
    )


def parse_path(text: str) -> tuple[str, ...]:
    """Split a dotted path into its segments; raise ``ContractError`` naming the position.

    ``parse_path(format_path(segments)) == segments`` for every non-empty tuple of strings.
    Settlement parses the same few keys again and again, so answers are cached.
    """
    if type(text) is str:
        return _parse_path_cached(text)
    return _parse_path(text)


@lru_cache(maxsize=4096)
def _parse_path_cached(text: str) -> tuple[str, ...]:
    return _parse_path(text)


def _parse_path(text: str) -> tuple[str, ...]:
    if not isinstance(text, str):
        raise ContractError(f"a path must be a string, got {type(text).__name__}")
    if not text:
        raise ContractError(
            "invalid path '': it is empty; write a dotted path such as inbox.sent_count", key=""
        )
    segments: list[str] = []
    i, n = 0, len(text)
    while True:
        if text[i] == "[":
            segment, i = _parse_bracket(text, i)
        else:
            start = i
            while i < n and text[i] not in ".[]":
                i += 1
            if i == start:
                if text[i] == "]":
                    raise _path_error(
                        text, i, "']' without a matching '['", 'write a[0] or a["key"]'
                    )
                raise _path_error(
                    text,
                    i,
                    "empty segment before '.'",
                    'remove the extra dot; write [""] for a key that is the empty string',
                )
            segment = text[start:i]
        segments.append(segment)
        if i == n:
            return tuple(segments)
        char = text[i]
        if char == ".":
            i += 1
            if i == n:
                raise _path_error(
                    text, i, "the path ends with '.'", "remove the trailing dot or name the key"
                )
            if text[i] == "[":
                raise _path_error(text, i - 1, "'.' before '['", f"write {text[: i - 1]}{text[i:]}")
        elif char == "]":
            raise _path_error(text, i, "']' without a matching '['", 'write a[0] or a["key"]')
        elif char != "[":
            raise _path_error(
                text, i, f"{char!r} after ']'", "continue with '.' or '[', or end the path"
            )


def _parse_bracket(text: str, i: int) -> tuple[str, int]:
    """Read ``[...]`` starting at ``text[i] == "["``; return the segment and the next index."""
    n = len(text)
    j = i + 1
    if j < n and text[j] in "\"'":
        segment, j = _parse_string(text, j)
    else:
        start = j
        while j < n and text[j] not in "]['\"":
            j += 1
        inner = text[start:j]
        if j == n:
            raise _path_error(text, i, "'[' is never closed", 'close it: write a[0] or a["key"]')
        if not _INDEX.fullmatch(inner):
            quoted = f"{text[:i]}[{json.dumps(inner, ensure_ascii=False)}]{text[j + 1 :]}"
            if inner.isascii() and inner.isdigit():
                problem = f"{inner!r} is not a canonical array index"
                instead = f"write {text[:i]}[{int(inner)}]{text[j + 1 :]}, or {quoted} for a key"
            else:
                problem = "a key in brackets must be quoted or an array index"
                instead = f"write {quoted}"
            raise _path_error(text, start, problem, instead)
        segment = inner
    if j >= n or text[j] != "]":
        raise _path_error(
            text, j, "expected ']' after the key in brackets", 'close the bracket: a["key"]'
        )
    return segment, j + 1


def _parse_string(text: str, i: int) -> tuple[str, int]:
    """Read a quoted string at ``text[i]`` with JavaScript escapes; return it and the next index."""
    quote = text[i]
    n = len(text)
    out: list[str] = []
    j = i + 1
    while j < n:
        char = text[j]
        if char == quote:
            return "".join(out), j + 1
        if char != "\\":
            out.append(char)
            j += 1
            continue
        j += 1
        if j == n:
            break
        esc = text[j]
        if esc in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[esc])
            j += 1
        elif esc == "0" and not (j + 1 < n and text[j + 1].isdigit()):
            out.append("\0")
            j += 1
        elif esc.isdigit():
            raise _path_error(
                text, j - 1, f"octal escape '\\{esc}'", "write \\u00XX with the code in hex"
            )
        elif esc == "x":
            code, j = _hex(text, j + 1, 2, j - 1)
            out.append(chr(code))
        elif esc == "u":
            if j + 1 < n and text[j + 1] == "{":
                end = text.find("}", j + 2)
                digits = text[j + 2 : end] if end != -1 else ""
                if not digits or any(c not in "0123456789abcdefABCDEF" for c in digits):
                    raise _path_error(
                        text, j - 1, "malformed \\u{...} escape", "write \\u{1F600} or \\uXXXX"
                    )
                code = int(digits, 16)
                if code > 0x10FFFF:
                    raise _path_error(
                        text, j - 1, "code point beyond U+10FFFF", "write at most \\u{10FFFF}"
                    )
                out.append(chr(code))
                j = end + 1
            else:
                code, j = _hex(text, j + 1, 4, j - 1)
                if 0xD800 <= code <= 0xDBFF and text.startswith("\\u", j):
                    low = text[j + 2 : j + 6]
                    if len(low) == 4 and all(c in "0123456789abcdefABCDEF" for c in low):
                        low_code = int(low, 16)
                        if 0xDC00 <= low_code <= 0xDFFF:
                            code = 0x10000 + ((code - 0xD800) << 10) + (low_code - 0xDC00)
                            j += 6
                out.append(chr(code))
        else:
            out.append(esc)
            j += 1
    raise _path_error(
        text, i, f"the string opened by {quote} is never closed", f"close it with {quote}]"
    )


def _hex(text: str, start: int, width: int, escape_at: int) -> tuple[int, int]:
    digits = text[start : start + width]
    if len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise _path_error(
            text,
            escape_at,
            f"malformed escape {text[escape_at : start + width]!r}",
            f"write exactly {width} hex digits",
        )
    return int(digits, 16), start + width


def format_path(segments: Iterable[str]) -> str:
    """Write segments as path text: plain segments after dots, others as ``["..."]``.

    Plain means ASCII letters, digits, ``_``, ``$`` and ``-``, or a ``{name}`` placeholder.
    """
    parts: list[str] = []
    for segment in segments:
        if _PLAIN.fullmatch(segment):
            parts.append(f".{segment}" if parts else segment)
        else:
            parts.append(f"[{json.dumps(segment, ensure_ascii=False)}]")
    return "".join(parts)


class PathRead(NamedTuple):
    """The outcome of reading a path: its ``value``, or ``MISSING`` and where it stopped.

    ``resolved`` counts the segments that led somewhere; on a miss, ``parent`` is the value
    reached by them (the state itself when ``resolved == 0``) and ``segments[resolved]`` is
    the segment that could not be followed.
    """

    segments: tuple[str, ...]
    value: Any
    resolved: int
    parent: Any = None

    @property
    def found(self) -> bool:
        return self.value is not MISSING

    def explain(self) -> str:
        """Say which part of the path was missing, e.g. ``inbox.x is missing (inbox has ...)``."""
        path = format_path(self.segments)
        if self.found:
            return f"{path} is present"
        where = format_path(self.segments[: self.resolved]) if self.resolved else "the state"
        segment = self.segments[self.resolved]
        parent = self.parent
        if isinstance(parent, Mapping):
            why = f"{where} has no key {segment!r}"
        elif isinstance(parent, list | tuple):
            if array_index(segment) is not None:
                count = len(parent)
                why = f"{where} has {count} element{'' if count == 1 else 's'}"
            else:
                why = f"{where} is an array, and {segment!r} is not an index"
        else:
            why = f"{where} is {json_type_name(parent)}, not an object or array"
        return f"{path} is missing ({why})"


def read_path(state: Any, segments: Sequence[str], *, lengths: bool = False) -> PathRead:
    """Follow ``segments`` from ``state`` through objects and arrays; never raises.

    With ``lengths``, as an expression reads them: an array's or a string's ``length`` is
    read too, as in JavaScript (a string's in UTF-16 code units), so ``a.b.length`` is 2 when
    ``a.b`` is ``[1, 2]``. A state path names keys and indices only.
    """
    value = state
    for depth, segment in enumerate(segments):
        if type(value) is dict or isinstance(value, Mapping):
            child = value.get(segment, MISSING)
        elif isinstance(value, list | tuple) and (index := array_index(segment)) is not None:
            child = value[index] if index < len(value) else MISSING
        elif lengths and segment == "length" and isinstance(value, list | tuple | str):
            child = utf16_length(value) if isinstance(value, str) else len(value)
        else:
            child = MISSING
        if child is MISSING:
            return PathRead(tuple(segments), MISSING, depth, value)
        value = child
    return PathRead(tuple(segments), value, len(segments))


def json_type_name(value: Any) -> str:
    """Name a value's JSON type with its article: ``a string``, ``null``, ``an array``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a non-JSON value ({type(value).__name__})"
