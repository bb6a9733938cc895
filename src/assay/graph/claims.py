"""Claims: an observed change is credited to at most one of the fires pending when it landed.

Two fires pending on one substrate can both see one change: two sends of one message id,
which the application delivers once. Whichever of them settles on it first claims it (the
changes to its declared keys from its fire to its settlement; for an action that declares
none, to the keys its contract reads). Another fire has an effect of
its own only if a key its evidence rests on changed while it was pending outside every
version range another fire has claimed for that key; otherwise which of them made the
change cannot be told from the state, and it is no evidence that this one did anything.

Claims are shared by every session on one substrate, as single flight is. A claim is kept
while a fire that may still check against it is pending (one fired before the claim's
change), so a session holds only the claims of changes that something pending overlaps.
"""

from __future__ import annotations

import bisect
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from assay.graph.binding import related
from assay.graph.transition import Transition
from assay.json.path import MISSING
from assay.state.canonical import Path, same_value
from assay.state.snapshot import FieldChange


@dataclass(frozen=True, slots=True, eq=False)
class Claim:
    """A fire credited with ``changes``: its declared keys that changed from the version it
    was fired on (``since``) to the one it settled on (``until``), with their raw values."""

    holder: str
    session: str
    since: int
    until: int
    changes: tuple[FieldChange, ...]


def _until(claim: Claim) -> int:
    return claim.until


class Claims:
    """The claims on one substrate's changes, and the pending fires that may check them."""

    def __init__(self) -> None:
        self._claims: list[Claim] = []  # by ``until``
        # Claims by the leaf paths they changed, and by those paths' ancestors, so a check
        # costs the claims on related keys, not every claim a long pending fire overlaps.
        self._at: dict[Path, dict[Claim, None]] = {}
        self._under: dict[Path, dict[Claim, None]] = {}
        self._checking: deque[weakref.ref[Transition]] = deque()  # in firing order

    def __len__(self) -> int:
        return len(self._claims)

    def expect(self, transition: Transition) -> None:
        """``transition`` will check its change against the claims before it settles."""
        self._checking.append(weakref.ref(transition))

    def claim(
        self, transition: Transition, session: str, until: int, changes: Sequence[FieldChange]
    ) -> None:
        """Credit ``transition`` (of ``session``) with ``changes``, as of version ``until``."""
        made = Claim(transition.id, session, transition.before.version, until, tuple(changes))
        bisect.insort(self._claims, made, key=_until)
        for change in made.changes:
            path = change.path
            self._at.setdefault(path, {})[made] = None
            for depth in range(1, len(path)):
                self._under.setdefault(path[:depth], {})[made] = None
        self._forget(until)

    def taken(self, path: Path, version: int) -> Claim | None:
        """The claim on a change of ``path`` in version ``version``, if any. Reports are told
        to every session before anything else runs, so these are the claims just made."""
        start = bisect.bisect_left(self._claims, version, key=_until)
        for claim in self._claims[start:]:
            if claim.since < version and any(related(path, c.path) for c in claim.changes):
                return claim
        return None

    def claimants(
        self, transition: Transition, session: str, until: int, changes: Sequence[FieldChange]
    ) -> list[Claim]:
        """The claims of other fires that account for every one of ``changes`` (those of
        ``transition`` of ``session``, from its fire to version ``until``); none when one of
        them is its own."""
        since = transition.before.version
        accounting: dict[Claim, None] = {}
        for change in changes:
            claims = [
                claim
                for claim in self._on(change.path)
                if claim.since < until
                and claim.until > since
                and (claim.session, claim.holder) != (session, transition.id)
            ]
            if not claims or _moved_outside(change, since, until, claims):
                return []
            accounting.update(dict.fromkeys(claims))
        return sorted(accounting, key=_until)

    def _on(self, path: Path) -> dict[Claim, None]:
        """The claims that changed ``path``, a leaf under it or a leaf above it."""
        found = {**self._at.get(path, {}), **self._under.get(path, {})}
        for depth in range(1, len(path)):
            found.update(self._at.get(path[:depth], {}))
        return found

    def _forget(self, now: int) -> None:
        """Let go of the claims no pending fire could rest on: those that end no later than
        the version the oldest still checking was fired on, and before ``now``."""
        while self._checking:
            transition = self._checking[0]()
            if transition is not None and not (transition.phase.terminal or transition.observed):
                break
            self._checking.popleft()
        oldest = self._checking[0]() if self._checking else None
        floor = now - 1 if oldest is None else min(now - 1, oldest.before.version)
        kept = bisect.bisect_right(self._claims, floor, key=_until)
        for claim in self._claims[:kept]:
            for change in claim.changes:
                path = change.path
                _drop(self._at, path, claim)
                for depth in range(1, len(path)):
                    _drop(self._under, path[:depth], claim)
        del self._claims[:kept]


def _drop(index: dict[Path, dict[Claim, None]], path: Path, claim: Claim) -> None:
    claims = index.get(path)
    if claims is not None:
        claims.pop(claim, None)
        if not claims:
            del index[path]


_UNKNOWN: Final = object()
"""The value of a key at a claim's bound, when the claim changed it under another leaf name."""


def _moved_outside(change: FieldChange, since: int, until: int, claims: list[Claim]) -> bool:
    """Whether the key of ``change`` (a fire's, from version ``since`` to ``until``) moved in
    a version range none of ``claims`` covers: its value at the start of each uncovered range
    differs from its value at the end. A claim's values of the key are read from its change
    of that key or of the leaf holding it (an array holding ``items.1.done``); where they are
    not known (a claim changed the key only under another leaf name, an object turned
    scalar), nothing is credited."""
    path = change.path
    spans = []
    for claim in claims:
        values = next(filter(None, (c.values_at(path) for c in claim.changes)), None)
        first, last = (_UNKNOWN, _UNKNOWN) if values is None else values
        spans.append((claim.since, first, claim.until, last))
    spans.sort(key=lambda span: span[0])
    at, value = since, _before(change)
    for start, first, end, last in spans:
        if start > at and _differ(value, first):
            return True
        if end > at:
            at, value = end, last
    return at < until and _differ(value, _after(change))


def _differ(a: Any, b: Any) -> bool:
    return a is not _UNKNOWN and b is not _UNKNOWN and not same_value(a, b)


def _before(change: FieldChange) -> Any:
    return MISSING if change.kind == "added" else change.before


def _after(change: FieldChange) -> Any:
    return MISSING if change.kind == "removed" else change.after
