"""The ceilings on a workflow's worst case, checked when it is loaded.

Every loop of a run is bounded, but a bound can be so large that it bounds nothing a person
would wait for: ``attempts: 1000000`` with ``iterations_per_attempt: 100000`` is a bound. So a
workflow whose budget lets one leg of a run (a start, or a resume) call its executors more
than ``MAX_EXECUTOR_CALLS`` times, or run longer than ``MAX_WALL_S``, is refused at load,
unless its budget says ``allow_large_budget: true``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from assay.errors import WorkflowError
from assay.workflow.budget import step_budget

if TYPE_CHECKING:
    from assay.workflow.definition import Step, Workflow

MAX_EXECUTOR_CALLS: Final = 1000
"""The most executor calls a workflow's budget may allow in one leg of a run, unless it says
``allow_large_budget: true``."""
MAX_WALL_S: Final = 86400.0
"""The longest wall bound a workflow's budget may set for one leg of a run (a day), unless it
says ``allow_large_budget: true``."""


@dataclass(frozen=True, slots=True)
class StepWorstCase:
    """The most executor calls one step can make in one leg: ``attempts`` (its ``attempts``,
    or the ladder's climbable rungs, whichever is fewer) × ``iterations_per_attempt``, no
    more than its ``iterations``."""

    step: str
    attempts: int
    iterations_per_attempt: int
    iterations: int | None

    @property
    def calls(self) -> int:
        calls = self.attempts * self.iterations_per_attempt
        return calls if self.iterations is None else min(calls, self.iterations)

    def describe(self) -> str:
        attempts = "1 attempt" if self.attempts == 1 else f"{self.attempts:,} attempts"
        shown = f"{attempts} × {self.iterations_per_attempt:,} iterations_per_attempt"
        if self.iterations is not None and self.iterations < self.attempts * (
            self.iterations_per_attempt
        ):
            shown += f", no more than its {self.iterations:,} iterations"
        return f"step {self.step!r}: {shown}"


def step_worst_case(workflow: Workflow, step: Step) -> StepWorstCase:
    """How many times ``step`` may call an executor in one leg of a run of ``workflow``."""
    budget = step_budget(workflow.budget, step.budget)
    climbable = 0
    for rung in step.escalation:
        if rung.kind == "human":
            break
        climbable += 1
    attempts = min(budget.attempts or math.inf, 1 + climbable)
    assert budget.iterations_per_attempt is not None  # step_budget fills it in
    return StepWorstCase(step.id, int(attempts), budget.iterations_per_attempt, budget.iterations)


def worst_case_calls(workflow: Workflow) -> int:
    """The most executor calls one leg of a run of ``workflow`` may make: each step's worst
    case, summed, no more than the workflow's ``iterations``."""
    total = sum(step_worst_case(workflow, step).calls for step in workflow.steps)
    bound = workflow.budget.iterations
    return total if bound is None else min(total, bound)


def check_ceiling(workflow: Workflow) -> None:
    """``WorkflowError`` if ``workflow``'s worst case is beyond ``MAX_EXECUTOR_CALLS`` or
    its ``wall_s`` beyond ``MAX_WALL_S``, and its budget does not say
    ``allow_large_budget: true``; also if a step's budget says it (it is the workflow's)."""
    for step in workflow.steps:
        if step.budget is not None and step.budget.allow_large_budget:
            raise WorkflowError(
                f"step {step.id!r}: budget.allow_large_budget is the workflow's to say, not a "
                "step's: move it to the workflow's budget",
                workflow=workflow.name,
                step=step.id,
                field="budget.allow_large_budget",
            )
    if workflow.budget.allow_large_budget:
        return
    opt_in = (
        "or, if a run may really take that, say so in the workflow's budget with "
        "allow_large_budget: true"
    )
    calls = worst_case_calls(workflow)
    if calls > MAX_EXECUTOR_CALLS:
        worst = max((step_worst_case(workflow, s) for s in workflow.steps), key=_calls)
        raise WorkflowError(
            f"workflow {workflow.name!r}: its budget allows up to {calls:,} executor calls in "
            f"one run ({worst.describe()}), over the ceiling of {MAX_EXECUTOR_CALLS:,} "
            "(MAX_EXECUTOR_CALLS); lower budget.attempts or budget.iterations_per_attempt, "
            f"bound the run with budget.iterations, {opt_in}",
            workflow=workflow.name,
            step=worst.step,
            field="budget.iterations_per_attempt",
        )
    wall = workflow.budget.wall_s
    if wall is not None and wall > MAX_WALL_S:
        raise WorkflowError(
            f"workflow {workflow.name!r}: budget.wall_s is {_seconds(wall)} s, over the ceiling "
            f"of {_seconds(MAX_WALL_S)} s (MAX_WALL_S, a day); lower budget.wall_s (it is in "
            f"seconds), {opt_in}",
            workflow=workflow.name,
            field="budget.wall_s",
        )


def _calls(worst: StepWorstCase) -> int:
    return worst.calls


def _seconds(value: float) -> str:
    return f"{value:,.0f}" if value < 1e15 and value.is_integer() else f"{value:,g}"
