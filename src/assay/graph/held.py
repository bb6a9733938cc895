"""``HeldTransitions``: the transitions a session holds — every pending one, and the latest
``keep_settled`` settled ones (a session that fires for weeks would otherwise hold every
fire's snapshots; the ledger keeps the evidence of all of them)."""

from __future__ import annotations

from collections import deque
from typing import Any, Final

from assay.clock import Clock
from assay.errors import NotFoundError, WrongTypeError
from assay.expr.predicate import Predicate
from assay.graph.declaration import ActionSpec
from assay.graph.transition import Transition
from assay.state.store import StateStore

KEEP_SETTLED: Final = 1000
"""How many settled transitions a session holds by default, beside every pending one."""


def check_keep_settled(keep_settled: object) -> None:
    """``WrongTypeError`` unless ``keep_settled`` is a whole number, 1 or more."""
    if isinstance(keep_settled, bool) or not isinstance(keep_settled, int) or keep_settled < 1:
        raise WrongTypeError(
            f"keep_settled must be a whole number of transitions, 1 or more, not {keep_settled!r}",
            parameter="keep_settled",
        )


class HeldTransitions:
    """A session's transitions by id, the count of fires of each action, and which settled
    ones it still holds, oldest first."""

    def __init__(
        self, session: str, store: StateStore, clock: Clock, keep_settled: int = KEEP_SETTLED
    ) -> None:
        check_keep_settled(keep_settled)
        self.session = session
        self.store = store
        self.clock = clock
        self.keep_settled = keep_settled
        self.transitions: dict[str, Transition] = {}
        self.counters: dict[str, int] = {}
        self._settled: deque[str] = deque()

    def mint(
        self,
        spec: ActionSpec,
        args: dict[str, Any],
        source: str,
        writes: tuple[str, ...] = (),
        predicate: Predicate | None = None,
    ) -> Transition:
        """A new transition of ``spec`` fired now, on the current state, numbered on from
        the last (``page.action#N``)."""
        number = self.counters.get(spec.id, 0) + 1
        self.counters[spec.id] = number
        transition = Transition(
            id=f"{spec.id}#{number}",
            spec=spec,
            args=args,
            source=source,
            writes=writes,
            predicate=predicate,
            before=self.store.current,
            fired_at=self.clock.monotonic(),
        )
        self.transitions[transition.id] = transition
        return transition

    def settled(self, transition: Transition) -> None:
        """``transition`` settled: let go of the oldest settled one beyond the latest
        ``keep_settled``."""
        self._settled.append(transition.id)
        while len(self._settled) > self.keep_settled:
            del self.transitions[self._settled.popleft()]

    def get(self, transition_id: str) -> Transition:
        """The transition ``transition_id``; ``NotFoundError`` if the session has none."""
        transition = self.transitions.get(transition_id)
        if transition is None:
            if self.let_go(transition_id):
                raise NotFoundError(
                    f"session {self.session!r} no longer holds transition {transition_id!r}: "
                    f"it settled, and a session holds only its latest {self.keep_settled:,} "
                    "settled transitions; its evidence is in the ledger, by session and "
                    "transition",
                    kind="transition",
                    id=str(transition_id),
                )
            raise NotFoundError(
                f"session {self.session!r} has no transition {transition_id!r}; transition "
                "ids look like page.action#N and belong to the session that fired them",
                kind="transition",
                id=str(transition_id),
            )
        return transition

    def let_go(self, transition_id: str) -> bool:
        """Whether the session made ``transition_id`` and, once it settled, let it go."""
        if transition_id in self.transitions:
            return False
        action, _, number = str(transition_id).rpartition("#")
        fired = self.counters.get(action, 0)
        # Only the id as minted: ASCII digits, no leading zero, no longer than the count.
        if not (number.isascii() and number.isdigit()) or number.startswith("0"):
            return False
        return len(number) <= len(str(fired)) and int(number) <= fired

    @property
    def fired(self) -> int:
        """How many transitions the session has made, held or not."""
        return sum(self.counters.values())
