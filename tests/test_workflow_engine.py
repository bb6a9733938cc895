"""The workflow engine: the gate, the critique loop, the ladder, budgets, park and resume."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from assay.clock import VirtualClock
from assay.errors import RunError, RunNotFoundError, WorkflowError, WrongTypeError
from assay.workflow import Engine, ModelSettings, ModelVerifier, RunStatus, StepContext, Workflows
from assay.workflow import run as run_module
from assay.workflow.chat import Completion
from assay.workflow.run import read_run
from assay.workflow.verdict import Verdict
from assay.workflow.verifier import CompositeVerifier
from workflow_steps import PlannerRecorder, Recorder, memory_ledger, step_of, workflow_of

UNUSED_ENDPOINT = ModelSettings(base_url="http://127.0.0.1:9/v1")  # each test's chat answers
GOOD = {"items": [1, 2]}
BAD = {"items": [1, -2]}


def kinds(engine: Engine, run_id: str) -> list[str]:
    return [entry.kind for entry in engine.ledger.query(run=run_id)]


def test_a_failed_verdicts_critique_goes_back_to_the_planner() -> None:
    executor = Recorder([BAD, GOOD])
    planner = PlannerRecorder()
    workflow = workflow_of(step_of("pick", executor, planner=planner))
    engine = Engine(workflow, memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    assert record.committed == {"pick": GOOD}
    critique = (
        "output.items.every(i => i > 0): does not hold (it evaluated to false); "
        "it read output.items = [1, -2]"
    )
    assert planner.seen == [(), (critique,)]
    assert executor.calls[1].plan == {"heed": critique}
    assert kinds(engine, record.run_id) == ["commit", "verdict", "verdict", "commit"]


def test_a_critique_gives_the_length_a_criterion_read() -> None:
    executor = Recorder([{"count": 1, "items": [1, 2]}, {"count": 2, "items": [1, 2]}])
    planner = PlannerRecorder()
    step = step_of(
        "pick",
        executor,
        "output.count === output.items.length",
        empty={"count": 0, "items": []},
        planner=planner,
    )
    engine = Engine(workflow_of(step), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    assert planner.seen[1] == (
        "output.count === output.items.length: does not hold (it evaluated to false); "
        "it read output.count = 1, output.items.length = 2",
    )


def test_nothing_is_committed_or_passed_on_before_its_verdict_passes() -> None:
    first = Recorder([BAD, GOOD])
    second = Recorder([{"items": [3]}])
    workflow = workflow_of(step_of("a", first), step_of("b", second))
    engine = Engine(workflow, memory_ledger())

    record = engine.start({"topic": "x"})

    assert second.calls[0].input == {"topic": "x", "steps": {"a": GOOD}}
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    assert [v.body["verdict"]["passed"] for v in verdicts] == [False, True, True]
    commits = engine.ledger.query(run=record.run_id, kind="commit")
    assert [c.body.get("step") for c in commits] == [None, "a", "b"]
    assert verdicts[0].body["output"] == BAD
    assert verdicts[0].body["verdict"]["criteria"][0] == {
        "criterion": "output.items.every(i => i > 0)",
        "passed": False,
        "reason": "does not hold (it evaluated to false); it read output.items = [1, -2]",
        "verifier": "expression",
    }


def test_a_fresh_attempt_starts_without_critiques_then_the_alternate_executor_runs() -> None:
    executor = Recorder([BAD])
    alternate = Recorder([GOOD])
    step = step_of("s", executor, escalation=["fresh_attempt", {"executor": alternate}, "human"])
    workflow = workflow_of(step, budget={"iterations_per_attempt": 2})
    engine = Engine(workflow, memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    assert [(c.attempt, c.iteration, len(c.critiques)) for c in executor.calls] == [
        (1, 1, 0),
        (1, 2, 1),
        (2, 1, 0),
        (2, 2, 1),
    ]
    assert [(c.attempt, c.iteration) for c in alternate.calls] == [(3, 1)]
    escalations = engine.ledger.query(run=record.run_id, kind="escalation")
    assert [e.body["rung"] for e in escalations] == ["fresh_attempt", f"executor: {alternate!r}"]
    assert escalations[0].body["reason"] == ("the attempt 1 budget's iterations ran out (2 of 2)")


def test_a_model_rung_hands_the_model_name_to_the_executor() -> None:
    executor = Recorder([BAD, GOOD])
    step = step_of("s", executor, escalation=[{"model": "bigger"}])
    engine = Engine(workflow_of(step, budget={"iterations_per_attempt": 1}), memory_ledger())

    engine.start({})

    assert [c.model for c in executor.calls] == [None, "bigger"]


@pytest.mark.parametrize(
    ("attempts", "spent"),
    [(1, "the step's one attempt is spent"), (2, "the step's 2 attempts are spent")],
)
def test_a_step_whose_attempts_are_spent_parks_saying_how_many(attempts: int, spent: str) -> None:
    executor = Recorder([BAD] * 4)
    step = step_of("s", executor, escalation=["fresh_attempt", "fresh_attempt"])
    budget = {"attempts": attempts, "iterations_per_attempt": 1}
    engine = Engine(workflow_of(step, budget=budget), memory_ledger())

    parked = engine.start({})

    assert parked.status is RunStatus.PARKED
    assert parked.park is not None
    assert parked.park.reason == (
        f"the attempt {attempts} budget's iterations ran out (1 of 1), and {spent}"
    )


def test_the_human_rung_parks_and_a_resume_takes_the_run_up_with_the_persons_input() -> None:
    executor = Recorder([BAD, BAD, GOOD])
    before = Recorder([GOOD])
    workflow = workflow_of(
        step_of("first", before),
        step_of("second", executor, escalation=["human"]),
        budget={"iterations_per_attempt": 2},
    )
    engine = Engine(workflow, memory_ledger())

    parked = engine.start({})

    assert parked.status is RunStatus.PARKED
    assert parked.next_step == "second"
    assert parked.committed == {"first": GOOD}
    assert parked.park is not None
    assert parked.park.reason == (
        "the attempt 1 budget's iterations ran out (2 of 2); the escalation ladder calls a person"
    )
    assert parked.park.usage.iterations == 2

    done = engine.resume(parked.run_id, {"hint": "use positives"})

    assert done.status is RunStatus.COMPLETED
    assert done.human == {"hint": "use positives"}
    assert executor.calls[-1].human == {"hint": "use positives"}
    assert len(before.calls) == 1
    assert kinds(engine, parked.run_id)[-4:] == ["park", "resume", "verdict", "commit"]


def test_a_completed_run_cannot_be_resumed_and_an_unknown_one_is_not_found() -> None:
    engine = Engine(workflow_of(step_of("s", Recorder([GOOD]))), memory_ledger())
    record = engine.start({})

    with pytest.raises(RunError) as caught:
        engine.resume(record.run_id, {})
    assert str(caught.value) == (
        f"cannot resume run {record.run_id!r}: every step has committed; there is nothing "
        "left to do"
    )
    with pytest.raises(RunNotFoundError, match="no run 'nope' in the ledger at memory:"):
        engine.resume("nope", {})


def test_budgets_charge_up_the_tree_and_park_the_step_when_its_tokens_run_out() -> None:
    clock = VirtualClock()
    executor = Recorder([BAD], clock=clock, advance=1.0, tokens=40)
    step = step_of("s", executor, budget={"tokens": 100}, escalation=["fresh_attempt"] * 5)
    workflow = workflow_of(step, budget={"iterations_per_attempt": 2, "tokens": 1000})
    engine = Engine(workflow, memory_ledger(clock), clock=clock)

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    assert len(executor.calls) == 3  # 40 + 40 + 40 = 120: the third overran, no fourth began
    assert record.park is not None
    assert record.park.reason == "the step s budget's tokens ran out (120 of 100)"
    assert record.park.usage.tokens == 120
    assert record.park.usage.wall_s == 3.0


def test_an_iteration_over_its_own_bound_is_discarded_unverified() -> None:
    executor = Recorder([GOOD], tokens=50)
    step = step_of("s", executor, budget={"iteration": {"tokens": 10}, "iterations_per_attempt": 1})
    engine = Engine(workflow_of(step), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    assert verdict.body["verdict"]["criteria"] == [
        {
            "criterion": "budget",
            "passed": False,
            "reason": "the iteration 1 budget's tokens ran out (50 of 10); the output is discarded",
            "verifier": "budget",
        }
    ]


def test_an_executor_that_raises_or_returns_no_object_fails_its_verdict() -> None:
    calls: list[int] = []

    def flaky(ctx: StepContext) -> Any:
        calls.append(ctx.iteration)
        if ctx.iteration == 1:
            raise RuntimeError("upstream timed out")
        if ctx.iteration == 2:
            return ["not", "an", "object"]
        return GOOD

    engine = Engine(workflow_of(step_of("s", flaky)), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    assert [v.body["verdict"]["critique"] for v in verdicts] == [
        "executor: the executor raised RuntimeError: upstream timed out",
        "executor: the executor returned list, not a JSON object",
        "",
    ]


def test_outputs_are_json_as_javascript_reads_it_or_fail_their_verdict() -> None:
    def produce(ctx: StepContext) -> Any:
        if ctx.iteration == 1:
            return {"items": [1], "note": "cut \ud83d"}  # half of a surrogate pair
        if ctx.iteration == 2:
            raise OSError(b"no \xff.csv".decode("utf-8", "surrogateescape"))
        return {"items": [2**70 + 1]}  # read, as JSON.parse would, as the double 2.0**70

    engine = Engine(workflow_of(step_of("s", produce)), memory_ledger())

    record = engine.start({"big": -(2**64) - 1})

    assert record.status is RunStatus.COMPLETED
    assert record.committed == {"s": {"items": [2.0**70]}}
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    assert [v.body["verdict"]["critique"] for v in verdicts] == [
        "executor: the output is not a JSON object: output.note: a string holds half of a "
        "surrogate pair, such as \\ud800 alone, which is not Unicode text; send each "
        "character whole or as a full surrogate pair",
        "executor: the executor raised OSError: no \\udcff.csv",
        "",
    ]
    (start, *_) = engine.ledger.query(run=record.run_id, kind="commit")
    assert start.body["input"] == {"big": -(2.0**64)}
    assert engine.ledger.verify().ok


def test_run_input_must_be_an_object_without_a_steps_key() -> None:
    engine = Engine(workflow_of(step_of("s", Recorder())), memory_ledger())
    with pytest.raises(WorkflowError, match="may not have a 'steps' key"):
        engine.start({"steps": []})
    assert engine.ledger.size == 0


def test_the_service_finds_workflows_by_name_and_lists_runs() -> None:
    workflow = workflow_of(step_of("s", Recorder([GOOD])), name="named")
    service = Workflows(memory_ledger(), workflows=[workflow])

    record = service.start("named", {"a": 1})

    assert service.get(record.run_id) == record
    assert [r.run_id for r in service.runs()] == [record.run_id]
    assert read_run(service.ledger, record.run_id).status is RunStatus.COMPLETED
    with pytest.raises(WorkflowError, match="no workflow 'other'"):
        service.start("other", {})


def test_the_event_loop_runs_on_while_a_model_verifier_is_asked() -> None:
    """The model is asked in a worker thread: here it answers only once the loop has run a
    task meanwhile, which a verifier called on the loop's own thread would never allow."""
    asked = asyncio.Event()
    loop_ran = threading.Event()

    class WaitsForTheLoop:
        def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
            self.loop = loop

        def complete(self, messages: list[Any], schema: dict[str, Any]) -> Completion:
            self.loop.call_soon_threadsafe(asked.set)
            if not loop_ran.wait(10):
                return Completion(None, 0)  # the loop was blocked: an unruled verdict
            ruling = {"passed": True, "reason": "cited"}
            return Completion(json.dumps({"checks": [ruling, ruling], "critique": ""}), 9)

    async def main() -> Any:
        model = WaitsForTheLoop(asyncio.get_running_loop())
        step = step_of("pick", Recorder([GOOD]))
        step["verify"]["prompt"] = "Check that the items are cited."
        engine = Engine(
            workflow_of(step),
            memory_ledger(),
            verifier=lambda s: ModelVerifier(UNUSED_ENDPOINT, s, chat=model),
        )

        async def on_the_loop() -> None:
            await asked.wait()
            loop_ran.set()

        meanwhile = asyncio.create_task(on_the_loop())
        record = await engine.astart({})
        await meanwhile
        return record, engine

    record, engine = asyncio.run(main())

    assert record.status is RunStatus.COMPLETED
    (verdict,) = [e.body["verdict"] for e in engine.ledger.query(kind="verdict")]
    assert (verdict["passed"], verdict["tokens"]) == (True, 9)
    assert [(c["verifier"], c["passed"], c["reason"]) for c in verdict["criteria"]] == [
        ("model", True, "cited"),
        ("model", True, "cited"),
    ]


def test_a_model_whose_code_raises_fails_the_verdict_and_the_run_goes_on() -> None:
    class Broken:
        def complete(self, messages: list[Any], schema: dict[str, Any]) -> Completion:
            raise KeyError("message")

    step = step_of("pick", Recorder([GOOD]), escalation=["human"])
    step["verify"]["prompt"] = "Check that the items are cited."
    engine = Engine(
        workflow_of(step, budget={"iterations_per_attempt": 1}),
        memory_ledger(),
        verifier=lambda s: ModelVerifier(UNUSED_ENDPOINT, s, chat=Broken()),
    )

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    (verdict,) = [e.body["verdict"] for e in engine.ledger.query(kind="verdict")]
    reason = "the model at http://127.0.0.1:9/v1 failed: KeyError: 'message'"
    assert (verdict["passed"], verdict["critique"]) == (False, reason)


def test_a_verifier_that_raises_fails_the_verdict_and_the_run_goes_on() -> None:
    class Raises:
        def verify(self, input: Any, output: Any) -> Any:
            raise RuntimeError("the rubric file is gone")

    step = step_of("pick", Recorder([GOOD]), escalation=["human"])
    engine = Engine(
        workflow_of(step, budget={"iterations_per_attempt": 1}),
        memory_ledger(),
        verifier=lambda s: Raises(),
    )

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    (verdict,) = [e.body["verdict"] for e in engine.ledger.query(kind="verdict")]
    assert verdict["criteria"] == [
        {
            "criterion": "verifier",
            "passed": False,
            "reason": "the verifier raised RuntimeError: the rubric file is gone",
            "verifier": "verifier",
        }
    ]


@pytest.mark.parametrize("page", [2, 500])
def test_runs_are_listed_a_page_at_a_time_and_by_status(
    page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listing read every run in the ledger at once; now it pages with after= and limit=,
    # reading commit entries a page at a time (a small page crosses several of them).
    monkeypatch.setattr(run_module, "_PAGE", page)
    executor = Recorder([GOOD, BAD, GOOD, GOOD, BAD, GOOD, BAD])
    step = step_of("s", executor, escalation=[])
    workflow = workflow_of(step, name="paged", budget={"iterations_per_attempt": 1})
    service = Workflows(memory_ledger(), workflows=[workflow])
    ids = [service.start("paged", {"n": n}).run_id for n in range(7)]
    parked = [ids[1], ids[4], ids[6]]

    assert [r.run_id for r in service.runs()] == ids
    assert [r.run_id for r in service.runs(limit=3)] == ids[:3]
    assert [r.run_id for r in service.runs(after=ids[2], limit=3)] == ids[3:6]
    assert [r.run_id for r in service.runs(after=ids[6])] == []
    assert [r.run_id for r in service.runs(status=RunStatus.PARKED)] == parked
    assert [r.run_id for r in service.runs(status="parked", after=ids[1], limit=1)] == [ids[4]]
    assert [r.run_id for r in service.runs(limit=0)] == []
    with pytest.raises(RunNotFoundError, match="no run 'nope' in the ledger"):
        service.runs(after="nope")
    with pytest.raises(WrongTypeError, match="status must be one of running, parked, completed"):
        service.runs(status="stuck")  # type: ignore[arg-type]
    with pytest.raises(WrongTypeError, match="limit must be a whole number ≥ 0, not -1"):
        service.runs(limit=-1)


def prompt_only(step_id: str, executor: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "executor": executor,
        "empty_output": {"answer": ""},
        "verify": {"prompt": "Check the answer is correct."},
    }


PROMPT_ONLY_REFUSAL = (
    "step 's' is checked only by its verifier prompt, and no model is configured to read it, "
    "so nothing would judge its output; configure a model (--model-url or --model-path, or "
    "the workflow's `model`) or add verify.criteria to the step"
)


def test_a_step_judged_only_by_a_prompt_is_refused_without_a_model() -> None:
    # It ran and committed anything: the verifier had no parts, and an empty verdict passed.
    executor = Recorder([{"answer": "totally wrong"}])
    engine = Engine(workflow_of(prompt_only("s", executor)), memory_ledger())

    with pytest.raises(WorkflowError) as refused:
        engine.start({})

    assert str(refused.value) == PROMPT_ONLY_REFUSAL
    assert (refused.value.step, refused.value.field) == ("s", "verify.prompt")
    assert engine.ledger.size == 0
    assert executor.calls == []


def test_a_run_that_reaches_a_prompt_only_step_is_not_resumed_without_a_model() -> None:
    first = step_of("first", Recorder([BAD, GOOD]), escalation=["human"])
    workflow = workflow_of(
        first, prompt_only("s", Recorder()), budget={"iterations_per_attempt": 1}
    )
    ledger = memory_ledger()
    parked = Engine(workflow, ledger, model=UNUSED_ENDPOINT).start({})
    assert (parked.status, parked.next_step) == (RunStatus.PARKED, "first")
    size = ledger.size

    with pytest.raises(WorkflowError) as refused:
        Engine(workflow, ledger).resume(parked.run_id, {"hint": "positives"})

    assert str(refused.value) == PROMPT_ONLY_REFUSAL
    assert ledger.size == size


def test_a_verdict_with_no_rulings_fails() -> None:
    class Lenient:
        def verify(self, input: Any, output: Any) -> Verdict:
            return Verdict(passed=True, critique="", criteria=())

    assert CompositeVerifier([]).verify({}, {}) == Verdict(
        passed=False, critique="nothing judged this output, so it cannot pass", criteria=()
    )
    step = step_of("s", Recorder([GOOD]), escalation=["human"])
    engine = Engine(
        workflow_of(step, budget={"iterations_per_attempt": 1}),
        memory_ledger(),
        verifier=lambda s: Lenient(),
    )

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    (verdict,) = [e.body["verdict"] for e in engine.ledger.query(kind="verdict")]
    assert (verdict["passed"], verdict["critique"]) == (
        False,
        "verifier: nothing judged this output, so it cannot pass",
    )


def test_an_executor_cannot_change_the_input_its_verifier_judges() -> None:
    seen: list[Any] = []

    def planner(ctx: StepContext) -> None:
        ctx.input["sources"].append("planted")

    def cheat(ctx: StepContext) -> dict[str, Any]:
        seen.append(list(ctx.input["sources"]))
        ctx.input["sources"].append("fake")
        return {"hypotheses": [{"source": "fake"}]}

    step = {
        "id": "s",
        "executor": cheat,
        "planner": planner,
        "empty_output": {"hypotheses": []},
        "verify": {"criteria": ["output.hypotheses.every(h => input.sources.includes(h.source))"]},
        "escalation": ["human"],
    }
    engine = Engine(workflow_of(step, budget={"iterations_per_attempt": 2}), memory_ledger())

    record = engine.start({"sources": ["a"]})

    assert record.status is RunStatus.PARKED
    assert seen == [["a"], ["a"]]
    assert record.input == {"sources": ["a"]}
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    assert [v.body["verdict"]["passed"] for v in verdicts] == [False, False]


@pytest.mark.parametrize(
    ("tokens", "cost", "reason"),
    [
        (-1000, 0.0, "tokens must be a whole number from 0 to 2**53 - 1, not -1000"),
        (2**60, 0.0, "tokens must be a whole number from 0 to 2**53 - 1, not 1152921504606846976"),
        ("5", 0.0, "tokens must be a whole number from 0 to 2**53 - 1, not '5'"),
        (True, 0.0, "tokens must be a whole number from 0 to 2**53 - 1, not True"),
        (0, -5.0, "cost must be a finite number ≥ 0, not -5.0"),
        (0, float("nan"), "cost must be a finite number ≥ 0, not nan"),
        (0, float("inf"), "cost must be a finite number ≥ 0, not inf"),
    ],
)
def test_a_bad_charge_fails_its_verdict_and_is_not_charged(
    tokens: Any, cost: Any, reason: str
) -> None:
    step = step_of("s", Recorder([GOOD], tokens=tokens, cost=cost), escalation=["human"])
    budget = {"iterations_per_attempt": 2, "tokens": 100, "cost": 1.0}
    engine = Engine(workflow_of(step, budget=budget), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    assert record.park is not None
    assert (record.park.usage.tokens, record.park.usage.cost) == (0, 0.0)
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    assert [v.body["verdict"]["critique"] for v in verdicts] == [
        f"executor: the executor's StepResult.{reason}; nothing was charged and the output is "
        "discarded"
    ] * 2
    assert engine.ledger.verify().ok


def test_a_planners_bad_charge_fails_its_verdict() -> None:
    from assay.workflow import Plan

    step = step_of("s", Recorder([GOOD]), planner=lambda ctx: Plan({}, tokens=-1), escalation=[])
    engine = Engine(workflow_of(step, budget={"iterations_per_attempt": 1}), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    assert verdict.body["verdict"]["critique"] == (
        "executor: the planner's Plan.tokens must be a whole number from 0 to 2**53 - 1, not -1; "
        "nothing was charged and the output is discarded"
    )


def test_charges_that_add_up_beyond_json_numbers_still_park() -> None:
    most = 2**53 - 1
    step = step_of("s", Recorder([BAD], tokens=most, cost=1e308), escalation=["human"])
    engine = Engine(workflow_of(step, budget={"iterations_per_attempt": 3}), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.PARKED
    assert record.park is not None
    assert record.park.usage.tokens == most
    assert engine.ledger.verify().ok


def test_an_executor_that_cancels_itself_or_returns_an_unreadable_mapping_fails_its_verdict() -> (
    None
):
    from collections.abc import Iterator, Mapping

    class Unreadable(Mapping[str, Any]):
        def __getitem__(self, key: str) -> Any:
            raise KeyError(key)

        def __iter__(self) -> Iterator[str]:
            raise RuntimeError("dictionary changed size during iteration")

        def __len__(self) -> int:
            return 1

    async def produce(ctx: StepContext) -> Any:
        if ctx.iteration == 1:
            raise asyncio.CancelledError
        if ctx.iteration == 2:
            return Unreadable()
        return GOOD

    engine = Engine(workflow_of(step_of("s", produce)), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    assert [v.body["verdict"]["critique"] for v in verdicts] == [
        "executor: the executor was cancelled (it raised CancelledError) though the run was not",
        "executor: the executor's output could not be read: RuntimeError: dictionary changed "
        "size during iteration",
        "",
    ]


def test_a_run_that_is_cancelled_stays_running_and_records_no_verdict() -> None:
    async def main() -> tuple[Engine, str]:
        started = asyncio.Event()

        async def hang(ctx: StepContext) -> Any:
            started.set()
            await asyncio.Event().wait()

        engine = Engine(workflow_of(step_of("s", hang)), memory_ledger())
        task = asyncio.create_task(engine.astart({}, run_id="cancelled"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return engine, "cancelled"

    engine, run_id = asyncio.run(main())

    assert read_run(engine.ledger, run_id).status is RunStatus.RUNNING
    assert kinds(engine, run_id) == ["commit"]


def test_a_hung_async_executor_is_cancelled_when_the_wall_bound_runs_out() -> None:
    async def main() -> tuple[Engine, Any]:
        clock = VirtualClock()

        async def hang(ctx: StepContext) -> Any:
            await asyncio.sleep(3600)  # real time: only the virtual wall bound can end it

        workflow = workflow_of(step_of("s", hang), budget={"wall_s": 1})
        engine = Engine(workflow, memory_ledger(clock), clock=clock)
        task = asyncio.create_task(engine.astart({}))
        await clock.advance(1)
        return engine, await asyncio.wait_for(task, 30)  # a guard: it ends at once

    engine, record = asyncio.run(main())

    assert record.status is RunStatus.PARKED
    assert record.park is not None
    assert record.park.reason == "the workflow budget's wall_s ran out (1 of 1)"
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    assert verdict.body["verdict"]["criteria"] == [
        {
            "criterion": "budget",
            "passed": False,
            "reason": "the workflow budget's wall_s ran out (1 of 1) while the executor was "
            "still running; it was cancelled",
            "verifier": "budget",
        }
    ]


def test_when_an_attempts_wall_runs_out_on_a_hung_executor_the_ladder_goes_on() -> None:
    async def main() -> tuple[Engine, Any]:
        clock = VirtualClock()

        async def slow_then_quick(ctx: StepContext) -> Any:
            if ctx.attempt == 1:
                await clock.sleep(3600)
            return GOOD

        step = step_of(
            "s", slow_then_quick, escalation=["fresh_attempt"], budget={"attempt": {"wall_s": 5}}
        )
        engine = Engine(workflow_of(step), memory_ledger(clock), clock=clock)
        task = asyncio.create_task(engine.astart({}))
        await clock.advance(5)
        return engine, await asyncio.wait_for(task, 30)

    engine, record = asyncio.run(main())

    assert record.status is RunStatus.COMPLETED
    (escalation,) = engine.ledger.query(run=record.run_id, kind="escalation")
    assert escalation.body["reason"] == "the attempt 1 budget's wall_s ran out (5 of 5)"
    assert kinds(engine, record.run_id) == ["commit", "verdict", "escalation", "verdict", "commit"]


@pytest.mark.parametrize("human", [[1], "str", 5])
def test_a_resumes_human_input_must_be_a_json_object(human: Any) -> None:
    engine = Engine(
        workflow_of(step_of("s", Recorder([BAD]), escalation=["human"])), memory_ledger()
    )
    parked = engine.start({})
    size = engine.ledger.size

    with pytest.raises(WorkflowError) as refused:
        engine.resume(parked.run_id, human)

    assert str(refused.value) == (
        "the human input to a resume must be a JSON object, not "
        f'{type(human).__name__}; wrap it, e.g. {{"hint": ...}}'
    )
    assert engine.ledger.size == size
