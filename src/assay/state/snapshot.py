"""Snapshots of the substrate, and ``changed_fields`` between two of them.

A leaf is a value that is not an object with keys (arrays are compared whole, ``{}`` is a
leaf); objects with keys recurse. When a value changes between an object with keys and a
leaf, the old leaves are ``removed`` and the new ones ``added`` at their own paths: ``{"a":
{"b": 1}}`` to ``{"a": 2}`` is ``a.b`` removed and ``a`` added. Applying the list (removals
first, pruning the objects they empty, then the rest) turns the first substrate into the
second.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from assay.json.path import MISSING, format_path, parse_path, read_path
from assay.state.canonical import Path, same_value
from assay.state.diff import Change, diff_objects, follow

ChangeKind = Literal["changed", "added", "removed"]


@dataclass(frozen=True, slots=True, eq=False, repr=False, weakref_slot=True)
class Snapshot:
    """The substrate as of ``version``: ``objects`` is the root of a tree nobody mutates.

    Taking one is free: the store's trees are never changed in place, a change copies the
    dicts along its paths and shares the rest, so a snapshot is a root and a version.
    ``captured_at`` is the UTC time of the change that made it, ``monotonic`` the same
    instant on the store's monotonic clock. Snapshots compare by identity.
    """

    objects: dict[str, Any]
    version: int
    captured_at: datetime
    monotonic: float

    def __repr__(self) -> str:
        keys = ", ".join(list(self.objects)[:5]) + (", …" if len(self.objects) > 5 else "")
        return (
            f"Snapshot(version={self.version}, captured_at={self.captured_at.isoformat()}, "
            f"objects={{{keys}}})"
        )


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One leaf that differs: its dotted ``key``, its raw JSON values, and ``kind``.

    The absent side of an ``added`` or ``removed`` leaf is ``None``; ``kind`` tells it from
    a JSON ``null``.
    """

    key: str
    before: Any
    after: Any
    kind: ChangeKind

    @property
    def path(self) -> Path:
        """The key as segments."""
        return parse_path(self.key)

    def at(self, key: Path) -> FieldChange | None:
        """What this change does to the value at ``key``, or ``None`` when it leaves it as
        it was: the change itself when ``key`` is its leaf or above it; when ``key`` lies
        inside the leaf (an element of an array), the change there, which setting
        ``items[0].done`` does not make at ``items.1.done`` though it changes ``items``."""
        path = self.path
        if key[: len(path)] != path:
            return self if path[: len(key)] == key else None
        if len(key) == len(path):
            return self
        depth, before, after = follow(self._before, self._after, key[len(path) :])
        if same_value(before, after):
            return None
        return FieldChange(
            _key(key[: len(path) + depth]),
            None if before is MISSING else before,
            None if after is MISSING else after,
            "added" if before is MISSING else "removed" if after is MISSING else "changed",
        )

    def values_at(self, key: Path) -> tuple[Any, Any] | None:
        """The values at ``key`` on both sides of this change (``MISSING`` for none), when
        ``key`` is its leaf or lies inside it; ``None`` when they are not known from it."""
        path = self.path
        if key[: len(path)] != path:
            return None
        depth, before, after = follow(self._before, self._after, key[len(path) :])
        return (before, after) if depth == len(key) - len(path) else None

    @property
    def _before(self) -> Any:
        return MISSING if self.kind == "added" else self.before

    @property
    def _after(self) -> Any:
        return MISSING if self.kind == "removed" else self.after


def value_moved(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    key: Path,
    readings: tuple[bool, ...] = (True, False),
) -> bool:
    """Whether the value at ``key`` differs between the states ``before`` and ``after``, read
    in any of ``readings``: ``True`` as an expression reads it (an array's element by index,
    its ``length``), ``False`` as a declarative contract does (``length`` a key like any
    other). What the diff says of a leaf can miss this: an array that became an object
    lists ``items.1.done`` as added, though ``items[1].done`` read the same ``true`` on both
    sides."""
    for lengths in readings:
        old = read_path(before, key, lengths=lengths).value
        new = read_path(after, key, lengths=lengths).value
        if old is MISSING or new is MISSING:
            if old is not new:
                return True
        elif not same_value(old, new):
            return True
    return False


def changes_at(changes: Iterable[FieldChange], keys: Sequence[Path]) -> list[FieldChange]:
    """What ``changes`` do to the values at ``keys``: each change that reaches one of them
    (``FieldChange.at``), whole when a key is at or above its leaf, else narrowed to the
    keys inside it that it moved."""
    found: dict[str, FieldChange] = {}
    for change in changes:
        narrowed: list[FieldChange] = []
        for key in keys:
            moved = change.at(key)
            if moved is change:
                narrowed = [change]
                break
            if moved is not None:
                narrowed.append(moved)
        for moved in narrowed:
            found.setdefault(moved.key, moved)
    return list(found.values())


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[FieldChange]:
    """Every leaf path whose value differs from ``before`` to ``after``, sorted by key.

    Subtrees that are the same object are skipped unread, so two versions of one store
    compare in time proportional to what changed between them.
    """
    out: list[Change] = []
    diff_objects(before, after, (), out)
    return field_changes(out)


_CACHE_LIMIT: Final = 4096
_keys: dict[Path, str] = {}
"""Formatted paths: the same keys change again and again."""


def _key(path: Path) -> str:
    key = _keys.get(path)
    if key is None:
        if len(_keys) >= _CACHE_LIMIT:
            _keys.clear()
        key = _keys[path] = format_path(path)
    return key


def field_changes(changes: Iterable[Change]) -> list[FieldChange]:
    """Name raw ``(path, before, after)`` changes by their dotted keys, sorted by key.

    An empty object that gained keys is no removal: the leaf ``{}`` it was leaves the list
    when a leaf under it is added (both the log and a diff list it, so it is dropped here).
    """
    changes = list(changes)
    if any(type(before) is dict and after is MISSING for _, before, after in changes):
        changes = _without_filled_objects(changes)
    named = [
        FieldChange(
            _key(path),
            None if before is MISSING else before,
            None if after is MISSING else after,
            "added" if before is MISSING else "removed" if after is MISSING else "changed",
        )
        for path, before, after in changes
    ]
    named.sort(key=lambda change: change.key)
    return named


def _without_filled_objects(changes: list[Change]) -> list[Change]:
    """``changes`` less each removal of a ``{}`` leaf under which a leaf was added."""
    grown = {
        path[:depth]
        for path, before, _ in changes
        if before is MISSING
        for depth in range(1, len(path))
    }
    return [
        change
        for change in changes
        if not (type(change[1]) is dict and change[2] is MISSING and change[0] in grown)
    ]
