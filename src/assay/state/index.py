"""Key-indexed subscriptions: wake exactly the waiters whose keys a change touches.

A change at path ``p`` wakes a waiter when ``p`` is a prefix of one of its keys or one of its
keys is a prefix of ``p``; a changed leaf whose enclosing object appeared or went also wakes
the waiters on every key under that object. Keys live in a trie over path segments, so a
change costs the length of its paths plus the waiters it wakes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from assay.errors import WrongTypeError
from assay.json.path import MISSING, format_path, parse_path
from assay.state.canonical import Path

if TYPE_CHECKING:
    from assay.state.snapshot import Snapshot

ChangedPaths = tuple[Path, ...]
"""The leaf paths one version changed, as segments (``format_path`` shows one)."""

Callback = Callable[["Snapshot", ChangedPaths], object]
"""Called with the new snapshot and every leaf path its version changed."""


class Subscription:
    """A waiter's registration; ``cancel()`` ends it and may be called any number of times."""

    __slots__ = ("_index", "_order", "_paths", "callback")

    def __init__(
        self, index: KeyIndex, paths: tuple[Path, ...] | None, callback: Callback, order: int
    ) -> None:
        self._index: KeyIndex | None = index
        self._paths = paths
        self._order = order
        self.callback = callback

    @property
    def active(self) -> bool:
        """Whether changes may still call the callback."""
        return self._index is not None

    @property
    def keys(self) -> tuple[str, ...] | None:
        """The dotted keys watched, or ``None`` for a subscription to every change."""
        return None if self._paths is None else tuple(format_path(p) for p in self._paths)

    def cancel(self) -> None:
        """Stop calling the callback; the index forgets this subscription, and this
        subscription its callback (a bound method would keep its object alive in a cycle:
        the object holds its subscription)."""
        index, self._index = self._index, None
        self.callback = _cancelled
        if index is not None:
            index.remove(self, self._paths)

    def __repr__(self) -> str:
        watched = "every change" if self._paths is None else ", ".join(self.keys or ())
        state = "" if self.active else ", cancelled"
        return f"<Subscription to {watched}{state}>"


def _cancelled(snapshot: Snapshot, paths: ChangedPaths) -> None:
    """The callback of a cancelled subscription: nothing."""


class _Node:
    """A trie node: the waiters whose key ends here, and the next segments."""

    __slots__ = ("children", "waiters")

    def __init__(self) -> None:
        self.children: dict[str, _Node] | None = None
        self.waiters: dict[Subscription, None] | None = None


_ORDER = attrgetter("_order")


class KeyIndex:
    """Subscriptions by key; ``woken(paths)`` answers which a change wakes, in subscribe order."""

    __slots__ = ("_count", "_everything", "_order", "_root")

    def __init__(self) -> None:
        self._root = _Node()
        self._everything: dict[Subscription, None] = {}
        self._order = itertools.count()
        self._count = 0

    def __len__(self) -> int:
        """How many subscriptions are active."""
        return self._count

    def subscribe(self, keys: Iterable[str] | None, callback: Callback) -> Subscription:
        """Register ``callback`` for changes touching ``keys`` (every change for ``None``)."""
        if not callable(callback):
            raise WrongTypeError(
                f"callback must be callable, not {type(callback).__name__}", parameter="callback"
            )
        if isinstance(keys, str):
            raise WrongTypeError(
                f"keys must be an iterable of dotted paths, not one string; write [{keys!r}]",
                parameter="keys",
            )
        paths = None if keys is None else tuple(dict.fromkeys(parse_path(key) for key in keys))
        subscription = Subscription(self, paths, callback, next(self._order))
        if paths is None:
            self._everything[subscription] = None
        for path in paths or ():
            node = self._root
            for segment in path:
                if node.children is None:
                    node.children = {}
                child = node.children.get(segment)
                if child is None:
                    child = node.children[segment] = _Node()
                node = child
            if node.waiters is None:
                node.waiters = {}
            node.waiters[subscription] = None
        self._count += 1
        return subscription

    def remove(self, subscription: Subscription, paths: tuple[Path, ...] | None) -> None:
        """Forget a subscription and prune the trie nodes only it kept alive."""
        self._count -= 1
        if paths is None:
            del self._everything[subscription]
        for path in paths or ():
            trail = [self._root]
            for segment in path:
                children = trail[-1].children
                assert children is not None
                trail.append(children[segment])
            waiters = trail[-1].waiters
            assert waiters is not None
            del waiters[subscription]
            if not waiters:
                trail[-1].waiters = None
            for depth in range(len(path), 0, -1):
                node, parent = trail[depth], trail[depth - 1]
                if node.waiters or node.children:
                    break
                assert parent.children is not None
                del parent.children[path[depth - 1]]
                if not parent.children:
                    parent.children = None

    def woken(
        self, paths: Iterable[Path], before: Mapping[str, Any], after: Mapping[str, Any]
    ) -> list[Subscription]:
        """The subscriptions that changes at ``paths``, the leaves that differ from the tree
        ``before`` to the tree ``after``, wake, each once, in subscribe order."""
        found = dict(self._everything)
        root = self._root
        if root.children is not None:
            for path in paths:
                node: _Node | None = root
                old: Any = before
                new: Any = after
                last = len(path) - 1
                for depth, segment in enumerate(path):
                    assert node is not None
                    children = node.children
                    node = None if children is None else children.get(segment)
                    if node is None:
                        break
                    if node.waiters:
                        found.update(node.waiters)
                    if depth < last:
                        old, new = _child(old, segment), _child(new, segment)
                        if (old is MISSING) != (new is MISSING):
                            break  # this object appeared or went: every key under it moved
                if node is not None and node.children:
                    _collect(node.children, found)
        return sorted(found, key=_ORDER) if len(found) > 1 else list(found)


def _collect(children: dict[str, _Node], found: dict[Subscription, None]) -> None:
    """Add every waiter below a node: their keys extend the changed path."""
    stack = list(children.values())
    while stack:
        node = stack.pop()
        if node.waiters:
            found.update(node.waiters)
        if node.children:
            stack.extend(node.children.values())


def _child(value: Any, segment: str) -> Any:
    return value.get(segment, MISSING) if type(value) is dict else MISSING
