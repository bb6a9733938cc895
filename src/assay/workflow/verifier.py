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
from assay.expr.path import MISSING, parse_path, read_path
from assay.workflow.criterion import Criterion
from assay.workflow.verdict import CriterionResult, Verdict

if TYPE_CHECKING:
    from assay.graph import Session


class Verifier(Protocol):
    """Renders a verdict on one output; never raises for an output it cannot judge.

    A verifier that waits (on a model) may also have ``averify``, the same verdict awaited
    without blocking the event loop; ``judge`` uses it when it is there.
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
            return "; ".join(
                f"{c.key} {c.op} {json.dumps(c.threshold)} but saw "
                f"{c.actual_summary if c.actual_summary is not None else c.reason or 'nothing'}"
                for c in failed
            )
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
        self.criteria = tuple(c for c in criteria if c.kind == "state")
        self.session = session

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        results = []
        state = None if self.session is None else self.session.store.current.objects
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
            results.append(
                CriterionResult(
                    criterion=criterion.source,
                    passed=check.result is True,
                    reason=describe(check),
                    verifier="state",
                )
            )
        return Verdict.of(tuple(results))


class CompositeVerifier:
    """Its parts in order; the first failing verdict ends the judging (later parts unasked)."""

    def __init__(self, parts: Sequence[Verifier]) -> None:
        self.parts = tuple(parts)

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        verdict = Verdict.of(())
        for part in self.parts:
            verdict = verdict.combine(part.verify(input, output))
            if not verdict.passed:
                break
        return verdict

    async def averify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        """``verify``, each part through ``judge``: a model is waited for off the loop."""
        verdict = Verdict.of(())
        for part in self.parts:
            verdict = verdict.combine(await judge(part, input, output))
            if not verdict.passed:
                break
        return verdict


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
