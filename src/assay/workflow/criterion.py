"""Criteria: what a step's output must satisfy, compiled once at load time.

A criterion is an expression over ``input`` and ``output`` (the step's input context and its
output, nothing else), or a state contract over the world as a session sees it:
``{state: "orders.W1.status == 'cancelled'"}`` or ``{state: {"orders.W1.status": "cancelled"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from assay.errors import ContractError, ExpressionSyntaxError, WorkflowError
from assay.expr import Predicate, compile_contract, compile_expression

if TYPE_CHECKING:
    from assay.redaction import Redaction

CriterionKind = Literal["expression", "state"]


@dataclass(frozen=True, slots=True)
class Criterion:
    """One compiled criterion; ``source`` is how its author wrote it, for every message."""

    source: str
    kind: CriterionKind
    predicate: Predicate
    contract: Mapping[str, Any] | None = None
    """A state contract as written, to compile again with a session's redaction."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The dotted paths it reads (in the step scope, or in the world for state)."""
        return self.predicate.keys

    def redacted_by(self, redaction: Redaction) -> Criterion:
        """This criterion, its contract withholding the values ``redaction`` covers."""
        if self.contract is None:
            return self
        return replace(self, predicate=compile_contract(self.contract, redaction=redaction))


def compile_criterion(raw: Any, *, workflow: str, step: str) -> Criterion:
    """Compile one criterion as written in a definition; ``WorkflowError`` names it if bad."""
    if isinstance(raw, Criterion):
        return raw
    if isinstance(raw, str):
        try:
            return Criterion(raw, "expression", compile_expression(raw))
        except ExpressionSyntaxError as error:
            raise WorkflowError(
                f"step {step!r}: criterion {raw!r} is not a valid expression: {error}",
                workflow=workflow,
                step=step,
                field="verify.criteria",
            ) from None
    if isinstance(raw, Mapping) and set(raw) == {"state"}:
        contract = raw["state"]
        if isinstance(contract, str):
            try:
                return Criterion(f"state: {contract}", "state", compile_expression(contract))
            except ExpressionSyntaxError as error:
                raise WorkflowError(
                    f"step {step!r}: state criterion {contract!r} is not a valid expression: "
                    f"{error}",
                    workflow=workflow,
                    step=step,
                    field="verify.criteria",
                ) from None
        try:
            predicate = compile_contract(contract)
        except ContractError as error:
            raise WorkflowError(
                f"step {step!r}: state contract {contract!r} is malformed: {error}",
                workflow=workflow,
                step=step,
                field="verify.criteria",
            ) from None
        source = "state: " + json.dumps(contract, sort_keys=True, separators=(",", ":"))
        return Criterion(source, "state", predicate, contract)
    raise WorkflowError(
        f"step {step!r}: a criterion is an expression string over input and output, or "
        f"{{state: <expression or contract>}} for the world; got {raw!r}",
        workflow=workflow,
        step=step,
        field="verify.criteria",
    )
