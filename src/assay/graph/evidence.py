"""What a session records as evidence, and the protocol of where it records it."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from assay.expr.predicate import ConditionEvidence
from assay.graph.transition import Transition
from assay.state.snapshot import FieldChange


class EvidenceLog(Protocol):
    """Where a session records its evidence: the Evidence Ledger implements this."""

    def append(
        self,
        kind: str,
        body: Any,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
    ) -> Any: ...


def change_json(change: FieldChange) -> dict[str, Any]:
    """A field change as a JSON object."""
    return {"key": change.key, "before": change.before, "after": change.after, "kind": change.kind}


def condition_json(condition: ConditionEvidence) -> dict[str, Any]:
    """A condition's evidence as plain JSON, a quantifier's element evidence nested in it
    (its tuples as lists, which the ledger's canonical form writes on its fast path)."""
    return {key: _plain(value) for key, value in dataclasses.asdict(condition).items()}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def fire_body(transition: Transition) -> dict[str, Any]:
    """A fire entry's body: the action, its arguments, what it declares, and any already-true
    evidence, as of the fire."""
    evidence = transition.already_true
    return {
        "action": transition.spec.id,
        "args": transition.args,
        "source": transition.source,
        "writes": list(transition.writes),
        "contract": transition.predicate.source if transition.predicate else None,
        "materialized": transition.materialized,
        "already_true": None if evidence is None else [condition_json(c) for c in evidence],
        "state_version": transition.before.version,
    }


def refusal_body(transition: Transition, args: dict[str, Any] | None) -> dict[str, Any]:
    """A refusal entry's body: the action, its arguments (``None`` when they are what cannot
    be recorded), why it was refused and the figures behind it."""
    figures = transition.refusal_figures
    return {
        "action": transition.spec.id,
        "args": args,
        "source": transition.source,
        "refusal": transition.refusal,
        "error": transition.error,
        "figures": None if figures is None else figures.model_dump(exclude_none=True),
    }


def settlement_body(transition: Transition) -> dict[str, Any]:
    """A settlement entry's body: the answer, the effect, the commit bundle and the outcome."""
    return settlement_record(
        action=transition.spec.id,
        answer=transition.phase.value,
        effect=transition.effect,
        commit=[change_json(change) for change in transition.commit],
        outcome=None if transition.outcome is None else transition.outcome.model_dump(mode="json"),
        error=transition.error,
        state_version=transition.settled_version,
    )


def settlement_record(
    *,
    action: str,
    answer: str,
    effect: str | None,
    commit: list[dict[str, Any]],
    outcome: dict[str, Any] | None,
    error: str | None,
    state_version: int | None,
) -> dict[str, Any]:
    """A settlement entry's body from its parts: what ``settlement_body`` writes for a
    transition, and what a host writes to close a fire whose transition nobody holds any
    more (``assay.host.recovery``), so that one reader (``answer_from_evidence``) reads both."""
    return {
        "action": action,
        "answer": answer,
        "effect": effect,
        "commit": commit,
        "outcome": outcome,
        "error": error,
        "state_version": state_version,
    }
