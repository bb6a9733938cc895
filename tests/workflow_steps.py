"""Executors, planners and builders shared by the workflow tests.

``Recorder`` is an executor that records every call (its context) and returns scripted
outputs; ``workflow_of`` builds a one- or many-step ``Workflow`` from plain mappings, the way
a YAML file would.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.clock import VirtualClock
from assay.ledger import Ledger, MemoryBackend
from assay.workflow import StepContext, StepResult, Workflow
from assay.workflow.verdict import CriterionResult, Verdict


class Recorder:
    """An executor returning ``outputs`` in turn (the last one repeats), recording each call.

    ``advance`` moves the virtual clock by that many seconds per call; ``tokens`` and
    ``cost`` are reported per call.
    """

    def __init__(
        self,
        outputs: Sequence[Mapping[str, Any]] = ({"items": []},),
        *,
        clock: VirtualClock | None = None,
        advance: float = 0.0,
        tokens: int = 0,
        cost: float = 0.0,
    ) -> None:
        self.outputs = list(outputs)
        self.calls: list[StepContext] = []
        self.clock = clock
        self.advance = advance
        self.tokens = tokens
        self.cost = cost

    async def __call__(self, ctx: StepContext) -> StepResult:
        self.calls.append(ctx)
        if self.clock is not None and self.advance:
            await self.clock.advance(self.advance)
        output = self.outputs[min(len(self.calls) - 1, len(self.outputs) - 1)]
        return StepResult(dict(output), tokens=self.tokens, cost=self.cost)


class PlannerRecorder:
    """A planner that records the critiques it was handed and plans to heed the last one."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def __call__(self, ctx: StepContext) -> dict[str, Any]:
        self.seen.append(ctx.critiques)
        return {"heed": ctx.critiques[-1] if ctx.critiques else None}


class AlwaysFail:
    """A verifier that fails every output, with a critique naming the call."""

    def __init__(self) -> None:
        self.calls = 0

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        self.calls += 1
        result = CriterionResult(
            criterion="never", passed=False, reason=f"refusal {self.calls}", verifier="expression"
        )
        return Verdict.of((result,))


def memory_ledger(clock: VirtualClock | None = None) -> Ledger:
    return Ledger(MemoryBackend(), clock=clock or VirtualClock())


def workflow_of(
    *steps: Mapping[str, Any],
    budget: Mapping[str, Any] | None = None,
    name: str = "test_flow",
    example_input: Mapping[str, Any] | None = None,
) -> Workflow:
    raw: dict[str, Any] = {"workflow": name, "steps": [dict(step) for step in steps]}
    if budget is not None:
        raw["budget"] = dict(budget)
    if example_input is not None:
        raw["example_input"] = dict(example_input)
    return Workflow.from_mapping(raw)


def step_of(
    step_id: str,
    executor: Callable[..., Any],
    *criteria: Any,
    empty: Mapping[str, Any] | None = None,
    **more: Any,
) -> dict[str, Any]:
    """A step mapping; ``empty`` defaults to ``{"items": []}``."""
    return {
        "id": step_id,
        "executor": executor,
        "empty_output": dict(empty) if empty is not None else {"items": []},
        "verify": {"criteria": list(criteria) or ["output.items.every(i => i > 0)"]},
        **more,
    }
