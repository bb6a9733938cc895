"""The array quantifiers of the declarative filter form: ``all``, ``any`` and ``contains_all``.

``all`` holds when every element satisfies its nested conditions (so on an empty array),
``any`` when some element does, each stopping at the element that decides; ``contains_all``
holds when each of its values is equal (JSON deep equality) to an element, or, given ``by``,
to an element's member at that path. Every element looked at spends one step of a ``Budget``
shared within one top-level condition, up to ``MAX_ELEMENT_CHECKS`` (``BudgetExceededError``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from assay.json.equality import json_equal
from assay.json.path import MISSING, read_path

QUANTIFIERS: Final = frozenset({"all", "any"})
"""The operators whose operand is a mapping of conditions on each element."""

MAX_QUANTIFIER_DEPTH: Final = 8
"""How deeply ``all`` and ``any`` may nest: as deeply as an expression's callbacks."""

MAX_ELEMENT_CHECKS: Final = 100_000
"""The most elements one condition's check looks at, nested quantifiers included: about a
quarter of a second's work, on arrays far larger than a contract's usual few elements."""

Detail = TypeVar("Detail")
ElementTest = Callable[[Any], tuple[bool, int, Detail]]
"""A test of one element: whether it satisfied every nested condition, how many it
satisfied, and what the nested conditions found (to explain the element if it decides)."""


class BudgetExceededError(Exception):
    """A check looked at more than ``MAX_ELEMENT_CHECKS`` elements; the condition catches it."""


class Budget:
    """The elements one check may still look at."""

    __slots__ = ("left",)

    def __init__(self, steps: int = MAX_ELEMENT_CHECKS) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        """Spend ``steps``; ``BudgetExceededError`` once the check has spent them all."""
        self.left -= steps
        if self.left < 0:
            raise BudgetExceededError


def every(
    array: Sequence[Any], test: ElementTest[Detail], budget: Budget
) -> tuple[bool, int | None, Detail | None]:
    """Whether every element passes ``test``; if one fails, the first to fail, its index
    and what its nested conditions found."""
    for index, element in enumerate(array):
        budget.spend(1)
        held, _, detail = test(element)
        if not held:
            return False, index, detail
    return True, None, None


def some(
    array: Sequence[Any], test: ElementTest[Detail], budget: Budget
) -> tuple[bool, int | None, Detail | None]:
    """Whether some element passes ``test``: the first to pass, or, when none does, the
    nearest (the most nested conditions satisfied, the first of those); ``None`` for an
    empty array."""
    nearest: tuple[int, int, Detail] | None = None
    for index, element in enumerate(array):
        budget.spend(1)
        held, count, detail = test(element)
        if held:
            return True, index, detail
        if nearest is None or count > nearest[0]:
            nearest = (count, index, detail)
    if nearest is None:
        return False, None, None
    return False, nearest[1], nearest[2]


def lacking(
    array: Sequence[Any], values: Sequence[Any], by: tuple[str, ...] | None, budget: Budget
) -> tuple[Any, ...]:
    """The ``values`` that no element of ``array`` equals (JSON deep equality), or with
    ``by``, that no element's member at that path equals; in the order of ``values``."""
    scalars: set[tuple[str, Any]] = set()
    others: list[Any] = []
    for element in array:
        budget.spend(1)
        item = element if by is None else read_path(element, by).value
        if item is MISSING:
            continue
        key = _scalar_key(item)
        if key is None:
            others.append(item)
        else:
            scalars.add(key)
    missing = []
    for value in values:
        key = _scalar_key(value)
        if key is not None:
            found = key in scalars
        else:
            budget.spend(len(others))
            found = any(json_equal(other, value) for other in others)
        if not found:
            missing.append(value)
    return tuple(missing)


def _scalar_key(value: Any) -> tuple[str, Any] | None:
    """A key that two JSON scalars share exactly when ``json_equal`` holds for them (Python
    compares and hashes ``1`` and ``1.0`` alike, and integers beyond 2**53 exactly, as
    ``json_equal`` does); ``None`` for an array or an object."""
    if value is None:
        return ("null", None)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    return None
