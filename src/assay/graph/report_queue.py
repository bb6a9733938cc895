"""``ReportQueue``: one session's writes-only fires awaiting a state report, in firing order,
and how a report settles them (SPEC §6, the writes-only path).

The first state report touching a declared write settles the earliest queued fire that
declares it; one report settles several fires when it touches keys different fires wait
on, but never two through the same change. The queue holds no reference to the settlement
that owns it (it is handed its ``finish`` on each change), so a closed session is freed
without the garbage collector.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.graph.binding import related
from assay.graph.claims import Claims
from assay.graph.transition import Phase, Transition
from assay.json.path import parse_path
from assay.redaction import Redaction
from assay.state.snapshot import FieldChange, Snapshot, changes_at, value_moved
from assay.state.store import StateStore
from assay.verify.loop import summarize_changes

Finish = Callable[[Transition, Phase], None]
"""Settles a transition as a phase, recording it (``Settlement.finish``)."""


class ReportQueue:
    """The writes-only fires of session ``session`` on ``store`` that await a state report,
    FIFO; a change claims (``claims``) what it settles."""

    def __init__(
        self, session: str, store: StateStore, claims: Claims, redaction: Redaction
    ) -> None:
        self.session = session
        self.store = store
        self.claims = claims
        self.redaction = redaction
        self.waiting: list[Transition] = []
        self._seen = store.current  # the version before the next change told

    def add(self, transition: Transition) -> None:
        """Queue ``transition``, last."""
        self.waiting.append(transition)

    def discard(self, transition: Transition) -> None:
        """Let go of ``transition``'s place in the queue, if it has one."""
        if transition in self.waiting:
            self.waiting.remove(transition)

    def on_change(
        self, snapshot: Snapshot, paths: tuple[tuple[str, ...], ...], finish: Finish
    ) -> None:
        """Each changed path settles the earliest queued writes-only fire that declares it
        (through ``finish`` once its handler has returned).

        FIFO order of firing decides in a session; among the sessions on one substrate, the
        first to be told claims it. A declared key is touched only when its own value
        changed (``value_moved``): not by a change to another element of the array holding
        it, and two fires declaring two elements of one array are each settled by a report
        changing both.
        """
        previous, self._seen = self._seen, snapshot
        if not self.waiting:
            return
        taken: list[tuple[str, ...]] = []  # what this session's fires took from the report

        def touched(path: tuple[str, ...], written: tuple[str, ...]) -> tuple[str, ...] | None:
            """What of the change at ``path`` a fire declaring ``written`` takes: the deeper
            of the two (an element, when the declared key lies in a changed array), if its
            value moved and no fire has taken it; else ``None``."""
            if not related(path, written):
                return None
            if not value_moved(previous.objects, snapshot.objects, written):
                return None
            unit = path if len(path) >= len(written) else written
            if any(related(unit, other) for other in taken):
                return None
            return unit if self.claims.taken(unit, snapshot.version) is None else None

        for transition in list(self.waiting):
            if transition.phase.terminal:
                self.waiting.remove(transition)
                continue
            written = [parse_path(key) for key in transition.writes]
            units = [
                unit
                for path in paths
                for key in written
                if (unit := touched(path, key)) is not None
            ]
            if not units:
                continue
            taken.extend(units)
            self.waiting.remove(transition)
            self._reported(transition, snapshot, written, finish)

    def _reported(
        self,
        transition: Transition,
        snapshot: Snapshot,
        written: list[tuple[str, ...]],
        finish: Finish,
    ) -> None:
        """A state report touched ``transition``'s declared writes: claim the change, and
        settle it if its handler has returned."""
        changes = declared_changes(self.store, transition, snapshot)
        transition.commit = summarize_changes(changes, self.redaction)
        # Its claim: the changes to the keys it declares, an element of an array only.
        self.claims.claim(transition, self.session, snapshot.version, changes_at(changes, written))
        if transition.handler_done:
            finish(transition, Phase.WORKED)
        else:
            transition.observed = True


def declared_changes(
    store: StateStore, transition: Transition, after: Snapshot
) -> list[FieldChange]:
    """The declared keys that changed from ``transition``'s fire to ``after``, raw (its
    commit bundle once summarized)."""
    written = [parse_path(key) for key in transition.writes]
    return store.changes_under(transition.before, after, written)
