"""Budgets: bounds that nest workflow ⊃ step ⊃ attempt ⊃ iteration, charged up the tree.

Each scope has a ``BudgetMeter`` with its own ``Limits`` (iterations, wall seconds, tokens, cost)
and a parent; a charge lands on the meter and every ancestor. A bound is checked before each
iteration starts, so no scope starts an iteration it has no room for; the iteration itself
may overrun a token or cost bound by its own size, never more (nothing can stop a call from
spending), and never overruns an iteration count; a wall bound stops the calls it outlasts
(``assay.workflow.wall``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    model_validator,
)

from assay.clock import Clock
from assay.ledger.canonical import canonical_json

DEFAULT_ITERATIONS_PER_ATTEMPT: Final = 3
"""Iterations of planner → executor → verifier per attempt when no budget says."""
MAX_TOKENS: Final = 2**53 - 1
"""The most tokens one charge may report, and where a scope's count stops: JSON's exact range."""
DEFAULT_OUTPUT_BYTES: Final = 1024 * 1024
"""The largest output, as canonical JSON, a step may commit when no budget says (1 MiB); and
the largest input a run may start or resume with when the workflow's budget does not say."""


class Limits(BaseModel):
    """The bounds of one scope; ``None`` leaves a bound to the enclosing scopes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Strict: true is no count of iterations nor a number of seconds, "3" no number.
    iterations: StrictInt | None = Field(default=None, ge=1)
    wall_s: StrictFloat | None = Field(default=None, gt=0)
    tokens: StrictInt | None = Field(default=None, ge=0)
    cost: StrictFloat | None = Field(default=None, ge=0)


class Budget(Limits):
    """A workflow's or a step's budget: its own limits and the shape of its attempts.

    ``attempts`` caps how many attempts a step makes (the escalation ladder sets how many it
    may: one plus its rungs before ``human``); ``iterations_per_attempt`` bounds each attempt's
    critique loop; ``attempt`` and ``iteration`` bound one attempt's and one iteration's wall
    time, tokens and cost; ``output_bytes`` caps the size of an output, as canonical JSON,
    that may be judged and committed (``DEFAULT_OUTPUT_BYTES`` when no budget says). A step's
    values override the workflow's defaults for that step. ``allow_large_budget``, in a
    workflow's budget only, lets its worst case go beyond the ceilings of
    ``assay.workflow.ceiling``.
    """

    attempts: StrictInt | None = Field(default=None, ge=1)
    iterations_per_attempt: StrictInt | None = Field(default=None, ge=1)
    output_bytes: StrictInt | None = Field(default=None, ge=1)
    attempt: Limits | None = None
    iteration: Limits | None = None
    allow_large_budget: StrictBool = False

    @model_validator(mode="after")
    def _no_nested_iterations(self) -> Budget:
        if self.attempt is not None and self.attempt.iterations is not None:
            raise ValueError(
                "attempt.iterations is not a bound here; bound an attempt's iterations with "
                "iterations_per_attempt"
            )
        if self.iteration is not None and self.iteration.iterations is not None:
            raise ValueError(
                "iteration.iterations is not a bound (an iteration is one iteration); bound "
                "iterations with iterations_per_attempt, or iterations for the whole scope"
            )
        return self


class Usage(BaseModel):
    """What a scope has spent so far; the wire shape of a meter's reading."""

    model_config = ConfigDict(frozen=True)

    iterations: int = 0
    wall_s: float = 0.0
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Exhaustion:
    """Which bound of which scope ran out: ``used`` reached (or passed) ``limit``."""

    scope: str
    bound: str
    limit: float
    used: float
    note: str = ""

    @property
    def reason(self) -> str:
        used, limit = _num(self.used), _num(self.limit)
        note = f"; {self.note}" if self.note else ""
        return f"the {self.scope} budget's {self.bound} ran out ({used} of {limit}{note})"


class BudgetMeter:
    """Spending in one scope, with its limits; charges propagate to ``parent``.

    ``wall_note`` is said of the wall bound when it runs out (where it came from, when the
    budget did not set it)."""

    def __init__(
        self,
        scope: str,
        limits: Limits,
        clock: Clock,
        parent: BudgetMeter | None = None,
        *,
        wall_note: str = "",
    ) -> None:
        self.scope = scope
        self.limits = limits
        self.parent = parent
        self.wall_note = wall_note
        self._clock = clock
        self._started = clock.monotonic()
        self.iterations = 0
        self.tokens = 0
        self.cost = 0.0

    def charge(self, *, iterations: int = 0, tokens: int = 0, cost: float = 0.0) -> None:
        """Add spending here and in every enclosing scope."""
        meter: BudgetMeter | None = self
        while meter is not None:
            meter.iterations += iterations
            meter.tokens = min(meter.tokens + tokens, MAX_TOKENS)
            meter.cost = min(meter.cost + cost, sys.float_info.max)
            meter = meter.parent

    @property
    def elapsed(self) -> float:
        return self._clock.monotonic() - self._started

    def usage(self) -> Usage:
        return Usage(
            iterations=self.iterations, wall_s=self.elapsed, tokens=self.tokens, cost=self.cost
        )

    def exhausted(self) -> Exhaustion | None:
        """The first bound of this scope with nothing left, or ``None``."""
        return self._over(strict=False)

    def exceeded(self) -> Exhaustion | None:
        """The first bound of this scope spent beyond its limit, or ``None``."""
        return self._over(strict=True)

    def outermost_exhausted(self) -> Exhaustion | None:
        """The exhausted bound of the outermost scope, from the root down to this one.

        The outermost one decides what can help: an attempt's exhaustion may be escalated,
        a step's or the workflow's only parked.
        """
        chain: list[BudgetMeter] = []
        meter: BudgetMeter | None = self
        while meter is not None:
            chain.append(meter)
            meter = meter.parent
        for scope in reversed(chain):
            found = scope.exhausted()
            if found is not None:
                return found
        return None

    def wall_left(self) -> tuple[float, BudgetMeter] | None:
        """The seconds left in the tightest wall bound, here or enclosing, and its scope;
        ``None`` when no scope has one."""
        tightest: tuple[float, BudgetMeter] | None = None
        meter: BudgetMeter | None = self
        while meter is not None:
            if meter.limits.wall_s is not None:
                left = meter.limits.wall_s - meter.elapsed
                if tightest is None or left < tightest[0]:
                    tightest = (left, meter)
            meter = meter.parent
        return tightest

    def wall_exhaustion(self) -> Exhaustion:
        """This scope's wall bound as spent (at least its limit, read now)."""
        limit = self.limits.wall_s or 0.0
        return Exhaustion(self.scope, "wall_s", limit, max(self.elapsed, limit), self.wall_note)

    def _over(self, *, strict: bool) -> Exhaustion | None:
        readings = (
            ("iterations", self.limits.iterations, self.iterations),
            ("wall_s", self.limits.wall_s, self.elapsed),
            ("tokens", self.limits.tokens, self.tokens),
            ("cost", self.limits.cost, self.cost),
        )
        for bound, limit, used in readings:
            if limit is not None and (used > limit if strict else used >= limit):
                note = self.wall_note if bound == "wall_s" else ""
                return Exhaustion(self.scope, bound, limit, used, note)
        return None


def step_budget(workflow: Budget, step: Budget | None) -> Budget:
    """The step's budget with the workflow's attempt shape and output limit filled in where
    the step is silent."""
    step = step or Budget()
    return step.model_copy(
        update={
            "attempts": step.attempts or workflow.attempts,
            "iterations_per_attempt": step.iterations_per_attempt
            or workflow.iterations_per_attempt
            or DEFAULT_ITERATIONS_PER_ATTEMPT,
            "attempt": step.attempt or workflow.attempt,
            "iteration": step.iteration or workflow.iteration,
            "output_bytes": step.output_bytes or workflow.output_bytes or DEFAULT_OUTPUT_BYTES,
        }
    )


def input_limit(workflow: Budget) -> int:
    """The most a run's input, or a resume's, may be as canonical JSON: the workflow's
    ``output_bytes``. It is recorded and handed to every step as an output is."""
    return workflow.output_bytes or DEFAULT_OUTPUT_BYTES


@dataclass(frozen=True, slots=True)
class Oversize:
    """A JSON object the ledger cannot take within ``budget.output_bytes``: ``size`` bytes as
    canonical JSON, over ``limit``; or no canonical JSON at all (``size`` is ``None`` and
    ``error`` says why)."""

    size: int | None
    limit: int
    error: str = ""

    def reason(self, what: str, whose: str) -> str:
        """Why, for ``what`` (``the output``) held to ``whose`` limit (``the step's``)."""
        if self.size is None:
            return f"{what} cannot be recorded: it has no RFC 8785 JSON ({self.error})"
        return (
            f"{what} is {self.size:,} bytes as canonical JSON, over {whose} limit of "
            f"{self.limit:,} (budget.output_bytes)"
        )


def oversize(value: Mapping[str, Any], limit: int) -> Oversize | None:
    """How ``value`` is over ``limit`` bytes as the ledger would store it (RFC 8785 canonical
    JSON), or ``None`` when it fits. It is encoded once, to be measured. Every output, every
    input a run starts or resumes with, and (by lint) every declared empty output is
    measured here."""
    try:
        size = len(canonical_json(value))
    except (TypeError, ValueError) as error:  # what JSON.parse reads but RFC 8785 cannot write
        return Oversize(None, limit, str(error))
    return Oversize(size, limit) if size > limit else None


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
