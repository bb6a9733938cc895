"""``ChangeHistory``: which leaf paths a store's latest versions changed, newest last.

For each leaf path changed in the versions held, the history keeps the latest version that
changed it, in the order of those versions. The changes from a held version to another are
then found from the paths changed since the older one, each compared at its leaf on both
snapshots: a cost of the distinct paths changed meanwhile, however many versions changed
them, and nothing for the paths left as they were.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from weakref import ReferenceType, ref

from assay.state.canonical import Path
from assay.state.snapshot import Snapshot


class ChangeHistory:
    """The latest ``size`` versions' snapshots (weakly) and the paths each changed."""

    __slots__ = ("_latest", "_versions")

    def __init__(self, initial: Snapshot, size: int) -> None:
        # Version v's entry is a weak reference to its snapshot, oldest first.
        self._versions: deque[ReferenceType[Snapshot]] = deque([ref(initial)], maxlen=size + 1)
        # Each path changed after the oldest version held, by the latest version changing it.
        self._latest: OrderedDict[Path, int] = OrderedDict()

    def __len__(self) -> int:
        """How many paths the history holds."""
        return len(self._latest)

    @property
    def oldest(self) -> int:
        """The oldest version held."""
        newest = self._versions[-1]()
        assert newest is not None  # the store holds its current snapshot
        return newest.version - len(self._versions) + 1

    def add(self, snapshot: Snapshot, paths: Iterable[Path]) -> None:
        """Record ``snapshot``, the next version, and the leaf paths it changed."""
        self._versions.append(ref(snapshot))
        latest, version = self._latest, snapshot.version
        for path in paths:
            latest[path] = version
            latest.move_to_end(path)
        oldest = self.oldest
        while latest:
            path, changed = next(iter(latest.items()))
            if changed > oldest:
                break
            del latest[path]

    def holds(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot`` is one of the versions held."""
        place = snapshot.version - self.oldest
        return 0 <= place < len(self._versions) and self._versions[place]() is snapshot

    def changed_since(self, version: int) -> Iterator[Path]:
        """Each path changed after ``version`` (a version held), once, newest first."""
        for path, changed in reversed(self._latest.items()):
            if changed <= version:
                return
            yield path
