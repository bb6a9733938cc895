"""The one shape both contract forms compile to: a predicate over the substrate.

An expression (``verify_expression``) and a declarative filter contract are both
``Predicate``s: they name the state paths they read (``keys``) and check a state once,
returning a ``Check`` that holds the verdict and its explanation together, so nothing is
ever re-run to explain a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from assay.errors import WrongTypeError


@dataclass(frozen=True, slots=True)
class ConditionEvidence:
    """What one declarative condition saw: SPEC §3's evidence record.

    ``actual_summary`` is the observed value rendered as JSON and truncated, or ``None``
    when the key is redacted (then ``redacted`` is true) or was missing. ``elements`` and
    ``missing`` are set by the array quantifiers only, once they have looked inside an array.
    """

    key: str
    op: str
    threshold: Any
    actual_summary: str | None
    result: bool
    redacted: bool = False
    reason: str | None = None
    elements: tuple[ElementEvidence, ...] | None = None
    """``all`` and ``any``: the element that decided the verdict, as JavaScript's ``every``
    and ``some`` stop at it (the first that failed ``all``, the first that held ``any``; for
    an ``any`` that failed, the nearest: the element with the most nested conditions held),
    or none (``all`` held by every element, ``any`` on an empty array)."""
    missing: tuple[Any, ...] | None = None
    """``contains_all``: the operand's values that the array does not hold, in its order."""


@dataclass(frozen=True, slots=True)
class ElementEvidence:
    """One element of an array as an ``all`` or ``any`` condition saw it: its ``index``,
    whether it satisfied every nested condition (``result``), and each nested condition's
    evidence, keyed by its full path (``orders.o1.items.2.status``)."""

    index: int
    result: bool
    conditions: tuple[ConditionEvidence, ...]


@dataclass(frozen=True, slots=True)
class Check:
    """One evaluation of a predicate against one state.

    ``result`` is the verdict (``Boolean(value)``), or ``None`` when the predicate could not
    be evaluated; then ``error`` says why. ``conditions`` is empty for expressions.
    """

    result: bool | None
    value: Any
    error: str | None = None
    conditions: tuple[ConditionEvidence, ...] = ()


@runtime_checkable
class Predicate(Protocol):
    """Anything assay can verify: it reads ``keys`` and checks a state."""

    @property
    def source(self) -> str:
        """The predicate as its author wrote it, for echoing in outcomes."""
        ...

    @property
    def keys(self) -> tuple[str, ...]:
        """The dotted state paths it reads; a change under one of them may change it."""
        ...

    def check(self, state: Mapping[str, Any]) -> Check:
        """Evaluate once against ``state``; never raises for a state it cannot evaluate.

        Raises ``WrongTypeError`` when ``state`` is not a mapping at all (see ``require_state``).
        """
        ...


def require_state(state: object) -> None:
    """Refuse a ``state`` that is not a mapping of top-level keys to values.

    A predicate reads its names from the state's keys; a list, a string or ``None`` holds
    none, so a check against one could only answer false or fail on every name.
    """
    if not isinstance(state, Mapping):
        raise WrongTypeError(
            f"state must be a mapping of top-level keys to values (a JSON object), "
            f"not {type(state).__name__}; wrap a value as {{'name': value}} to check it",
            parameter="state",
        )
