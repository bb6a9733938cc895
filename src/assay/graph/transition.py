"""Transitions: one fire of one action in one session, and its lifecycle.

A transition is minted ``page.action#N`` when a fire is accepted (or refused). Its receipt —
the fire-time evidence, the settlement and its outcome — is written once and never
rewritten; what happens to the world afterwards shows beside it, as ``outcome_now``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from assay.errors import TransitionError
from assay.expr.predicate import ConditionEvidence, Predicate
from assay.graph.declaration import ActionSpec
from assay.graph.result import RefusalFigures
from assay.state.snapshot import FieldChange, Snapshot
from assay.verify.outcome import VerificationOutcome


class Phase(StrEnum):
    """Where a transition is in its life; only pending moves, and only once."""

    PENDING = "pending"
    WORKED = "worked"
    UNOBSERVABLE = "unobservable"
    FAILED = "failed"
    REFUSED = "refused"
    UNMATERIALIZED = "unmaterialized"

    @property
    def terminal(self) -> bool:
        return self is not Phase.PENDING


@dataclass(eq=False)
class Transition:
    """The record of one fire. Fields up to ``already_true`` are fixed at fire time."""

    id: str
    spec: ActionSpec
    args: dict[str, Any]
    source: str
    writes: tuple[str, ...]
    predicate: Predicate | None
    before: Snapshot
    fired_at: float
    already_true: tuple[ConditionEvidence, ...] | None = None
    materialized: bool = True
    phase: Phase = Phase.PENDING
    handler_done: bool = False
    observed: bool = False  # the effect was established; settlement waits for the handler
    observed_version: int | None = None  # the state version its contract was seen to hold on
    # The contract held, but it held before the fire too and no key it reads changed.
    held_before: bool = False
    # Why the change it rests on is credited to another fire, pending as well, instead.
    not_credited: str | None = None
    verify_timeout_ms: int | None = None  # the fire's, else the action's
    # On polled state, a fire whose handler returned and that would settle on "nothing
    # changed": a read begun after that is under way, and it settles only once it ended.
    awaiting_read: bool = False
    read_after_handler: bool = False  # such a read has ended
    handler_result: Any = None
    handler_failed: bool = False  # it raised, or was cancelled within its own work
    error: str | None = None
    refusal: str | None = None
    refusal_figures: RefusalFigures | None = None
    outcome: VerificationOutcome | None = None
    commit: list[FieldChange] = field(default_factory=list)
    settled_at: float | None = None
    settled_version: int | None = None
    settled: asyncio.Event | None = None

    def settle(self, phase: Phase, at: float, version: int) -> None:
        """Move from pending to a terminal phase; a second move is a bug and says so."""
        if self.phase.terminal:
            raise TransitionError(
                f"{self.id} is already {self.phase.value}; it cannot become {phase.value} "
                "(a receipt is never rewritten)"
            )
        if not phase.terminal:
            raise TransitionError(f"{self.id} cannot move back to pending")
        self.phase = phase
        self.settled_at = at
        self.settled_version = version
        if self.settled is not None:
            self.settled.set()

    @property
    def effect(self) -> str | None:
        """``observed`` when a report or verification established the change."""
        if self.phase is Phase.WORKED:
            return "observed"
        if self.phase is Phase.UNOBSERVABLE:
            return "unobservable"
        return None
