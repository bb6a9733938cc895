"""What a verified tool returns: the tool's own result beside assay's answer for the call."""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.expr.predicate import ConditionEvidence
from assay.graph.result import FAILURE_DESCRIPTION, Answer, FailureKind, FireResult
from assay.state.snapshot import FieldChange

VerificationKind = Literal[
    "worked", "pending", "failed", "already_true", "unobservable", "refused", "unmaterialized"
]

NOT_DONE: Final[frozenset[VerificationKind]] = frozenset({"failed", "refused"})
"""The answers saying a call did not do what it was for: a framework adapter shows them to
the model as a failed tool call, never as a result, so the model cannot take them for work
done."""


class Verification(BaseModel):
    """assay's answer for one call of a verified tool, read from its transition."""

    model_config = ConfigDict(frozen=True)

    answer: VerificationKind = Field(
        description="did_it_work's answer; already_true for a call whose declared conditions "
        "held before it ran and whose effect nothing observed"
    )
    why: str = Field(description="the answer in a sentence or two, naming what was seen")
    transition_id: str | None = Field(description="ask did_it_work about it later")
    waiting_on: str | None = Field(default=None, description="pending only: what would settle it")
    pending_for_ms: int | None = Field(default=None, description="pending only: since the fire")
    failure: FailureKind | None = Field(default=None, description=FAILURE_DESCRIPTION)
    refusal: str | None = Field(default=None, description="refused only: why, as a code")
    error: str | None = None
    already_true: list[ConditionEvidence] | None = Field(
        default=None, description="the conditions that held before the call, when they all did"
    )
    narrative: str | None = Field(default=None, description="the verification's narrative")
    changed_fields: list[FieldChange] = Field(
        default_factory=list,
        description="what the verification saw change, else the declared keys that changed",
    )


class Verified(BaseModel):
    """A verified tool's return value: the tool's ``result``, assay's ``verification`` of the
    call, and a one-line ``summary`` of both that a model can read."""

    model_config = ConfigDict(frozen=True)

    result: Any = Field(description="what the tool returned; null when it did not run")
    verification: Verification
    summary: str = Field(description="one line: the answer and what it rests on")


def verification_of(fired: FireResult, answer: Answer | None) -> Verification:
    """The verification of a call from its fire result and ``did_it_work`` answer (``None``
    for a fire refused before any transition was made)."""
    if answer is None:
        return Verification(
            answer="refused",
            why=fired.error or "It was refused.",
            transition_id=fired.transition_id,
            refusal=fired.refusal,
            error=fired.error,
        )
    kind: VerificationKind = answer.answer
    if kind == "unobservable" and answer.already_true is not None:
        kind = "already_true"
    outcome = answer.outcome
    return Verification(
        answer=kind,
        why=answer.why,
        transition_id=answer.transition_id,
        waiting_on=answer.waiting_on,
        pending_for_ms=answer.pending_for_ms,
        failure=fired.failure,
        refusal=fired.refusal,
        error=answer.error,
        already_true=answer.already_true,
        narrative=None if outcome is None else outcome.narrative,
        changed_fields=answer.commit if outcome is None else outcome.changed_fields,
    )


def summary(tool: str, verification: Verification) -> str:
    """One line saying how the call of ``tool`` went, for a model to read."""
    v = verification
    if v.answer == "pending":
        text = (
            f"{tool}: pending, waiting on {v.waiting_on} ({v.pending_for_ms:,} ms so far); "
            f"nothing has settled it yet; ask did_it_work({v.transition_id!r}) later"
        )
    elif v.answer == "already_true":
        held = ", ".join(evidence.key for evidence in v.already_true or ())
        text = (
            f"{tool}: already true, {held} held before the call, which says nothing of its "
            f"effect; the tool ran. {v.why}"
        )
    elif v.answer == "failed":
        text = f"{tool}: failed ({v.failure}). {v.why}"
    elif v.answer == "refused":
        text = f"{tool}: refused ({v.refusal}), the tool did not run. {v.why}"
    else:
        text = f"{tool}: {v.answer}. {v.why}"
    return _SPACE.sub(" ", text).strip()


_SPACE: Final = re.compile(r"\s+")
