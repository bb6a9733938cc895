"""The conditions of the declarative filter form, bound and ready to run (``Condition``).

A condition runs on a root, the state at the top or an element inside an ``all`` or
``any``, and finds an ``Outcome``: what it read and its verdict, and for a quantifier the
element that decided or the values lacking. Evidence is made from the outcome, so a
condition is never run again to explain itself, and only the deciding element's nested
conditions are summarized.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from assay.expr.filter_operators import OPERATORS, OperatorTest, bind_operator, holds_if_missing
from assay.expr.predicate import ConditionEvidence, ElementEvidence
from assay.expr.quantifiers import (
    MAX_ELEMENT_CHECKS,
    Budget,
    BudgetExceededError,
    every,
    lacking,
    some,
)
from assay.expr.specs import ByMember, Clause, Spec
from assay.json.path import MISSING, PathRead, format_path, json_type_name, read_path

if TYPE_CHECKING:
    from assay.redaction import Redaction


class Outcome(NamedTuple):
    """What one condition found at one root, kept so that it is explained without being run
    again: the read, the verdict, why it could not compare (of the value, unnamed), and for a
    quantifier the element that decided with its nested outcomes, or the values lacking."""

    read: PathRead
    result: bool
    reason: str | None = None
    decided: int | None = None
    inner: tuple[Outcome, ...] | None = None
    examined: bool = False
    missing: tuple[Any, ...] | None = None


class Condition:
    """A bound condition ready to run on a root: the state at the top, an element inside an
    ``all`` or ``any``."""

    __slots__ = (
        "by",
        "children",
        "holds_if_missing",
        "key",
        "op",
        "redacted",
        "redaction",
        "segments",
        "test",
        "threshold",
        "values",
    )

    def __init__(self, spec: Spec, redaction: Redaction, *, nested: bool = False) -> None:
        self.segments = spec.segments
        self.key = spec.key if nested else format_path(spec.segments)
        self.op = spec.op
        self.redaction = redaction
        # A nested condition's path is known per element, so is its redaction.
        self.redacted = not nested and redaction.covers(spec.segments)
        self.holds_if_missing = holds_if_missing(spec.op, spec.operand)
        self.children: tuple[Condition, ...] = ()
        self.test: OperatorTest | None = None
        self.values: list[Any] = []
        self.by: tuple[str, ...] | None = None
        operand = spec.operand
        if isinstance(operand, Clause):
            self.children = tuple(
                Condition(child, redaction, nested=True) for child in operand.specs
            )
        elif spec.op == "contains_all":
            if isinstance(operand, ByMember):
                self.by, self.values = operand.by, operand.values
            else:
                self.values = operand
        else:
            self.test = bind_operator(spec.op, operand, spec.key)
        self.threshold = operand_json(operand)

    def evaluate(self, state: Mapping[str, Any]) -> tuple[ConditionEvidence, str | None]:
        """The evidence of one check against ``state``, and, when it stopped at the element
        limit (so its verdict is unknown), why; never raises for a JSON state."""
        try:
            outcome = self.outcome(state, Budget())
        except BudgetExceededError:
            error = (
                f"{self.key} {self.op} stopped after looking at {MAX_ELEMENT_CHECKS} "
                "elements, the limit for one condition; test a smaller array, or fewer "
                "nested levels"
            )
            value = read_path(state, self.segments).value
            summary = None if self.redacted else self.redaction.summarize(self.segments, value)
            evidence = ConditionEvidence(
                self.key, self.op, self.threshold, summary, False, self.redacted, error
            )
            return evidence, error
        return self.evidence(outcome, ()), None

    def outcome(self, root: Any, budget: Budget) -> Outcome:
        """What this condition finds at ``root``; raises ``BudgetExceededError`` at the limit."""
        read = read_path(root, self.segments)
        value = read.value
        if value is MISSING:
            return Outcome(read, self.holds_if_missing)
        if self.test is not None:
            result, reason = self.test(value)
            return Outcome(read, result, reason)
        if not isinstance(value, list | tuple):
            return Outcome(read, False, f"is {json_type_name(value)}, {self.op} needs an array")
        if self.op == "contains_all":
            missing = lacking(value, self.values, self.by, budget)
            return Outcome(read, not missing, missing=missing)
        children = self.children

        def test(element: Any) -> tuple[bool, int, tuple[Outcome, ...]]:
            inner = tuple(child.outcome(element, budget) for child in children)
            held = sum(item.result for item in inner)
            return held == len(inner), held, inner

        quantify = every if self.op == "all" else some
        result, index, inner = quantify(value, test, budget)
        return Outcome(read, result, decided=index, inner=inner, examined=True)

    def evidence(self, outcome: Outcome, prefix: tuple[str, ...]) -> ConditionEvidence:
        """``outcome`` as evidence; ``prefix`` is the path of the element it was found in."""
        segments = (*prefix, *self.segments)
        key = format_path(segments) if prefix else self.key
        redacted = self.redaction.covers(segments) if prefix else self.redacted
        read = outcome.read
        if read.value is MISSING:
            if prefix:  # say which part was missing from the state, not from the element
                read = PathRead(segments, MISSING, len(prefix) + read.resolved, read.parent)
            return ConditionEvidence(
                key, self.op, self.threshold, None, outcome.result, redacted, read.explain()
            )
        summary = None if redacted else self.redaction.summarize(segments, read.value)
        reason = None if outcome.reason is None else f"{key} {outcome.reason}"
        elements: tuple[ElementEvidence, ...] | None = None
        if outcome.examined:
            elements = ()
            if outcome.decided is not None and outcome.inner is not None:
                at = (*segments, str(outcome.decided))
                inner = tuple(
                    child.evidence(found, at)
                    for child, found in zip(self.children, outcome.inner, strict=True)
                )
                held = all(item.result for item in inner)
                elements = (ElementEvidence(outcome.decided, held, inner),)
        return ConditionEvidence(
            key,
            self.op,
            self.threshold,
            summary,
            outcome.result,
            redacted,
            reason,
            elements,
            outcome.missing,
        )


def operand_json(operand: Any) -> Any:
    """A bound operand as the evidence's ``threshold``: nested conditions as a mapping with
    every operator written out (``{"status": {"eq": "returned"}}``)."""
    if isinstance(operand, ByMember):
        return {"by": relative_key(operand.by), "values": operand.values}
    if not isinstance(operand, Clause):
        return operand
    own: dict[str, Any] = {}
    members: dict[str, dict[str, Any]] = {}
    for spec in operand.specs:
        if spec.segments:
            members.setdefault(relative_key(spec.segments), {})[spec.op] = operand_json(
                spec.operand
            )
        else:
            own[spec.op] = operand_json(spec.operand)
    return own or members


def relative_key(segments: tuple[str, ...]) -> str:
    """A nested path as a condition mapping spells it: a key named like an operator, or
    ``arg``, in brackets, so that it reads as a path."""
    text = format_path(segments)
    if text in OPERATORS or text == "arg":
        return f"[{json.dumps(text)}]"
    return text
