"""``StateStore``: the substrate as versioned snapshots, changed by reports, watched by key.

A store publishes on change. A report that changes nothing makes no version and wakes
nobody, but counts as a heartbeat from its source. A rejected report changes nothing at
all, heartbeats included. The store belongs to one thread (the event loop's): it takes no
locks, and callbacks run synchronously, in subscription order, before ``report`` returns.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import StateError
from assay.state.canonical import Path, expand_report, refuse_writes_inside_arrays
from assay.state.diff import Change, diff_objects, diff_paths, diff_under
from assay.state.history import ChangeHistory
from assay.state.index import Callback, ChangedPaths, KeyIndex, Subscription
from assay.state.patch import Replace, merge_into, reconcile_object
from assay.state.snapshot import FieldChange, Snapshot, field_changes

logger = logging.getLogger("assay.state")


@dataclass(frozen=True, slots=True)
class SourceSeen:
    """What a store has heard from one source: when last (monotonic seconds), how often,
    and how many of those messages changed the state."""

    last_seen: float
    messages: int
    changes: int


@dataclass(frozen=True, slots=True)
class StoreStatistics:
    """What a store holds and has done: its ``version``, the versions and changed paths its
    history holds, and how many leaf paths ``changes_between`` and ``changes_under`` have
    looked at (``paths_visited``), over the store's life."""

    version: int
    versions_held: int
    paths_held: int
    paths_visited: int


class StateStore:
    """The substrate of one application: ``current`` snapshot, changes, subscriptions.

    The leaf paths changed in the last ``history`` versions are kept, each once, so
    ``changes_between`` two recent snapshots costs the distinct paths changed between them;
    older ones are diffed, sharing makes that cheap.
    """

    def __init__(
        self,
        initial: Mapping[str, Any] | None = None,
        *,
        clock: Clock = SYSTEM_CLOCK,
        history: int = 1024,
    ) -> None:
        if type(history) is not int or history < 0:
            raise StateError(f"history must be a whole number of versions >= 0, got {history!r}")
        objects = {} if initial is None else expand_report(initial)
        self._clock = clock
        self._current = Snapshot(objects, 0, clock.wall(), clock.monotonic())
        self._history = ChangeHistory(self._current, history)
        self._visited = 0
        self._index = KeyIndex()
        self._sources: dict[str, SourceSeen] = {}
        self._last_heartbeat: float | None = None
        self._pending: deque[tuple[Snapshot, Snapshot, ChangedPaths]] = deque()
        self._delivering = False

    @property
    def current(self) -> Snapshot:
        """The latest snapshot."""
        return self._current

    @property
    def version(self) -> int:
        """The latest version: 0 for the initial state, one more per change."""
        return self._current.version

    @property
    def last_heartbeat(self) -> float | None:
        """When any source last reported or beat, in monotonic seconds; ``None`` if never."""
        return self._last_heartbeat

    @property
    def sources(self) -> Mapping[str, SourceSeen]:
        """A read-only view of what each source has sent, by source name."""
        return MappingProxyType(self._sources)

    @property
    def waiting(self) -> int:
        """How many subscriptions are active."""
        return len(self._index)

    def report(self, values: Mapping[str, Any], *, source: str = "report") -> Snapshot | None:
        """Merge ``values`` in (RFC 7396: ``null`` deletes, objects merge, else replace).

        Dotted keys are expanded. Returns the new snapshot, or ``None`` when nothing
        changed. ``StateError`` if the report is not JSON or its keys conflict.
        """
        patch = expand_report(values)
        refuse_writes_inside_arrays(self._current.objects, values)
        changes: list[Change] = []
        objects = merge_into(self._current.objects, patch, (), changes)
        return self._commit(objects, changes, source)

    def set(self, values: Mapping[str, Any], *, source: str = "report") -> Snapshot | None:
        """Store each given key's value wholesale (``null`` included); other keys untouched.

        What a probe does for the keys it reads: ``set({"inbox.count": 3})`` replaces
        ``inbox.count`` and keeps the rest of ``inbox``. Parts of a value equal to what is
        stored keep the stored objects, so only real changes count.
        """
        tree = expand_report(values, Replace)
        changes: list[Change] = []
        objects = merge_into(self._current.objects, tree, (), changes)
        return self._commit(objects, changes, source)

    def replace(self, objects: Mapping[str, Any], *, source: str = "report") -> Snapshot | None:
        """Make ``objects`` the whole substrate; keys it lacks are removed."""
        fresh = expand_report(objects)
        changes: list[Change] = []
        root = reconcile_object(self._current.objects, fresh, (), changes)
        return self._commit(root, changes, source)

    def heartbeat(self, source: str) -> None:
        """Record that ``source`` is alive without reporting anything."""
        self._heard(source, changed=False)

    def _heard(self, source: str, *, changed: bool) -> float:
        now = self._clock.monotonic()
        self._last_heartbeat = now
        seen = self._sources.get(source)
        if seen is None:
            self._sources[source] = SourceSeen(now, 1, int(changed))
        else:
            self._sources[source] = SourceSeen(now, seen.messages + 1, seen.changes + changed)
        return now

    def _commit(
        self, objects: dict[str, Any], changes: list[Change], source: str
    ) -> Snapshot | None:
        now = self._heard(source, changed=bool(changes))
        if not changes:
            return None
        previous = self._current
        snapshot = Snapshot(objects, previous.version + 1, self._clock.wall(), now)
        self._current = snapshot
        paths = tuple(path for path, _, _ in changes)
        self._history.add(snapshot, paths)
        self._publish(previous, snapshot, paths)
        return snapshot

    def changes_between(self, old: Snapshot, new: Snapshot) -> list[FieldChange]:
        """Every leaf that differs from ``old`` to ``new``, sorted by key.

        When both are among this store's last ``history`` versions, only the paths changed
        between them are compared (``ChangeHistory.changed_between``: never the paths left
        as they were); otherwise the trees are diffed, which skips shared subtrees.
        """
        if old is new:
            return []
        out: list[Change] = []
        history = self._history
        if history.holds(old) and history.holds(new):
            older, newer = sorted((old.version, new.version))
            paths = list(history.changed_between(older, newer))
            self._visited += len(paths)
            diff_paths(old.objects, new.objects, paths, out)
        else:
            diff_objects(old.objects, new.objects, (), out)
            self._visited += len(out)
        return field_changes(out)

    def changes_under(
        self, old: Snapshot, new: Snapshot, keys: Iterable[Path]
    ) -> list[FieldChange]:
        """The changes of ``changes_between`` at one of ``keys``, under one, or at a leaf
        above one, sorted by key; found along the keys in both trees, so their cost is that
        of those changes, whatever else changed meanwhile."""
        if old is new:
            return []
        out: list[Change] = []
        diff_under(old.objects, new.objects, keys, out)
        self._visited += len(out)
        return field_changes(out)

    def statistics(self) -> StoreStatistics:
        """The store's figures now (``StoreStatistics``)."""
        return StoreStatistics(
            version=self.version,
            versions_held=self.version - self._history.oldest + 1,
            paths_held=len(self._history),
            paths_visited=self._visited,
        )

    def subscribe(self, keys: Iterable[str], callback: Callback) -> Subscription:
        """Call ``callback(snapshot, changed_paths)`` after each change touching ``keys``.

        A change touches a key when one is a prefix of the other (``inbox`` and
        ``inbox.sent_count``), or when an object above the key appeared or went with it
        (``orders.o2`` added where there was no ``orders`` touches ``orders.o1``). A callback
        that raises is logged; the others still run.
        """
        return self._index.subscribe(keys, callback)

    def subscribe_all(self, callback: Callback) -> Subscription:
        """Call ``callback(snapshot, changed_paths)`` after every change."""
        return self._index.subscribe(None, callback)

    def _publish(self, previous: Snapshot, snapshot: Snapshot, paths: ChangedPaths) -> None:
        # A callback that reports queues its change behind this one, so every subscriber
        # sees versions in order.
        self._pending.append((previous, snapshot, paths))
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._pending:
                previous, snapshot, paths = self._pending.popleft()
                woken = self._index.woken(paths, previous.objects, snapshot.objects)
                for subscription in woken:
                    if not subscription.active:
                        continue
                    try:
                        subscription.callback(snapshot, paths)
                    except Exception:
                        logger.exception(
                            "%r raised on version %d; the store and other subscribers go on",
                            subscription,
                            snapshot.version,
                        )
        finally:
            self._delivering = False
            self._pending.clear()

    def __repr__(self) -> str:
        return f"<StateStore version={self.version} waiting={self.waiting}>"
