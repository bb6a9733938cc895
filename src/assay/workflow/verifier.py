"""Verifiers: the gate between a step's output and the workflow's state.

A verifier sees the step's input context and its output, nothing else (a state verifier also
sees the world, through the session), and renders a ``Verdict``. ``CompositeVerifier`` runs
its parts in order and stops at the first failure, so the deterministic criteria rule before
a model is asked anything.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from assay.errors import ContractError
from assay.expr import Check
from assay.expr.mismatch import describe_mismatch
from assay.expr.predicate import ConditionEvidence
from assay.json.path import MISSING, parse_path, read_path
from assay.redaction import REDACTED, Redaction
from assay.workflow.criterion import Criterion
from assay.workflow.verdict import CriterionResult, Verdict

if TYPE_CHECKING:
    from assay.graph import Session


class Verifier(Protocol):
    """Renders a verdict on one output; never raises for an output it cannot judge.

    A verifier that waits (on a model) may also have ``averify``, the same verdict awaited
    without blocking the event loop; ``judge`` uses it when it is there. The engine waits for
    it only until the step's tightest wall bound runs out, then fails the verdict.
    """

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict: ...


async def judge(verifier: Verifier, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
    """``verifier``'s verdict, through its ``averify`` when it has one."""
    averify = getattr(verifier, "averify", None)
    if averify is not None:
        verdict: Verdict = await averify(input, output)
        return verdict
    return verifier.verify(input, output)


def describe(check: Check) -> str:
    """Why a check came out as it did, in one line."""
    if check.result is None:
        return f"could not be evaluated: {check.error}"
    if check.conditions:
        failed = [c for c in check.conditions if not c.result]
        if failed:
            return "; ".join(_failure(c) for c in failed)
    if check.result:
        return "holds"
    return f"does not hold (it evaluated to {_short(check.value)})"


class ExpressionVerifier:
    """Expression criteria over ``input`` and ``output``: deterministic, no tokens spent."""

    def __init__(self, criteria: Sequence[Criterion]) -> None:
        self.criteria = tuple(c for c in criteria if c.kind == "expression")

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        scope = {"input": input, "output": output}
        results = []
        for criterion in self.criteria:
            check = criterion.predicate.check(scope)
            reason = describe(check)
            if check.result is not True:
                reason += seen(scope, criterion.keys)
            results.append(
                CriterionResult(
                    criterion=criterion.source,
                    passed=check.result is True,
                    reason=reason,
                    verifier="expression",
                )
            )
        return Verdict.of(tuple(results))


class StateVerifier:
    """State contracts over the world as ``session`` sees it now; without one, they fail.

    Never passes what it did not observe: with no session, every state criterion fails and
    says so.
    """

    def __init__(self, criteria: Sequence[Criterion], session: Session | None) -> None:
        self.redaction = Redaction.none() if session is None else session.redaction
        self.criteria = tuple(c.redacted_by(self.redaction) for c in criteria if c.kind == "state")
        self.session = session

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        results = []
        state = None if self.session is None else self.session.current.objects
        for criterion in self.criteria:
            if state is None:
                results.append(
                    CriterionResult(
                        criterion=criterion.source,
                        passed=False,
                        reason="no session observes the application, so the world was not "
                        "checked; run the workflow with a session",
                        verifier="state",
                    )
                )
                continue
            check = criterion.predicate.check(state)
            reason = describe(check)
            if (
                check.result is False
                and criterion.contract is None
                and self._reads_redacted(criterion)
            ):
                reason = "does not hold (what it evaluated to is withheld: it reads a redacted key)"
            results.append(
                CriterionResult(
                    criterion=criterion.source,
                    passed=check.result is True,
                    reason=reason,
                    verifier="state",
                )
            )
        return Verdict.of(tuple(results))

    def _reads_redacted(self, criterion: Criterion) -> bool:
        return any(self.redaction.covers(parse_path(key)) for key in criterion.keys)


class CompositeVerifier:
    """Its parts in order; the first failing verdict ends the judging (later parts unasked).

    With no parts, nothing judges the output, and its verdict fails.
    """

    def __init__(self, parts: Sequence[Verifier]) -> None:
        self.parts = tuple(parts)

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        verdict: Verdict | None = None
        for part in self.parts:
            verdict = _then(verdict, part.verify(input, output))
            if not verdict.passed:
                break
        return verdict or Verdict.of(())

    async def averify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        """``verify``, each part through ``judge``: a model is waited for off the loop."""
        verdict: Verdict | None = None
        for part in self.parts:
            verdict = _then(verdict, await judge(part, input, output))
            if not verdict.passed:
                break
        return verdict or Verdict.of(())


def _then(so_far: Verdict | None, verdict: Verdict) -> Verdict:
    return verdict if so_far is None else so_far.combine(verdict)


def _failure(condition: ConditionEvidence) -> str:
    if condition.elements is not None or condition.missing is not None:
        return describe_mismatch(condition)  # which element, or which values, failed
    threshold = json.dumps(condition.threshold)
    return f"{condition.key} {condition.op} {threshold} but saw {_saw(condition)}"


def _saw(condition: ConditionEvidence) -> str:
    if condition.redacted:
        return REDACTED
    if condition.actual_summary is not None:
        return condition.actual_summary
    return condition.reason or "nothing"


def seen(scope: Mapping[str, Any], keys: Sequence[str]) -> str:
    """``"; it read a = 1, b = [2]"``: the values a failed criterion read, for the critique."""
    shown = []
    for key in keys:
        try:
            found = read_path(scope, parse_path(key), lengths=True).value
        except ContractError:
            continue
        shown.append(f"{key} = {'undefined' if found is MISSING else _short(found)}")
    return f"; it read {', '.join(shown)}" if shown else ""


def _short(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
