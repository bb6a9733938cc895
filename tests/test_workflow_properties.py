"""No retry without a bound: random budget trees against verifiers that always fail.

Every run must terminate and park; executor calls never exceed attempts × iterations per
attempt (nor any iteration bound); wall time and tokens overrun a bound by at most one
iteration's worth (an executor a wall bound cancels reports no tokens); nothing is committed
but the run's start.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.clock import VirtualClock
from assay.workflow import Engine, RunStatus, Workflow
from assay.workflow.budget import step_budget
from workflow_steps import AlwaysFail, Recorder, memory_ledger

limits = st.fixed_dictionaries(
    {},
    optional={
        "iterations": st.integers(1, 12),
        "wall_s": st.floats(0.5, 40, allow_nan=False),
        "tokens": st.integers(0, 300),
        "cost": st.floats(0, 5, allow_nan=False),
    },
)
small_limits = st.fixed_dictionaries(
    {},
    optional={
        "wall_s": st.floats(0.5, 20, allow_nan=False),
        "tokens": st.integers(0, 200),
        "cost": st.floats(0, 3, allow_nan=False),
    },
)
shape = st.fixed_dictionaries(
    {},
    optional={
        "attempts": st.integers(1, 4),
        "iterations_per_attempt": st.integers(1, 4),
        "attempt": small_limits,
        "iteration": small_limits,
    },
)
budgets = st.builds(lambda a, b: {**a, **b}, limits, shape)
rungs = st.lists(
    st.sampled_from(["fresh_attempt", "human", "alternate", "model"]), min_size=0, max_size=4
)
spends = st.tuples(
    st.floats(0, 6, allow_nan=False), st.integers(0, 60), st.floats(0, 1.5, allow_nan=False)
)


@settings(max_examples=200)
@given(
    workflow_budget=budgets,
    step_budgets=st.lists(st.one_of(st.none(), budgets), min_size=1, max_size=3),
    ladders=st.lists(rungs, min_size=3, max_size=3),
    spend=spends,
)
def test_always_failing_verifiers_park_every_run_within_its_bounds(
    workflow_budget: dict[str, Any],
    step_budgets: list[dict[str, Any] | None],
    ladders: list[list[str]],
    spend: tuple[float, int, float],
) -> None:
    seconds, tokens, cost = spend
    clock = VirtualClock()
    executors: list[Recorder] = []

    def executor() -> Recorder:
        made = Recorder([{"items": [1]}], clock=clock, advance=seconds, tokens=tokens, cost=cost)
        executors.append(made)
        return made

    def rung(name: str) -> Any:
        if name == "alternate":
            return {"executor": executor()}
        if name == "model":
            return {"model": "other"}
        return name

    steps = [
        {
            "id": f"s{index}",
            "executor": executor(),
            "empty_output": {"items": []},
            "verify": {"criteria": ["output.items.length >= 0"]},
            "escalation": [rung(name) for name in ladders[index]],
            **({"budget": budget} if budget is not None else {}),
        }
        for index, budget in enumerate(step_budgets)
    ]
    workflow = Workflow.from_mapping({"workflow": "w", "budget": workflow_budget, "steps": steps})
    ledger = memory_ledger(clock)
    verifier = AlwaysFail()
    engine = Engine(workflow, ledger, clock=clock, verifier=lambda step: verifier)

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    assert record.next_step == "s0"
    assert record.committed == {}
    assert [e.body.get("event") for e in ledger.query(kind="commit")] == ["start"]
    assert len(ledger.query(kind="park")) == 1

    calls = sum(len(e.calls) for e in executors)
    first = workflow.steps[0]
    shape_of = step_budget(workflow.budget, first.budget)
    climbable = 0
    for item in first.escalation:
        if item.kind == "human":
            break
        climbable += 1
    attempts = min(shape_of.attempts or math.inf, 1 + climbable)
    assert shape_of.iterations_per_attempt is not None
    assert calls <= attempts * shape_of.iterations_per_attempt
    for bound in (workflow.budget.iterations, shape_of.iterations):
        if bound is not None:
            assert calls <= bound
    assert verifier.calls + _discarded(ledger) == calls
    assert calls >= 1 or _starved(workflow, shape_of)

    for wall in (workflow.budget.wall_s, shape_of.wall_s):
        if wall is not None:
            assert clock.monotonic() <= wall + seconds
    charged = calls - _cut_short(ledger)
    for limit in (workflow.budget.tokens, shape_of.tokens):
        if limit is not None:
            assert tokens * charged <= limit + tokens


def _discarded(ledger: Any) -> int:
    """Iterations whose output went over an iteration bound and was never verified."""
    return sum(
        1
        for entry in ledger.query(kind="verdict")
        if entry.body["verdict"]["criteria"][0]["verifier"] == "budget"
    )


def _cut_short(ledger: Any) -> int:
    """Iterations whose executor a wall bound cancelled, before it could report a charge."""
    return sum(
        1
        for entry in ledger.query(kind="verdict")
        if "while the executor was still running" in entry.body["verdict"]["critique"]
    )


def _starved(workflow: Workflow, shape: Any) -> bool:
    """A zero token or cost bound leaves no room for even one iteration."""
    bounds = [workflow.budget.tokens, workflow.budget.cost, shape.tokens, shape.cost]
    if shape.attempt is not None:
        bounds += [shape.attempt.tokens, shape.attempt.cost]
    return 0 in bounds
