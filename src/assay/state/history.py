"""``ChangeHistory``: which leaf paths a store's latest versions changed, newest last.

For each version held, the history keeps the leaf paths it changed; and for each leaf path
changed in the versions held, the latest version that changed it, in the order of those
versions. The changes from a held version to another are then found from the paths changed
between them, each compared at its leaf on both snapshots: from the versions in between
when they are few beside those since (an outcome taken soon after its fire, long before its
answer), else from the paths changed since the older one, each once however many versions
changed it. Either way nothing is spent on the paths left as they were.
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
        # Version v's entry: a weak reference to its snapshot and the paths it changed,
        # oldest first.
        self._versions: deque[tuple[ReferenceType[Snapshot], tuple[Path, ...]]] = deque(
            [(ref(initial), ())], maxlen=size + 1
        )
        # Each path changed after the oldest version held, by the latest version changing it.
        self._latest: OrderedDict[Path, int] = OrderedDict()

    def __len__(self) -> int:
        """How many paths the history holds."""
        return len(self._latest)

    @property
    def oldest(self) -> int:
        """The oldest version held."""
        newest = self._versions[-1][0]()
        assert newest is not None  # the store holds its current snapshot
        return newest.version - len(self._versions) + 1

    def add(self, snapshot: Snapshot, paths: tuple[Path, ...]) -> None:
        """Record ``snapshot``, the next version, and the leaf paths it changed."""
        self._versions.append((ref(snapshot), paths))
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
        return 0 <= place < len(self._versions) and self._versions[place][0]() is snapshot

    def changed_between(self, old: int, new: int) -> Iterable[Path]:
        """Each path that may have changed from version ``old`` to version ``new`` (both
        held, ``old`` the older), once."""
        oldest = self.oldest
        newer = len(self._versions) - 1 - (new - oldest)  # versions held after ``new``
        if new - old > newer:
            return self.changed_since(old)
        versions = self._versions
        found: dict[Path, None] = {}
        for place in range(old - oldest + 1, new - oldest + 1):
            found.update(dict.fromkeys(versions[place][1]))
        return found

    def changed_since(self, version: int) -> Iterator[Path]:
        """Each path changed after ``version`` (a version held), once, newest first."""
        for path, changed in reversed(self._latest.items()):
            if changed <= version:
                return
            yield path
