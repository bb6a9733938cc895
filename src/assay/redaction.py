"""Redaction: configured key patterns whose values never appear in a summary (SPEC §6).

Patterns are dotted paths (bracket form allowed) whose segments may hold wildcards: ``*``
within one segment, and a segment ``**`` for any number of segments. A path is covered when it
or any ancestor matches. A pattern withholds every value whose path it could spell, so a dot
between two pattern segments also matches a dot inside a key (``u.a.b`` covers
``u["a.b"]``); a dot written inside brackets matches only a dot inside a key.
docs/operations.md, "Redaction", has the rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, Final

from assay.errors import WrongTypeError
from assay.json.path import parse_path
from assay.json.values import number_to_string

REDACTED: Final = "[redacted]"
"""What a summary shows in place of a covered value nested inside the value it summarizes."""

SUMMARY_LIMIT: Final = 200
"""The default length, in characters, of a value summary, its ellipsis included."""

ELLIPSIS: Final = "…"

_CACHE_LIMIT = 4096
_END: Final[Any] = object()

_Token = str | tuple[str, ...] | None
"""A pattern segment: a literal, the parts of a ``*`` glob split at the stars, or ``**``."""

_States = frozenset[tuple[int, int]]
"""Positions (pattern index, token index) still alive after reading some path segments."""

_Program = tuple[str, frozenset[int]] | None
"""A token read character by character: its characters without the stars, and the offsets
at which a ``*`` may absorb any character; ``None`` for ``**``."""

_INSIDE_ANY: Final = -1
"""The offset of a position inside a ``**`` that is reading a key's characters."""


def _compile_token(segment: str) -> _Token:
    if segment == "**":
        return None
    if "*" in segment:
        return tuple(segment.split("*"))
    return segment


def _compile_program(token: _Token) -> _Program:
    if token is None:
        return None
    if isinstance(token, str):
        return token, frozenset()
    stars: set[int] = set()
    length = 0
    for part in token[:-1]:
        length += len(part)
        stars.add(length)
    return "".join(token), frozenset(stars)


def _glob_match(parts: tuple[str, ...], text: str) -> bool:
    first, last = parts[0], parts[-1]
    if len(text) < len(first) + len(last) or not text.startswith(first):
        return False
    end = len(text) - len(last)
    if not text.endswith(last):
        return False
    position = len(first)
    for middle in parts[1:-1]:
        found = text.find(middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


class Redaction:
    """A set of key patterns; ``covers`` a path, and ``summarize`` a value with them withheld.

    Answers are cached per path. ``Redaction.none()`` covers nothing.
    """

    __slots__ = ("_cache", "_initial", "_patterns", "_programs", "_tokens")

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        texts = tuple(patterns)
        if isinstance(patterns, str):
            raise WrongTypeError(
                f"Redaction takes an iterable of patterns, not one string; write [{patterns!r}]",
                parameter="patterns",
            )
        self._patterns = texts
        self._tokens = tuple(tuple(_compile_token(s) for s in parse_path(p)) for p in texts)
        self._programs = tuple(tuple(_compile_program(t) for t in ts) for ts in self._tokens)
        self._initial = self._closure((i, 0) for i in range(len(self._tokens)))
        self._cache: dict[tuple[str, ...], _States | None] = {}

    @classmethod
    def none(cls) -> Redaction:
        """A redaction that covers nothing."""
        return _NONE

    @property
    def patterns(self) -> tuple[str, ...]:
        """The patterns as configured."""
        return self._patterns

    def __repr__(self) -> str:
        return f"Redaction({list(self._patterns)!r})"

    def covers(self, segments: Sequence[str]) -> bool:
        """True when the path or one of its ancestors matches a pattern."""
        return self._states_at(segments) is None

    def summarize(
        self, segments: Sequence[str], value: Any, limit: int = SUMMARY_LIMIT
    ) -> str | None:
        """Render the value at ``segments`` as compact JSON of at most ``limit`` characters.

        ``None`` when the path is covered; a covered value nested inside is shown as the
        ``REDACTED`` marker. A longer rendering is cut and ends with ``…``. Never raises,
        and does work in proportion to ``limit``, not to the size of the value.
        """
        states = self._states_at(segments)
        if states is None:
            return None
        if type(value) not in _SCALARS and isinstance(value, Mapping | list | tuple):
            rendered = self._render(value, states, limit)
        else:
            rendered = _scalar(value, limit)
        if len(rendered) > limit:
            return rendered[: max(limit - len(ELLIPSIS), 0)] + ELLIPSIS
        return rendered

    def _states_at(self, segments: Sequence[str]) -> _States | None:
        """The live pattern positions after ``segments``; ``None`` when they are covered."""
        if not self._tokens:
            return self._initial
        key = tuple(segments)
        try:
            return self._cache[key]
        except KeyError:
            pass
        states: _States | None = self._initial
        if self._accepts(self._initial):
            states = None
        else:
            for segment in key:
                states = self._advance(states, segment)
                if not states:
                    break
                if self._accepts(states):
                    states = None
                    break
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = states
        return states

    def _closure(self, positions: Iterable[tuple[int, int]]) -> _States:
        found: set[tuple[int, int]] = set()
        for index, start in positions:
            tokens = self._tokens[index]
            position = start
            found.add((index, position))
            while position < len(tokens) and tokens[position] is None:
                position += 1
                found.add((index, position))
        return frozenset(found)

    def _advance(self, states: _States | None, segment: str) -> _States:
        if "." in segment:
            return self._advance_dotted(states or frozenset(), segment)
        moved: list[tuple[int, int]] = []
        for index, position in states or ():
            tokens = self._tokens[index]
            if position == len(tokens):
                continue
            token = tokens[position]
            if token is None:
                moved.append((index, position))
            elif token == segment if isinstance(token, str) else _glob_match(token, segment):
                moved.append((index, position + 1))
        return self._closure(moved) if moved else frozenset()

    def _advance_dotted(self, states: _States, segment: str) -> _States:
        """Read a key that holds dots character by character, each dot a possible step.

        The answer holds an accepting position when a pattern ends at one of the key's dots.
        Work is in proportion to the key's length times the patterns' size.
        """
        live: set[tuple[int, int, int]] = set()
        self._enter(live, states)
        for char in segment:
            moved: set[tuple[int, int, int]] = set()
            steps: list[tuple[int, int]] = []
            for index, position, offset in live:
                program = self._programs[index][position]
                if program is None:
                    moved.add((index, position, _INSIDE_ANY))
                    if char == ".":
                        steps.append((index, position + 1))
                    continue
                chars, stars = program
                if offset < len(chars) and chars[offset] == char:
                    moved.add((index, position, offset + 1))
                if offset in stars:
                    moved.add((index, position, offset))
                if char == "." and offset == len(chars):
                    steps.append((index, position + 1))
            if steps:
                stepped = self._closure(steps)
                if self._accepts(stepped):
                    return stepped
                self._enter(moved, stepped)
            if not moved:
                return frozenset()
            live = moved
        ends: list[tuple[int, int]] = []
        for index, position, offset in live:
            program = self._programs[index][position]
            if program is None:
                ends.append((index, position))
            elif offset == len(program[0]):
                ends.append((index, position + 1))
        return self._closure(ends) if ends else frozenset()

    def _enter(self, live: set[tuple[int, int, int]], states: _States) -> None:
        for index, position in states:
            programs = self._programs[index]
            if position < len(programs):
                live.add((index, position, 0 if programs[position] is not None else _INSIDE_ANY))

    def _accepts(self, states: _States) -> bool:
        return any(position == len(self._tokens[index]) for index, position in states)

    def _render(self, value: Any, states: _States, limit: int) -> str:
        out: list[str] = []
        size = 0
        stack: list[list[Any]] = []
        pending: tuple[Any, _States] | None = (value, states)
        while True:
            if pending is not None:
                item, item_states = pending
                pending = None
                if isinstance(item, Mapping):
                    text = "{"
                    stack.append([iter(item.items()), True, item_states, 0])
                elif isinstance(item, list | tuple):
                    text = "["
                    stack.append([enumerate(item), False, item_states, 0])
                else:
                    text = _scalar(item, limit - size + 1)
                out.append(text)
                size += len(text)
            if size > limit or not stack:
                break
            frame = stack[-1]
            entry = next(frame[0], _END)
            if entry is _END:
                text = "}" if frame[1] else "]"
                stack.pop()
            else:
                key, child = entry
                segment = key if isinstance(key, str) else str(key)
                text = "," if frame[3] else ""
                frame[3] += 1
                if frame[1]:
                    text += _string(segment, limit - size) + ":"
                child_states = self._advance(frame[2], segment) if frame[2] else frame[2]
                if child_states and self._accepts(child_states):
                    text += json.dumps(REDACTED)
                else:
                    pending = (child, child_states)
            out.append(text)
            size += len(text)
        return "".join(out)


def _string(text: str, budget: int) -> str:
    text = text[: max(budget, 0) + 1]
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate has no UTF-8 form; escaping keeps the summary encodable.
            return encode_basestring_ascii(text)
    return encode_basestring(text)


def _scalar(value: Any, budget: int) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value, budget)
    if isinstance(value, int):
        try:
            return repr(int(value))
        except ValueError:
            return _string(f"<integer of {value.bit_length()} bits>", budget)
    if isinstance(value, float):
        return number_to_string(value)  # as JSON.stringify writes it: 1e-7, not 1e-07
    return _string(f"<{type(value).__name__}>", budget)


_NONE: Final = Redaction(())
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
"""Exact types rendered as scalars without the slower abstract ``Mapping`` check."""
