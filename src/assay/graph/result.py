"""Wire types of the graph layer: what a fire returns and what ``did_it_work`` answers."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.expr.predicate import ConditionEvidence
from assay.state.snapshot import FieldChange
from assay.verify.outcome import VerificationOutcome

EffectStatus = Literal["pending", "settled", "failed", "refused"]
AnswerKind = Literal["pending", "worked", "failed", "unobservable", "refused", "unmaterialized"]
FailureKind = Literal["handler", "verification"]
"""What failed a fire: its handler (it raised, or was cancelled in its own work), or the
verification of its effect (the contract did not hold in time, or could not be checked)."""
FAILURE_DESCRIPTION: Final = (
    "failed only: 'handler' when the action's handler raised (no verification decided it), "
    "'verification' when its effect was checked and not seen in time"
)

ALREADY_TRUE_WHY = (
    "These declared verify conditions held before this action fired. already_true records "
    "that earlier check, not whether the action succeeded or changed anything. Read "
    "effect_status, outcome, outcome_now when present, and any error for the actual result."
)


class CurrentCheck(BaseModel):
    """The contract evaluated on today's state, shown when it differs from the receipt."""

    model_config = ConfigDict(frozen=True)

    result: bool | None
    version: int = Field(description="the state version it was evaluated on")
    detail: str


class RefusalFigures(BaseModel):
    """The figures behind a refusal, so a caller can act on it without parsing prose."""

    model_config = ConfigDict(frozen=True)

    confidence: float | None = Field(default=None, description="low_confidence: now")
    threshold: float | None = Field(
        default=None, description="low_confidence: what the action's tier needs"
    )
    freshness: float | None = None
    coverage: float | None = None
    health: float | None = None
    reversibility: str | None = Field(default=None, description="the action's tier")
    holder: str | None = Field(
        default=None, description="single_flight: the pending transition holding the action"
    )
    holder_session: str | None = Field(
        default=None, description="single_flight: the session that fired the holder"
    )
    node: str | None = Field(default=None, description="not_available_here: where the session is")
    available_at: list[str] | None = Field(
        default=None, description="not_available_here: the pages that declare the action"
    )


class FireResult(BaseModel):
    """What ``fire`` returns at once, and again, settled, from a wait."""

    model_config = ConfigDict(frozen=True)

    ok: bool = Field(description="the fire was accepted (not refused)")
    did: str = Field(description="the action fired, page.action")
    effect_status: EffectStatus
    transition_id: str | None
    already_true: list[ConditionEvidence] | None = Field(
        default=None, description="fire-time evidence; present only when the rule applied"
    )
    why: str | None = None
    outcome: VerificationOutcome | None = None
    outcome_now: CurrentCheck | None = None
    error: str | None = None
    refusal: str | None = Field(
        default=None,
        description="why a fire was refused: unknown_action, not_available_here, single_flight, "
        "low_confidence, bad_arguments",
    )
    refusal_figures: RefusalFigures | None = Field(
        default=None, description="refused only: the figures behind the refusal"
    )
    materialized: bool = Field(default=True, description="false when no handler is wired")
    failure: FailureKind | None = Field(default=None, description=FAILURE_DESCRIPTION)


class Answer(BaseModel):
    """``did_it_work``: an answer an agent cannot mistake, with what a pending one waits on."""

    model_config = ConfigDict(frozen=True)

    transition_id: str
    answer: AnswerKind
    why: str
    waiting_on: str | None = Field(default=None, description="pending only: what would settle it")
    pending_for_ms: int | None = None
    outcome: VerificationOutcome | None = None
    outcome_now: CurrentCheck | None = None
    already_true: list[ConditionEvidence] | None = None
    commit: list[FieldChange] = Field(default_factory=list)
    effect: Literal["observed", "unobservable"] | None = None
    error: str | None = None
    result: Any = Field(default=None, description="what the handler returned, when JSON")
