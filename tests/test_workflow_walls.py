"""Runs that end: every run has a wall bound (the default when its workflow sets none), a call
that does not stop at its bound is abandoned and the run parks, and a budget whose worst
case is beyond the ceilings is refused at load unless it says so."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from assay.clock import VirtualClock
from assay.defaults import DEFAULT_WALL_S
from assay.errors import WorkflowError
from assay.server.config import load_config
from assay.workflow import Engine, RunStatus, StepContext, Workflow, Workflows
from assay.workflow.budget import Budget
from assay.workflow.ceiling import MAX_EXECUTOR_CALLS, MAX_WALL_S, worst_case_calls
from assay.workflow.run import read_run
from assay.workflow.wall import STOP_GRACE_S, abandoned
from workflow_steps import memory_ledger, step_of, workflow_of

GOOD = {"items": [1]}


def kinds(engine: Engine, run_id: str) -> list[str]:
    return [entry.kind for entry in engine.ledger.query(run=run_id)]


def criteria(engine: Engine, run_id: str) -> list[dict[str, Any]]:
    (verdict,) = engine.ledger.query(run=run_id, kind="verdict")
    found: list[dict[str, Any]] = verdict.body["verdict"]["criteria"]
    return found


class Stubborn:
    """An async executor that swallows every cancellation until ``release`` is set, then
    returns ``GOOD``; ``started`` is set once it runs."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.returned = asyncio.Event()
        self.cancellations = 0

    async def __call__(self, ctx: StepContext) -> dict[str, Any]:
        self.started.set()
        while not self.release.is_set():
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancellations += 1
        self.returned.set()
        return GOOD


class Blocked:
    """A plain executor blocked in its thread until ``release`` is set, then returning
    ``GOOD``; it tells the loop ``started`` once it runs."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.started = asyncio.Event()
        self.release = threading.Event()
        self.threads: list[threading.Thread] = []

    def __call__(self, ctx: StepContext) -> dict[str, Any]:
        self.threads.append(threading.current_thread())
        self.loop.call_soon_threadsafe(self.started.set)
        self.release.wait(30)  # a guard: each test releases it
        return GOOD


def test_a_run_whose_workflow_sets_no_wall_parks_at_the_default_saying_so() -> None:
    async def main() -> tuple[Engine, Any]:
        clock = VirtualClock()

        async def hang(ctx: StepContext) -> Any:
            await asyncio.Event().wait()

        engine = Engine(workflow_of(step_of("s", hang)), memory_ledger(clock), clock=clock)
        task = asyncio.create_task(engine.astart({}))
        await clock.advance(DEFAULT_WALL_S - 1)
        assert not task.done()
        await clock.advance(1)
        return engine, await asyncio.wait_for(task, 30)  # a guard: it ends at once

    engine, record = asyncio.run(main())

    bound = (
        "the workflow budget's wall_s ran out (3600 of 3600; the default wall, as the "
        "workflow's budget sets no wall_s)"
    )
    assert DEFAULT_WALL_S == 3600
    assert record.status is RunStatus.PARKED
    assert record.park is not None
    assert (record.park.step, record.park.reason) == ("s", bound)
    assert kinds(engine, record.run_id) == ["commit", "verdict", "park"]
    assert criteria(engine, record.run_id)[0]["reason"] == (
        f"{bound} while the executor was still running; it was cancelled"
    )


@pytest.mark.parametrize(
    ("budget", "default", "parks_at", "reason"),
    [
        (None, 5.0, 5, "the workflow budget's wall_s ran out (5 of 5; the default wall, as the "
         "workflow's budget sets no wall_s)"),
        ({"wall_s": 2.0}, 5.0, 2, "the workflow budget's wall_s ran out (2 of 2)"),
    ],
)  # fmt: skip
def test_the_default_wall_is_the_engines_to_set_and_the_workflows_own_wins(
    budget: dict[str, Any] | None, default: float, parks_at: float, reason: str
) -> None:
    async def main() -> tuple[Any, float]:
        clock = VirtualClock()

        async def hang(ctx: StepContext) -> Any:
            await asyncio.Event().wait()

        workflow = workflow_of(step_of("s", hang), budget=budget)
        engine = Engine(workflow, memory_ledger(clock), clock=clock, default_wall_s=default)
        task = asyncio.create_task(engine.astart({}))
        await clock.advance(10)
        return await asyncio.wait_for(task, 30), engine.clock.monotonic()

    record, _ = asyncio.run(main())

    assert record.park is not None
    assert record.park.reason == reason
    assert record.park.usage.wall_s == parks_at


@pytest.mark.parametrize("wrong", [0, -1.0, float("nan"), float("inf"), MAX_WALL_S + 1, True])
def test_a_default_wall_that_is_no_positive_number_of_seconds_up_to_a_day_is_refused(
    wrong: Any,
) -> None:
    with pytest.raises(WorkflowError) as refused:
        Engine(workflow_of(step_of("s", lambda ctx: GOOD)), memory_ledger(), default_wall_s=wrong)

    assert str(refused.value) == (
        "default_wall_s must be a number of seconds above 0 and at most 86,400 (a day; "
        f"MAX_WALL_S), not {wrong!r}"
    )
    assert refused.value.field == "default_wall_s"


def test_an_executor_that_swallows_its_cancellation_is_abandoned_and_the_run_parks() -> None:
    """It ignores the cancellation at its bound; after the grace it is no longer waited for,
    the run parks (no fresh attempt starts beside it), and what it returns later is dropped."""

    async def main() -> tuple[Engine, Any, Stubborn]:
        clock = VirtualClock()
        stubborn = Stubborn()
        step = step_of("s", stubborn, escalation=["fresh_attempt", "human"])
        engine = Engine(workflow_of(step, budget={"wall_s": 2}), memory_ledger(clock), clock=clock)
        task = asyncio.create_task(engine.astart({}))
        await stubborn.started.wait()
        await clock.advance(2)
        assert stubborn.cancellations == 1
        await clock.advance(STOP_GRACE_S - 0.5)
        assert not task.done()  # still within the grace
        await clock.advance(0.5)
        record = await asyncio.wait_for(task, 30)
        assert abandoned() == 1
        size = engine.ledger.size

        stubborn.release.set()  # it answers, late
        await stubborn.returned.wait()
        await clock.settle()
        assert abandoned() == 0
        assert engine.ledger.size == size
        return engine, record, stubborn

    engine, record, stubborn = asyncio.run(main())

    assert stubborn.cancellations == 2  # at its bound, and as it was abandoned

    bound = "the workflow budget's wall_s ran out (2 of 2)"
    assert record.status is RunStatus.PARKED
    assert read_run(engine.ledger, record.run_id).status is RunStatus.PARKED
    assert record.committed == {}
    assert kinds(engine, record.run_id) == ["commit", "verdict", "park"]
    assert criteria(engine, record.run_id) == [
        {
            "criterion": "budget",
            "passed": False,
            "reason": f"{bound} while the executor was still running, and it did not stop "
            "within 5 s of being cancelled: it was abandoned, and nothing it returns later is "
            "judged or committed",
            "verifier": "budget",
        }
    ]
    assert record.park is not None
    assert record.park.step == "s"
    assert record.park.reason == (
        f"step s's executor did not stop after {bound}; it was abandoned (it may still be "
        "running), so the run parks rather than start another attempt beside it"
    )


def test_a_plain_executor_blocked_in_its_thread_is_abandoned_and_its_late_answer_dropped() -> None:
    """A plain executor runs in a thread of its own, so the loop runs on (the clock is
    advanced while it blocks); at its bound plus the grace the run parks without it."""

    async def main() -> tuple[Engine, Any, Blocked]:
        clock = VirtualClock()
        blocked = Blocked(asyncio.get_running_loop())
        step = step_of("s", blocked, escalation=["fresh_attempt", "human"])
        budget = {"attempt": {"wall_s": 1.5}}
        engine = Engine(workflow_of(step, budget=budget), memory_ledger(clock), clock=clock)
        task = asyncio.create_task(engine.astart({}))
        await blocked.started.wait()
        await clock.advance(1.5)
        assert not task.done()
        await clock.advance(STOP_GRACE_S)
        record = await asyncio.wait_for(task, 30)
        size = engine.ledger.size

        blocked.release.set()  # it answers, late
        (thread,) = blocked.threads
        await asyncio.to_thread(thread.join, 30)
        await clock.settle()  # its answer reaches the loop, and is dropped
        assert engine.ledger.size == size
        return engine, record, blocked

    engine, record, blocked = asyncio.run(main())

    bound = "the attempt 1 budget's wall_s ran out (1.5 of 1.5)"
    assert blocked.threads[0] is not threading.main_thread()
    assert blocked.threads[0].daemon
    assert kinds(engine, record.run_id) == ["commit", "verdict", "park"]
    assert criteria(engine, record.run_id)[0]["reason"] == (
        f"{bound} while the executor was still running, and its thread, which cannot be "
        "stopped, did not end within 5 s: it was abandoned, and nothing it returns later is "
        "judged or committed"
    )
    assert record.park is not None
    assert record.park.reason == (
        f"step s's executor did not stop after {bound}; it was abandoned (it may still be "
        "running), so the run parks rather than start another attempt beside it"
    )


def test_a_plain_executor_that_ends_within_the_grace_is_out_of_time_and_the_ladder_goes_on() -> (
    None
):
    async def main() -> tuple[Engine, Any]:
        clock = VirtualClock()
        blocked = Blocked(asyncio.get_running_loop())
        calls = 0

        def first_blocks(ctx: StepContext) -> dict[str, Any]:
            nonlocal calls
            calls += 1
            return blocked(ctx) if calls == 1 else GOOD

        step = step_of("s", first_blocks, escalation=["fresh_attempt"])
        budget = {"attempt": {"wall_s": 1}}
        engine = Engine(workflow_of(step, budget=budget), memory_ledger(clock), clock=clock)
        task = asyncio.create_task(engine.astart({}))
        await blocked.started.wait()
        await clock.advance(1)
        blocked.release.set()
        return engine, await asyncio.wait_for(task, 30)

    engine, record = asyncio.run(main())

    assert record.status is RunStatus.COMPLETED
    assert kinds(engine, record.run_id) == ["commit", "verdict", "escalation", "verdict", "commit"]
    first = engine.ledger.query(run=record.run_id, kind="verdict")[0]
    assert first.body["output"] is None
    assert first.body["verdict"]["critique"] == (
        "budget: the attempt 1 budget's wall_s ran out (1 of 1) while the executor was still "
        "running in its thread, which cannot be stopped; what it returned is discarded"
    )


def test_a_sync_start_returns_though_an_executor_does_not_stop() -> None:
    """``start`` used ``asyncio.run``, which at its end waited for ever for an executor that
    swallows every cancellation; now the run parks and ``start`` returns, and the executor
    is cancelled once more as the loop ends (this one takes that one, once the run parked)."""
    clock = VirtualClock()
    parked = False
    swallowed = 0

    def observe(kind: str, body: Any) -> None:
        nonlocal parked
        parked = parked or kind == "park"

    async def stubborn(ctx: StepContext) -> Any:
        nonlocal swallowed
        while True:
            try:
                await clock.advance(1)  # time passes only while it runs
            except asyncio.CancelledError:
                if parked:
                    raise
                swallowed += 1

    engine = Engine(
        workflow_of(step_of("s", stubborn), budget={"wall_s": 3}),
        memory_ledger(clock),
        clock=clock,
        observer=observe,
    )

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    assert record.park is not None
    assert record.park.reason.startswith("step s's executor did not stop after the workflow")
    assert swallowed == 1
    assert abandoned() == 0


HUGE = {"attempts": 1_000_000, "iterations_per_attempt": 100_000}


def test_a_budget_beyond_the_ceiling_on_executor_calls_is_refused_at_load() -> None:
    step = step_of("s", lambda ctx: GOOD, escalation=["fresh_attempt", "fresh_attempt", "human"])

    with pytest.raises(WorkflowError) as refused:
        workflow_of(step, budget=HUGE)

    assert str(refused.value) == (
        "workflow 'test_flow': its budget allows up to 300,000 executor calls in one run (step "
        "'s': 3 attempts × 100,000 iterations_per_attempt), over the ceiling of 1,000 "
        "(MAX_EXECUTOR_CALLS); lower budget.attempts or budget.iterations_per_attempt, bound "
        "the run with budget.iterations, or, if a run may really take that, say so in the "
        "workflow's budget with allow_large_budget: true"
    )
    assert (refused.value.workflow, refused.value.step, refused.value.field) == (
        "test_flow",
        "s",
        "budget.iterations_per_attempt",
    )


def test_a_budget_that_says_so_may_go_beyond_the_ceilings() -> None:
    step = step_of("s", lambda ctx: GOOD, escalation=["fresh_attempt", "fresh_attempt", "human"])

    workflow = workflow_of(step, budget={**HUGE, "wall_s": 7 * 86400, "allow_large_budget": True})

    assert worst_case_calls(workflow) == 300_000
    Engine(workflow, memory_ledger())  # accepted by the engine too


@pytest.mark.parametrize(
    ("budget", "calls"),
    [
        ({"iterations_per_attempt": MAX_EXECUTOR_CALLS}, 1000),  # the ceiling itself
        ({"iterations_per_attempt": 100_000, "iterations": 50}, 50),  # bounded by the run's
        ({"attempts": 1_000_000, "iterations_per_attempt": 10}, 30),  # the ladder ends it
    ],
)
def test_the_worst_case_counts_what_really_bounds_a_run(budget: dict[str, Any], calls: int) -> None:
    step = step_of("s", lambda ctx: GOOD, escalation=["fresh_attempt", "fresh_attempt", "human"])
    if "attempts" not in budget:
        step["escalation"] = ["human"]

    assert worst_case_calls(workflow_of(step, budget=budget)) == calls


def test_the_worst_case_of_a_run_is_summed_over_its_steps() -> None:
    steps = [step_of(f"s{n}", lambda ctx: GOOD) for n in range(3)]
    budget = {"iterations_per_attempt": 334}

    with pytest.raises(WorkflowError, match=r"up to 1,002 executor calls in one run \(step 's0'"):
        workflow_of(*steps, budget=budget)


def test_a_wall_beyond_a_day_is_refused_at_load() -> None:
    with pytest.raises(WorkflowError) as refused:
        workflow_of(step_of("s", lambda ctx: GOOD), budget={"wall_s": 600_000.0})

    assert str(refused.value) == (
        "workflow 'test_flow': budget.wall_s is 600,000 s, over the ceiling of 86,400 s "
        "(MAX_WALL_S, a day); lower budget.wall_s (it is in seconds), or, if a run may really "
        "take that, say so in the workflow's budget with allow_large_budget: true"
    )
    assert refused.value.field == "budget.wall_s"


def test_allow_large_budget_is_the_workflows_to_say_not_a_steps() -> None:
    step = step_of("s", lambda ctx: GOOD, budget={"allow_large_budget": True})

    with pytest.raises(WorkflowError) as refused:
        workflow_of(step)

    assert str(refused.value) == (
        "step 's': budget.allow_large_budget is the workflow's to say, not a step's: move it "
        "to the workflow's budget"
    )
    assert refused.value.field == "budget.allow_large_budget"


def test_allow_large_budget_must_be_a_boolean() -> None:
    with pytest.raises(WorkflowError, match=r"budget\.allow_large_budget: Input should be a"):
        workflow_of(step_of("s", lambda ctx: GOOD), budget={"allow_large_budget": "yes"})


def test_the_engine_refuses_a_workflow_built_in_python_beyond_the_ceiling() -> None:
    loaded = workflow_of(step_of("s", lambda ctx: GOOD))
    built = Workflow(loaded.name, loaded.steps, Budget(iterations_per_attempt=5000))

    with pytest.raises(WorkflowError, match=r"up to 5,000 executor calls in one run"):
        Engine(built, memory_ledger())


def test_the_daemons_default_wall_comes_from_its_flag_variable_or_file(tmp_path: Any) -> None:
    file = tmp_path / "assay.toml"
    file.write_text("workflow_wall_s = 90\n")

    assert load_config({}, {}).workflow_wall_s == DEFAULT_WALL_S
    assert load_config({}, {}, file).workflow_wall_s == 90
    assert load_config({}, {"ASSAY_WORKFLOW_WALL_S": "7.5"}, file).workflow_wall_s == 7.5
    assert load_config({"workflow_wall_s": 30.0}, {}, file).workflow_wall_s == 30
    workflows = Workflows(memory_ledger(), default_wall_s=30.0)
    assert workflows.engine(workflow_of(step_of("s", lambda ctx: GOOD))).default_wall_s == 30
