"""What planners and executors are handed, and what they may hand back.

An executor is a Python callable ``executor(context: StepContext) -> output``; a planner is
``planner(context: StepContext) -> plan``. The output is a JSON object (a mapping); either may
instead return ``StepResult``/``Plan`` to report the tokens and cost it spent, which are
charged to every enclosing budget. Neither ever sees the verifier: the critique of a failed
verdict reaches the planner (and the executor) through ``critiques``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.clock import Clock

if TYPE_CHECKING:
    from assay.graph import Session


@dataclass(frozen=True, slots=True)
class StepContext:
    """One iteration of one step: its input context, the plan, and the critiques so far.

    ``input`` is the run's input with the committed outputs of earlier steps under
    ``input.steps``; ``critiques`` are this attempt's failed verdicts' critiques, oldest
    first (a fresh attempt starts with none); ``human`` is the input of the latest resume;
    ``model`` is set by a ``{model: NAME}`` rung; ``session`` is the workflow's session on an
    application, for executors that fire actions (``None`` when the run has none).
    """

    run_id: str
    workflow: str
    step: str
    input: Mapping[str, Any]
    attempt: int
    iteration: int
    critiques: tuple[str, ...]
    clock: Clock
    plan: Any = None
    human: Mapping[str, Any] | None = None
    model: str | None = None
    session: Session | None = None


@dataclass(frozen=True, slots=True)
class StepResult:
    """An executor's output with what producing it spent."""

    output: Mapping[str, Any]
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True, slots=True)
class Plan:
    """A planner's plan with what making it spent."""

    value: Any
    tokens: int = 0
    cost: float = 0.0


Executor = Callable[[StepContext], "Mapping[str, Any] | StepResult"]
Planner = Callable[[StepContext], Any]
