"""A step's verdict: the wire type that the ledger, the CLI and the HTTP API all share."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.workflow.budget import MAX_TOKENS

VerifierKind = Literal["expression", "state", "model", "budget", "executor", "verifier"]
"""Who ruled: an expression criterion, a state contract, the model, or the engine itself
(an iteration over its budget, an executor that raised or returned no JSON object, a
verifier that raised instead of ruling)."""


NOTHING_JUDGED: Final = "nothing judged this output, so it cannot pass"
"""The critique of a verdict with no rulings in it."""


class CriterionResult(BaseModel):
    """One criterion's ruling: ``passed`` and why, in words a person can check."""

    model_config = ConfigDict(frozen=True)

    criterion: str
    passed: bool
    reason: str
    verifier: VerifierKind


class Verdict(BaseModel):
    """Pass, or fail with a critique; per-criterion results and what judging it spent.

    ``passed`` holds only when there are results and every one passed; ``critique`` says
    what to change (empty on a pass unless the verifier had something to say).
    """

    model_config = ConfigDict(frozen=True)

    passed: bool
    critique: str
    criteria: tuple[CriterionResult, ...]
    tokens: int = Field(default=0, ge=0, le=MAX_TOKENS)
    cost: float = Field(default=0.0, ge=0, allow_inf_nan=False)

    @classmethod
    def of(
        cls,
        results: tuple[CriterionResult, ...],
        *,
        critique: str | None = None,
        tokens: int = 0,
        cost: float = 0.0,
    ) -> Verdict:
        """The verdict the results add up to; the critique lists each failure by default.

        No results is a failure: nothing judged the output, and nothing unobserved passes.
        """
        passed = bool(results) and all(result.passed for result in results)
        if not results and critique is None:
            critique = NOTHING_JUDGED
        if critique is None:
            critique = "; ".join(
                f"{result.criterion}: {result.reason}" for result in results if not result.passed
            )
        return cls(passed=passed, critique=critique, criteria=results, tokens=tokens, cost=cost)

    def combine(self, other: Verdict, *, critique: str | None = None) -> Verdict:
        """Both verdicts' results as one (a composition), spending added up."""
        texts = [text for text in (self.critique, other.critique) if text]
        return Verdict(
            passed=self.passed and other.passed,
            critique=critique if critique is not None else "\n".join(texts),
            criteria=self.criteria + other.criteria,
            tokens=self.tokens + other.tokens,
            cost=self.cost + other.cost,
        )
