"""How a session answers for a transition: its fire result, ``did_it_work``, what a pending
one waits on, and why, all read from the transition and the state as it is now."""

from __future__ import annotations

from typing import Any, Final

from assay.graph.result import ALREADY_TRUE_WHY, Answer, CurrentCheck, EffectStatus, FireResult
from assay.graph.transition import Phase, Transition
from assay.state.snapshot import Snapshot

_STATUSES: Final[dict[Phase, EffectStatus]] = {
    Phase.PENDING: "pending",
    Phase.WORKED: "settled",
    Phase.UNOBSERVABLE: "settled",
    Phase.UNMATERIALIZED: "settled",
    Phase.FAILED: "failed",
    Phase.REFUSED: "refused",
}


def fire_result(transition: Transition, current: Snapshot) -> FireResult:
    """The fire result as of ``current``: the receipt, plus ``outcome_now`` when it differs."""
    phase = transition.phase
    why = ALREADY_TRUE_WHY if transition.already_true is not None else None
    if phase is Phase.UNMATERIALIZED:
        why = "No handler is wired for this action, so nothing was executed."
    return FireResult(
        ok=phase is not Phase.REFUSED,
        did=transition.spec.id,
        effect_status=_STATUSES[phase],
        transition_id=transition.id,
        already_true=list(transition.already_true) if transition.already_true is not None else None,
        why=why,
        outcome=transition.outcome,
        outcome_now=outcome_now(transition, current),
        error=transition.error,
        refusal=transition.refusal,
        refusal_figures=transition.refusal_figures,
        materialized=transition.materialized,
    )


def answer(
    transition: Transition,
    current: Snapshot,
    *,
    waiting_on: str | None = None,
    pending_for_ms: int | None = None,
) -> Answer:
    """``did_it_work`` for ``transition``; a pending one's ``waiting_on`` and age are given."""
    return Answer(
        transition_id=transition.id,
        answer=transition.phase.value,
        why=_why(transition, waiting_on),
        waiting_on=waiting_on,
        pending_for_ms=pending_for_ms,
        outcome=transition.outcome,
        outcome_now=outcome_now(transition, current),
        already_true=list(transition.already_true) if transition.already_true is not None else None,
        commit=transition.commit,
        effect=transition.effect,  # type: ignore[arg-type]
        error=transition.error,
        result=_json_or_none(transition.handler_result),
    )


def outcome_now(transition: Transition, current: Snapshot) -> CurrentCheck | None:
    """The settled contract evaluated on ``current``, when its result has changed since."""
    if transition.predicate is None or transition.phase not in (Phase.WORKED, Phase.FAILED):
        return None
    if transition.outcome is None or current.version == transition.settled_version:
        return None
    check = transition.predicate.check(current.objects)
    if check.result == transition.outcome.result:
        return None
    held = (
        "holds"
        if check.result
        else "no longer holds"
        if check.result is False
        else ("cannot be evaluated")
    )
    return CurrentCheck(
        result=check.result,
        version=current.version,
        detail=f"since settlement the contract {held} (state version {current.version})",
    )


def waiting_on(transition: Transition, queued_before: int) -> str:
    """What a pending ``transition`` waits on; ``queued_before`` earlier fires wait on the
    same state report ahead of it."""
    if transition.already_true is not None or (
        transition.predicate is None and not transition.writes
    ):
        return "the handler to finish (it has not returned yet)"
    if transition.observed:
        return transition.waiting_on or "the handler to finish"
    if transition.predicate is not None:
        return transition.waiting_on or f"the verify contract {transition.predicate.source}"
    where = f"; {queued_before} earlier fire(s) are queued before it" if queued_before else ""
    return f"a state report writing {', '.join(transition.writes)}{where}"


def _json_or_none(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return None


def _why(transition: Transition, waiting_on: str | None) -> str:
    phase = transition.phase
    if phase is Phase.PENDING:
        return f"Still pending: waiting on {waiting_on}. Nothing has settled it yet."
    if phase is Phase.WORKED:
        if transition.outcome is not None:
            return transition.outcome.narrative
        return "A state report established the declared change."
    if phase is Phase.UNOBSERVABLE:
        return transition.error or (
            "The handler finished, and no change to the declared keys was observed."
        )
    if phase is Phase.FAILED:
        return transition.error or "It failed."
    if phase is Phase.REFUSED:
        return transition.error or "It was refused."
    return "No handler is wired for this action, so nothing was executed and nothing will settle."
