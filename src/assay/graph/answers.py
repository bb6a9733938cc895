"""How a session answers for a transition: its fire result, ``did_it_work``, what a pending
one waits on, and why, all read from the transition and the state as it is now; and, for a
transition the session has let go, the same answer read back from its evidence."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from pydantic import TypeAdapter

from assay.expr.predicate import ConditionEvidence, Predicate
from assay.graph.binding import AllOf, related
from assay.graph.claims import Claim
from assay.graph.result import ALREADY_TRUE_WHY, Answer, CurrentCheck, EffectStatus, FireResult
from assay.graph.transition import Phase, Transition
from assay.json.path import parse_path
from assay.state.snapshot import FieldChange, Snapshot
from assay.verify.outcome import VerificationOutcome

_EVIDENCE: Final = TypeAdapter(list[ConditionEvidence])
"""Reads recorded condition evidence back, a quantifier's nested element evidence included."""

EFFECT_STATUSES: Final[dict[Phase, EffectStatus]] = {
    Phase.PENDING: "pending",
    Phase.WORKED: "settled",
    Phase.UNOBSERVABLE: "settled",
    Phase.UNMATERIALIZED: "settled",
    Phase.FAILED: "failed",
    Phase.REFUSED: "refused",
}
_CHECKED: Final = frozenset({Phase.WORKED, Phase.FAILED, Phase.UNOBSERVABLE})
"""The settled phases whose receipt may say what the contract was."""


def fire_result(transition: Transition, current: Snapshot) -> FireResult:
    """The fire result as of ``current``: the receipt, plus ``outcome_now`` when it differs."""
    phase = transition.phase
    why = ALREADY_TRUE_WHY if transition.already_true is not None else None
    if phase is Phase.UNMATERIALIZED:
        why = "No handler is wired for this action, so nothing was executed."
    return FireResult(
        ok=phase is not Phase.REFUSED,
        did=transition.spec.id,
        effect_status=EFFECT_STATUSES[phase],
        transition_id=transition.id,
        already_true=list(transition.already_true) if transition.already_true is not None else None,
        why=why,
        outcome=transition.outcome,
        outcome_now=outcome_now(transition, current),
        error=transition.error,
        refusal=transition.refusal,
        refusal_figures=transition.refusal_figures,
        materialized=transition.materialized,
        failure=None
        if phase is not Phase.FAILED
        else "handler"
        if transition.handler_failed
        else "verification",
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


HELD_BEFORE_WHY: Final = (
    "The contract holds, but it held before the action fired too, and none of the keys it "
    "reads changed: nothing observed shows that the action had any effect."
)


def not_credited(evidence: Sequence[FieldChange], claims: Sequence[Claim], session: str) -> str:
    """Why a fire is not credited with the change ``evidence``: ``claims`` of other fires,
    pending as well when it landed, account for it (``session`` is the fire's own)."""
    holders = [
        claim.holder if claim.session == session else f"{claim.holder} of session {claim.session!r}"
        for claim in claims
    ]
    named = holders[-1] if len(holders) == 1 else f"{', '.join(holders[:-1])} and {holders[-1]}"
    return (
        f"the change to {', '.join(change.key for change in evidence)} was first observed by "
        f"{named}, pending as well when it landed; which of the fires made it cannot be told "
        "from the state (an application may make one change for two requests), so nothing "
        "observed shows that this fire had any effect"
    )


FROM_EVIDENCE: Final = (
    " (Read back from the ledger: the session no longer holds this transition, so whether "
    "its contract still holds now is not checked, and what its handler returned is not known.)"
)


def answer_from_evidence(
    transition_id: str, fire: Mapping[str, Any] | None, kind: str, body: Mapping[str, Any]
) -> Answer:
    """``did_it_work`` for a settled transition, from its recorded evidence: ``fire`` is its
    fire entry's body (``None`` if it has none), ``kind`` and ``body`` its ``settlement`` or
    ``refusal`` entry's. ``outcome_now`` and ``result`` are not recorded, so are ``None``."""
    phase = Phase.REFUSED if kind == "refusal" else Phase(body["answer"])
    outcome = body.get("outcome")
    verified = None if outcome is None else VerificationOutcome.model_validate(outcome)
    error = body.get("error")
    evidence = None if fire is None else fire.get("already_true")
    return Answer(
        transition_id=transition_id,
        answer=phase.value,
        why=_why_settled(phase, verified, error) + FROM_EVIDENCE,
        outcome=verified,
        already_true=None if evidence is None else _EVIDENCE.validate_python(evidence),
        commit=[FieldChange(**change) for change in body.get("commit", [])],
        effect=body.get("effect"),
        error=error,
    )


def outcome_now(transition: Transition, current: Snapshot) -> CurrentCheck | None:
    """The settled contract evaluated on ``current``, when its result differs from what the
    receipt says it was: the verification's result, else true for an already-true fire (its
    evidence says the contract held). Every settled answer that says what its contract was
    gets one, worked, failed and unobservable alike; nothing checked, nothing to contradict."""
    if transition.predicate is None or transition.phase not in _CHECKED:
        return None
    if transition.outcome is not None:
        receipt = transition.outcome.result
    elif transition.already_true is not None:
        receipt = True
    else:
        return None
    if current.version == transition.settled_version:
        return None
    check = transition.predicate.check(current.objects)
    if check.result == receipt:
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
    """What a pending ``transition`` waits on: everything that must still happen for it to
    settle, each named until it has happened. ``queued_before`` earlier fires may be settled
    by the state report it waits on, ahead of it (one report settles one of them).

    Read from the transition's fields alone, never from a text set when something started,
    so that it holds at any moment: before the verification task has run, while its
    ``settle_ms`` goes by, and after the handler or the report has come."""
    handler = "the handler to finish"
    if transition.awaiting_read:
        return (
            "a read of the probes begun after the handler returned (the handler's doing shows "
            "there, not in the poll before it)"
        )
    if transition.already_true is not None and not transition.handler_done:
        if isinstance(transition.predicate, AllOf):  # the fire's own expression, checked after
            return f"{handler} (it has not returned yet), then {_contract(transition.predicate, 0)}"
        return f"{handler} (it has not returned yet)"
    if transition.already_true is not None:
        # Its handler finished; its contract (with the fire's own verify_expression, or
        # after a key it covers changed) is checked again, at once.
        assert transition.predicate is not None  # already true: a declarative verify
        return _contract(transition.predicate, 0)
    if transition.predicate is None and not transition.writes:
        return f"{handler} (it has not returned yet)"
    if transition.observed:  # settled the moment its handler finishes
        if transition.predicate is not None:
            return f"{handler} (the contract already holds)"
        return f"{handler} (the state report landed)"
    if transition.predicate is not None:
        contract = _contract(transition.predicate, transition.spec.settle_ms)
        return contract if transition.handler_done else f"{handler} and {contract}"
    report = f"a state report writing {', '.join(transition.writes)}"
    if not transition.handler_done:
        report = f"{report} and {handler}"
    where = f"; {queued_before} earlier fire(s) are queued before it" if queued_before else ""
    return f"{report}{where}"


def queued_before(transition: Transition, queues: Iterable[Sequence[Transition]]) -> int:
    """How many pending writes-only fires a state report that would settle ``transition``
    may settle first: those ahead of it that write a key related to one it writes.

    ``queues`` are the queues of every session on its substrate (its own among them), in
    the order the sessions are told of a change: a changed key settles the earliest fire on
    it in the first session told, so every fire in an earlier session's queue is ahead, and
    in its own session those fired before it."""
    written = [parse_path(key) for key in transition.writes]
    ahead = 0
    for queue in queues:
        for queued in queue:
            if queued is transition:
                return ahead
            if not queued.phase.terminal and any(
                related(parse_path(key), path) for key in queued.writes for path in written
            ):
                ahead += 1
    return ahead


def _contract(predicate: Predicate, settle_ms: int) -> str:
    """The verify contract to hold, the keys its placeholders resolved to, and when it is
    first checked when that is not at once (nothing is checked within ``settle_ms``)."""
    notes = []
    resolved = [key for key in predicate.keys if key not in predicate.source]
    if resolved:  # placeholders filled from the args: say which keys it reads
        notes.append(f"on {', '.join(resolved)}")
    if settle_ms > 0:
        notes.append(f"checked from {settle_ms:,} ms after the fire")
    where = f" ({'; '.join(notes)})" if notes else ""
    return f"the verify contract {predicate.source} to hold{where}"


def _json_or_none(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return None


def _why(transition: Transition, waiting_on: str | None) -> str:
    if transition.phase is Phase.PENDING:
        return f"Still pending: waiting on {waiting_on}. Nothing has settled it yet."
    return _why_settled(transition.phase, transition.outcome, transition.error)


def _why_settled(phase: Phase, outcome: VerificationOutcome | None, error: str | None) -> str:
    if phase is Phase.WORKED:
        if outcome is not None:
            return outcome.narrative
        return "A state report established the declared change."
    if phase is Phase.UNOBSERVABLE:
        if error is None and outcome is not None and outcome.passed:
            return f"{HELD_BEFORE_WHY} {outcome.narrative}"
        return error or "The handler finished, and no change to the declared keys was observed."
    if phase is Phase.FAILED:
        return error or "It failed."
    if phase is Phase.REFUSED:
        return error or "It was refused."
    return "No handler is wired for this action, so nothing was executed and nothing will settle."
