"""The leaf diff behind ``changed_fields``, in raw ``(path, before, after)`` form.

Leaves and kinds are defined in ``assay.state.snapshot``. Subtrees that are the same object
are skipped without a look, so comparing two versions that share structure costs the
changed paths, not the size of the state. Arrays are leaves here; ``follow`` reads inside a
changed leaf, where a key an expression reads may lie (``items.1.done`` in ``items``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from assay.expr.path import MISSING
from assay.expr.strings import utf16_length
from assay.expr.values import array_index
from assay.state.canonical import Path, same_value

Change = tuple[Path, Any, Any]
"""A changed leaf as ``(path, before, after)``; ``MISSING`` stands for an absent side."""


def diff_objects(a: Mapping[str, Any], b: Mapping[str, Any], path: Path, out: list[Change]) -> None:
    """Append the leaf changes between two objects, whatever their size (the root included)."""
    found = 0
    for key, old in a.items():
        new = b.get(key, MISSING)
        if new is MISSING:
            removed(old, (*path, key), out)
            continue
        found += 1
        if old is not new:
            diff_values(old, new, (*path, key), out)
    if found != len(b):
        for key, new in b.items():
            if key not in a:
                added(new, (*path, key), out)


def diff_values(a: Any, b: Any, path: Path, out: list[Change]) -> None:
    """Append the leaf changes between two values at ``path``; either may be ``MISSING``."""
    if a is b:
        return
    if a is MISSING:
        added(b, path, out)
    elif b is MISSING:
        removed(a, path, out)
    else:
        a_branches = type(a) is dict and bool(a)
        b_branches = type(b) is dict and bool(b)
        if a_branches and b_branches:
            diff_objects(a, b, path, out)
        elif a_branches or b_branches:
            removed(a, path, out)
            added(b, path, out)
        elif not same_value(a, b):
            out.append((path, a, b))


def added(value: Any, path: Path, out: list[Change]) -> None:
    """Append every leaf of ``value`` as added under ``path``."""
    if type(value) is dict and value:
        for key, item in value.items():
            added(item, (*path, key), out)
    else:
        out.append((path, MISSING, value))


def removed(value: Any, path: Path, out: list[Change]) -> None:
    """Append every leaf of ``value`` as removed from under ``path``."""
    if type(value) is dict and value:
        for key, item in value.items():
            removed(item, (*path, key), out)
    else:
        out.append((path, value, MISSING))


def compose(steps: Iterable[Sequence[Change]]) -> list[Change]:
    """The net leaf changes of consecutive steps: first ``before``, last ``after`` per path.

    Leaves that end as they began drop out, so composing the steps from one version to a
    later one equals diffing the two directly.
    """
    first: dict[Path, Any] = {}
    last: dict[Path, Any] = {}
    for step in steps:
        for path, before, after in step:
            first.setdefault(path, before)
            last[path] = after
    return [
        (path, before, last[path])
        for path, before in first.items()
        if not same_value(before, last[path])
    ]


def invert(changes: Iterable[Change]) -> list[Change]:
    """The changes that undo ``changes``: before and after swapped."""
    return [(path, after, before) for path, before, after in changes]


def follow(before: Any, after: Any, segments: Sequence[str]) -> tuple[int, Any, Any]:
    """Follow ``segments`` down both sides of a changed leaf at once, as an expression reads
    them: into objects by key, arrays by index, an array's or a string's ``length``.

    Answers how many segments were followed and the two values reached (``MISSING`` where
    a side has nothing there). It stops short where either side cannot be followed so (a
    string's character, a property of a number): the values there, compared whole, then
    stand for the one below.
    """
    depth = 0
    for segment in segments:
        old, new = _step(before, segment), _step(after, segment)
        if old is _STOP or new is _STOP:
            break
        before, after, depth = old, new, depth + 1
        if before is MISSING and after is MISSING:
            return len(segments), MISSING, MISSING  # nothing below on either side
    return depth, before, after


_STOP: Final = object()


def _step(value: Any, segment: str) -> Any:
    if value is MISSING:
        return MISSING
    if type(value) is dict:
        return value.get(segment, MISSING)
    if type(value) is list:
        index = array_index(segment)
        if index is not None:
            return value[index] if index < len(value) else MISSING
        return len(value) if segment == "length" else _STOP
    if type(value) is str and segment == "length":
        return utf16_length(value)
    return _STOP
