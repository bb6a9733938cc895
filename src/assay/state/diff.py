"""The leaf diff behind ``changed_fields``, in raw ``(path, before, after)`` form.

Leaves and kinds are defined in ``assay.state.snapshot``. Subtrees that are the same object
are skipped without a look, so comparing two versions that share structure costs the
changed paths, not the size of the state. Arrays are leaves here; ``follow`` reads inside a
changed leaf, where a key an expression reads may lie (``items.1.done`` in ``items``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from assay.json.path import MISSING
from assay.json.strings import utf16_length
from assay.json.values import array_index
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


def diff_paths(
    before: Mapping[str, Any], after: Mapping[str, Any], paths: Iterable[Path], out: list[Change]
) -> None:
    """Append the change at each of ``paths`` (each once) whose leaf differs between the
    trees: given every path that may have changed, the leaf diff of the two trees. A path
    is left as soon as both trees share the object on it."""
    for path in paths:
        old: Any = before
        new: Any = after
        for segment in path:
            if old is new:
                break  # shared from here down (both missing included): no change
            old = old.get(segment, MISSING) if type(old) is dict else MISSING
            new = new.get(segment, MISSING) if type(new) is dict else MISSING
        else:
            if type(old) is dict and old:
                old = MISSING  # an object with keys: its leaves lie below
            if type(new) is dict and new:
                new = MISSING
            if old is not new and (old is MISSING or new is MISSING or not same_value(old, new)):
                out.append((path, old, new))


def diff_under(
    before: Mapping[str, Any], after: Mapping[str, Any], keys: Iterable[Path], out: list[Change]
) -> None:
    """Append the leaf changes between the trees that are related to one of ``keys``: at a
    key, under it, or at a leaf above it; exactly those of ``diff_objects`` at the root,
    found by reading both trees along the keys, whatever changed elsewhere.

    A ``{}`` above a key that gained keys is no change here: ``field_changes`` drops its
    removal when a leaf under it was added, and that leaf may lie beside the key.
    """
    seen: set[Path] = set()
    for key in keys:
        old: Any = before
        new: Any = after
        for depth in range(len(key)):
            if depth:  # a leaf above the key
                path = key[:depth]
                old_leaf = MISSING if type(old) is dict and old else old
                new_leaf = MISSING if type(new) is dict and new else new
                filled = type(old) is dict and not old and type(new) is dict and new
                if path not in seen and not filled and not _same_leaf(old_leaf, new_leaf):
                    seen.add(path)
                    out.append((path, old_leaf, new_leaf))
            old = old.get(key[depth], MISSING) if type(old) is dict else MISSING
            new = new.get(key[depth], MISSING) if type(new) is dict else MISSING
            if old is MISSING and new is MISSING:
                break
        else:
            found: list[Change] = []
            diff_values(old, new, key, found)
            for change in found:
                if change[0] not in seen:
                    seen.add(change[0])
                    out.append(change)


def _same_leaf(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return a is b or same_value(a, b)
