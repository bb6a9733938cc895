"""The leaf diff behind ``changed_fields``, in raw ``(path, before, after)`` form.

Leaves and kinds are defined in ``assay.state.snapshot``. Subtrees that are the same object
are skipped without a look, so comparing two versions that share structure costs the
changed paths, not the size of the state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assay.expr.path import MISSING
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
