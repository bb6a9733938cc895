"""How a failed condition reads, from its evidence alone: its mismatch, in words.

``items.2.status was "delivered", not "returned"``; a quantifier's mismatch is that of the
element that decided it (``all``: the first that failed; ``any``: the nearest, none having
held), and ``contains_all``'s names the values the array lacks. A redacted value is never
shown, nor is anything of a value the evidence does not hold.
"""

from __future__ import annotations

import json
from typing import Any, Final

from assay.expr.predicate import ConditionEvidence

_WANTED: Final = {
    "eq": "{}",
    "ne": "other than {}",
    "gt": "> {}",
    "gte": ">= {}",
    "lt": "< {}",
    "lte": "<= {}",
    "in": "one of {}",
    "nin": "none of {}",
    "contains": "containing {}",
    "matches": "matching {}",
}


def describe_mismatch(condition: ConditionEvidence) -> str:
    """Why ``condition`` (one that failed) did not hold, naming its key and what was seen."""
    if condition.elements is not None and condition.op in ("all", "any"):
        return _element_mismatch(condition)
    if condition.missing is not None:
        return _lacking(condition)
    if condition.reason is not None:  # a missing path, a type that cannot compare, a limit
        return condition.reason
    wanted = _wanted(condition.op, condition.threshold)
    if condition.redacted:
        return f"{condition.key} (redacted) was not {wanted}"
    return f"{condition.key} was {condition.actual_summary}, not {wanted}"


def _element_mismatch(condition: ConditionEvidence) -> str:
    if not condition.elements:
        return f"{condition.key} has no elements, so none satisfied it"
    (element,) = condition.elements
    failed = "; ".join(describe_mismatch(c) for c in element.conditions if not c.result)
    if condition.op == "all":
        return failed
    return f"no element of {condition.key} satisfied it; the nearest, {failed}"


def _lacking(condition: ConditionEvidence) -> str:
    assert condition.missing is not None
    values = ", ".join(_json(value) for value in condition.missing)
    threshold = condition.threshold
    by = threshold.get("by") if isinstance(threshold, dict) else None
    return f"{condition.key} lacked {'' if by is None else f'{by} '}{values}"


def _wanted(op: str, threshold: Any) -> str:
    if op == "exists":
        return "present" if threshold else "absent"
    return _WANTED.get(op, f"{op} {{}}").format(_json(threshold))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
