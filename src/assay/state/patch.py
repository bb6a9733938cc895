"""Changes to the substrate by path copying: merge patch (RFC 7396), set, full replacement.

Applying a change copies only the dicts along the changed paths and shares every other
subtree, so an old snapshot stays valid and a value equal to the stored one keeps the stored
object. Each function appends one ``(path, before, after)`` per leaf that differs to
``changes``, the leaves ``changed_fields(old, new)`` reports; the result is the old object
itself exactly when nothing was appended.
"""

from __future__ import annotations

from typing import Any

from assay.json.path import MISSING
from assay.state.canonical import Path, canonical_value
from assay.state.diff import Change, added, diff_values, removed


class Replace:
    """A value to store wholesale at its path, not to merge: what ``set`` reports carry."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 ``MergePatch(target, patch)``: ``null`` deletes, objects merge, else replace.

    Neither argument is mutated; the result shares unchanged subtrees with ``target`` and
    holds copies of the patch's values. ``StateError`` if the patch is not JSON.
    """
    patch = canonical_value(patch)
    if type(patch) is not dict:
        return patch
    return merge_into(target if type(target) is dict else {}, patch, (), [])


def merge_into(
    target: dict[str, Any], patch: dict[str, Any], path: Path, changes: list[Change]
) -> dict[str, Any]:
    """Apply a canonical merge patch (or a ``set`` tree of ``Replace`` leaves) to ``target``."""
    out: dict[str, Any] | None = None
    for key, op in patch.items():
        old = target.get(key, MISSING)
        here = (*path, key)
        if op is None:
            if old is MISSING:
                continue
            removed(old, here, changes)
            new: Any = MISSING
        elif type(op) is dict and type(old) is dict and old:
            new = merge_into(old, op, here, changes)
            if new is old:
                continue
            if not new:
                changes.append((here, MISSING, new))  # the emptied object is now a leaf
        else:
            if type(op) is Replace:
                value = op.value
            elif type(op) is dict:
                value = _strip(op)
            else:
                value = op
            new = reconcile(old, value, here, changes)
            if new is old:
                continue
        if out is None:
            out = dict(target)
        if new is MISSING:
            del out[key]
        else:
            out[key] = new
    return target if out is None else out


def _strip(patch: dict[str, Any]) -> dict[str, Any]:
    """A merge patch applied to nothing: its nulls dropped, its ``Replace`` leaves unwrapped."""
    out: dict[str, Any] = {}
    for key, op in patch.items():
        if op is None:
            continue
        if type(op) is dict:
            out[key] = _strip(op)
        elif type(op) is Replace:
            out[key] = op.value
        else:
            out[key] = op
    return out


def reconcile(old: Any, new: Any, path: Path, changes: list[Change]) -> Any:
    """Store the fresh value ``new`` where ``old`` was, keeping every part of ``old`` it equals.

    ``new`` must be a fresh canonical value owned by the caller: its dicts are updated in
    place to point at ``old``'s equal subtrees. Returns ``old`` itself when they are equal.
    """
    if old is MISSING:
        added(new, path, changes)
        return new
    if type(old) is dict and type(new) is dict and old and new:
        return reconcile_object(old, new, path, changes)
    count = len(changes)
    diff_values(old, new, path, changes)
    return old if len(changes) == count else new


def reconcile_object(
    old: dict[str, Any], new: dict[str, Any], path: Path, changes: list[Change]
) -> dict[str, Any]:
    """``reconcile`` for two objects, empty ones included (the root is never a leaf)."""
    same = len(old) == len(new)
    found = 0
    for key, value in new.items():
        previous = old.get(key, MISSING)
        if previous is MISSING:
            added(value, (*path, key), changes)
            same = False
            continue
        found += 1
        if reconcile(previous, value, (*path, key), changes) is previous:
            new[key] = previous
        else:
            same = False
    if found != len(old):
        for key, previous in old.items():
            if key not in new:
                removed(previous, (*path, key), changes)
    return old if same else new
