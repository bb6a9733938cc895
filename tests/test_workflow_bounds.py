"""What a step may wait for and what a run may record: a model verifier's ruling is waited
for only within the tightest wall bound, an output larger than ``output_bytes`` is neither
judged nor recorded, and a run's input or a resume's larger than the workflow's is refused."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from assay.clock import VirtualClock
from assay.errors import RunError, WorkflowError
from assay.ledger import Ledger
from assay.ledger.canonical import canonical_json
from assay.workflow import Engine, ModelSettings, ModelVerifier, RunStatus, StepContext
from assay.workflow.chat import Completion
from assay.workflow.run import read_run
from workflow_steps import PlannerRecorder, Recorder, memory_ledger, step_of, workflow_of

UNUSED_ENDPOINT = ModelSettings(base_url="http://127.0.0.1:9/v1")  # each test's chat answers
GOOD = {"items": [1, 2]}
MIB = 1024 * 1024  # the default output_bytes
LATE = (
    "the workflow budget's wall_s ran out (1 of 1) before the verifier ruled; the output is "
    "not committed, and a ruling that comes later is ignored"
)


class Stalls:
    """A model that answers (a pass on every check) only once ``release`` is set.

    ``asked`` is called from the model's thread when it is asked; the threads it was asked in
    are kept, so a test can wait for them to end.
    """

    def __init__(self, asked: Any) -> None:
        self.asked = asked
        self.release = threading.Event()
        self.threads: list[threading.Thread] = []

    def complete(self, messages: list[Any], schema: dict[str, Any]) -> Completion:
        self.threads.append(threading.current_thread())
        self.asked()
        self.release.wait(30)  # a guard: each test releases it
        ruling = {"passed": True, "reason": "cited"}
        return Completion(json.dumps({"checks": [ruling, ruling], "critique": ""}), 9)

    def finish(self) -> None:
        """Let the model answer, and wait until every thread it was asked in has ended."""
        self.release.set()
        for thread in self.threads:
            thread.join(30)
            assert not thread.is_alive()


def judged_by(model: Stalls, clock: VirtualClock) -> Engine:
    step = step_of("pick", Recorder([GOOD]), escalation=["human"])
    step["verify"]["prompt"] = "Check that the items are cited."
    return Engine(
        workflow_of(step, budget={"wall_s": 1}),
        memory_ledger(clock),
        clock=clock,
        verifier=lambda s: ModelVerifier(UNUSED_ENDPOINT, s, chat=model),
    )


def assert_parked_unjudged(engine: Engine, run_id: str) -> None:
    """The run's verdict failed on the wall bound, and nothing of the model's ruling is in
    the ledger: no pass, no tokens, no commit."""
    assert [entry.kind for entry in engine.ledger.query(run=run_id)] == [
        "commit",
        "verdict",
        "park",
    ]
    (verdict,) = engine.ledger.query(run=run_id, kind="verdict")
    assert verdict.body["output"] == GOOD
    assert verdict.body["verdict"] == {
        "passed": False,
        "critique": f"budget: {LATE}",
        "criteria": [
            {"criterion": "budget", "passed": False, "reason": LATE, "verifier": "budget"}
        ],
        "tokens": 0,
        "cost": 0.0,
    }
    record = read_run(engine.ledger, run_id)
    assert record.status is RunStatus.PARKED
    assert record.committed == {}
    assert record.park is not None
    assert record.park.reason == "the workflow budget's wall_s ran out (1 of 1)"


def test_the_wait_for_a_model_ends_with_the_wall_bound_and_its_late_ruling_is_dropped() -> None:
    """The model is asked in a thread nothing can stop; when the workflow's wall bound runs
    out the run stops waiting, fails the verdict and parks. The ruling that comes after, to
    the same event loop, is dropped: no entry, no commit, no error."""
    errors: list[dict[str, Any]] = []

    async def main() -> tuple[Engine, Stalls, str, int]:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, context: errors.append(context))
        clock = VirtualClock()
        asked = asyncio.Event()
        model = Stalls(lambda: loop.call_soon_threadsafe(asked.set))
        engine = judged_by(model, clock)
        task = asyncio.create_task(engine.astart({}))
        try:
            await asked.wait()
            await clock.advance(1)
            record = await asyncio.wait_for(task, 30)  # a guard: it ends at once
            parked_at = engine.ledger.size
        finally:
            model.finish()
        await clock.settle()  # the late ruling has reached the loop: let it be handled
        return engine, model, record.run_id, parked_at

    engine, model, run_id, parked_at = asyncio.run(main())

    assert len(model.threads) == 1
    assert engine.ledger.size == parked_at
    assert_parked_unjudged(engine, run_id)
    assert errors == []


def test_a_sync_start_returns_at_the_wall_bound_while_the_model_still_has_not_ruled() -> None:
    """``Engine.start`` runs its own event loop: it returns once the run parks, though the
    model's thread runs on (its loop's shutdown does not wait for it), and the ruling that
    comes once the loop is closed is dropped without an error in the thread."""
    clock = VirtualClock()
    loops: list[asyncio.AbstractEventLoop] = []

    async def executor(ctx: StepContext) -> dict[str, Any]:
        loops.append(asyncio.get_running_loop())
        return GOOD

    def asked() -> None:  # the model's thread moves the run's clock past the bound
        asyncio.run_coroutine_threadsafe(clock.advance(1), loops[0])

    model = Stalls(asked)
    step = step_of("pick", executor, escalation=["human"])
    step["verify"]["prompt"] = "Check that the items are cited."
    engine = Engine(
        workflow_of(step, budget={"wall_s": 1}),
        memory_ledger(clock),
        clock=clock,
        verifier=lambda s: ModelVerifier(UNUSED_ENDPOINT, s, chat=model),
    )
    try:
        record = engine.start({})
        assert [thread.is_alive() for thread in model.threads] == [True]
        parked_at = engine.ledger.size
    finally:
        model.finish()  # an error in the thread would fail the test (warnings are errors)

    assert loops[0].is_closed()
    assert engine.ledger.size == parked_at
    assert_parked_unjudged(engine, record.run_id)


def oversized_message(size: int, limit: int) -> str:
    return (
        f"executor: the output is {size:,} bytes as canonical JSON, over the step's limit of "
        f"{limit:,} (budget.output_bytes), so it was neither judged nor recorded; return less, "
        "or store the data elsewhere and return a reference to it"
    )


def test_an_output_over_a_mebibyte_fails_its_verdict_and_never_reaches_the_ledger() -> None:
    huge = {"items": [], "blob": "ab" * (MIB // 2)}  # 1 MiB + 22 bytes as JSON
    executor = Recorder([huge, GOOD])
    planner = PlannerRecorder()
    engine = Engine(workflow_of(step_of("s", executor, planner=planner)), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    assert record.committed == {"s": GOOD}
    verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
    message = oversized_message(MIB + 22, MIB)
    assert [(v.body["output"], v.body["verdict"]["critique"]) for v in verdicts] == [
        (None, message),
        (GOOD, ""),
    ]
    assert verdicts[0].body["verdict"]["criteria"] == [
        {
            "criterion": "executor",
            "passed": False,
            "reason": message.removeprefix("executor: "),
            "verifier": "executor",
        }
    ]
    assert planner.seen == [(), (message,)]  # the critique loop handles it as any failure
    stored = [canonical_json(entry.body) for entry in engine.ledger.query(run=record.run_id)]
    assert max(len(body) for body in stored) < 1000
    assert engine.ledger.verify().ok


@pytest.mark.parametrize(
    ("workflow_limit", "step_limit", "limit"),
    [(13, None, 13), (12, None, 12), (1000, 13, 13), (2, 12, 12)],
)
def test_output_bytes_is_the_workflows_unless_the_step_says_and_an_output_of_it_passes(
    workflow_limit: int, step_limit: int | None, limit: int
) -> None:
    output = {"items": [1]}  # {"items":[1]}: 13 bytes
    budget = {"iterations_per_attempt": 1} | ({"output_bytes": step_limit} if step_limit else {})
    step = step_of("s", Recorder([output]), escalation=[], budget=budget)
    engine = Engine(
        workflow_of(step, budget={"output_bytes": workflow_limit}, example_input={}),
        memory_ledger(),
    )

    record = engine.start({})

    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    if limit >= 13:
        assert record.status is RunStatus.COMPLETED
        assert verdict.body["output"] == output
    else:
        assert record.status is RunStatus.PARKED
        assert verdict.body["output"] is None
        assert verdict.body["verdict"]["critique"] == oversized_message(13, limit)


def test_output_bytes_is_a_bound_of_a_whole_budget_only() -> None:
    step = step_of("s", Recorder(), budget={"attempt": {"output_bytes": 10}})
    with pytest.raises(WorkflowError) as refused:
        workflow_of(step)
    assert str(refused.value) == (
        "step 's': budget.attempt.output_bytes: Extra inputs are not permitted (got 10)"
    )
    with pytest.raises(WorkflowError) as refused:
        workflow_of(step_of("s", Recorder()), budget={"output_bytes": 0})
    assert str(refused.value) == (
        "workflow 'test_flow': budget.output_bytes: Input should be greater than or equal to 1 "
        "(got 0)"
    )


def test_an_output_holding_2_53_is_recorded_as_the_double_it_is() -> None:
    # RFC 8785 writes integers only up to 2**53 - 1: an output holding 2**53 as an integer
    # once made the ledger refuse the verdict entry, and the run crashed with
    # LedgerEntryError. Outputs are copied as state is, so it is the double JSON reads.
    executor = Recorder([{"items": [2**53]}])
    engine = Engine(workflow_of(step_of("s", executor)), memory_ledger())

    record = engine.start({})

    assert record.status is RunStatus.COMPLETED
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    (stored,) = verdict.body["output"]["items"]
    assert (stored, type(stored)) == (2.0**53, float)


def input_refusal(what: str, size: int, limit: int, refused: str) -> str:
    return (
        f"{what} is {size:,} bytes as canonical JSON, over the workflow's limit of {limit:,} "
        f"(budget.output_bytes), so {refused} and nothing was recorded; send less, or store "
        "the data elsewhere and send a reference to it"
    )


def test_a_run_input_over_a_mebibyte_is_refused_and_nothing_is_recorded() -> None:
    # A run's input is recorded in its start entry and handed to every step, as an output
    # is; it was taken at any size.
    huge = {"blob": "ab" * (MIB // 2)}  # {"blob":"…"}: 1 MiB + 11 bytes
    executor = Recorder([GOOD])
    engine = Engine(workflow_of(step_of("s", executor)), memory_ledger())

    with pytest.raises(WorkflowError) as refused:
        engine.start(huge)

    assert str(refused.value) == input_refusal(
        "the run's input", MIB + 11, MIB, "no run was started"
    )
    assert (refused.value.field, refused.value.workflow) == ("input", "test_flow")
    assert (engine.ledger.size, executor.calls) == (0, [])
    exactly = {"blob": "a" * (MIB - 11)}  # 1 MiB: the limit itself is allowed
    assert engine.start(exactly).status is RunStatus.COMPLETED


def test_a_resume_input_over_the_workflows_output_bytes_is_refused_unrecorded() -> None:
    # The workflow's limit holds for inputs (20 bytes here), whatever a step's says.
    executor = Recorder([{"items": [-1]}])
    step = step_of("s", executor, escalation=["human"], budget={"output_bytes": 1000})
    engine = Engine(
        workflow_of(step, budget={"iterations_per_attempt": 1, "output_bytes": 20}),
        memory_ledger(),
    )
    parked = engine.start({"topic": "x"})  # {"topic":"x"}: 13 bytes
    assert parked.status is RunStatus.PARKED
    recorded = engine.ledger.size

    with pytest.raises(WorkflowError) as refused:
        engine.resume(parked.run_id, {"hint": "a" * 20})  # {"hint":"aaa…"}: 31 bytes

    assert str(refused.value) == input_refusal("the human input", 31, 20, "the run was not resumed")
    assert (engine.ledger.size, len(executor.calls)) == (recorded, 1)
    assert read_run(engine.ledger, parked.run_id).status is RunStatus.PARKED
    with pytest.raises(WorkflowError) as too_big:
        engine.start({"topic": "x" * 10})
    assert str(too_big.value) == input_refusal("the run's input", 22, 20, "no run was started")
    assert engine.ledger.size == recorded


def test_a_passed_output_is_recorded_once_in_its_verdict_and_its_commit_names_that() -> None:
    # It was recorded twice, in its verdict entry and again in its commit entry: a passed
    # output of 1 MiB made 2 MiB of ledger.
    note = "n" * 10_000
    first = Recorder([{"items": [1], "note": note}])
    second = Recorder([{"items": [2]}])
    workflow = workflow_of(step_of("a", first), step_of("b", second))
    engine = Engine(workflow, memory_ledger())

    record = engine.start({})

    assert record.committed == {"a": {"items": [1], "note": note}, "b": {"items": [2]}}
    assert second.calls[0].input["steps"] == {"a": {"items": [1], "note": note}}
    entries = engine.ledger.query(run=record.run_id)
    holding = [entry.kind for entry in entries if note in canonical_json(entry.body).decode()]
    assert holding == ["verdict"]
    verdict, commit = (entry for entry in entries if entry.body.get("step") == "a")
    assert (verdict.kind, commit.kind) == ("verdict", "commit")
    assert commit.body == {
        "event": "commit",
        "step": "a",
        "attempt": 1,
        "iteration": 1,
        "verdict": verdict.seq,
    }
    assert read_run(engine.ledger, record.run_id) == record


def hand_written_run(commit: dict[str, Any], passed: bool = True) -> Ledger:
    """A ledger holding one run of one step ``s``: its start, a verdict, then ``commit``."""
    ledger = memory_ledger()
    start = {"event": "start", "workflow": "test_flow", "source": None, "steps": ["s"]}
    ledger.append("commit", start | {"input": {}}, run="r")
    result = {"criterion": "c", "passed": passed, "reason": "", "verifier": "expression"}
    verdict = {"passed": passed, "critique": "", "criteria": [result], "tokens": 0, "cost": 0.0}
    judged = {"step": "s", "attempt": 1, "iteration": 1, "rung": "first", "output": GOOD}
    ledger.append("verdict", judged | {"verdict": verdict}, run="r")
    ledger.append(
        "commit", {"event": "commit", "step": "s", "attempt": 1, "iteration": 1} | commit, run="r"
    )
    return ledger


def test_a_commit_that_holds_its_output_as_older_ones_do_still_reads() -> None:
    record = read_run(hand_written_run({"output": GOOD}), "r")
    assert (record.status, record.committed) == (RunStatus.COMPLETED, {"s": GOOD})
    assert read_run(hand_written_run({"verdict": 2}), "r").committed == {"s": GOOD}


@pytest.mark.parametrize(("seq", "passed"), [(1, True), (3, True), (2, False)])
def test_a_commit_naming_no_passed_verdict_of_its_iteration_is_refused(
    seq: int, passed: bool
) -> None:
    with pytest.raises(RunError) as refused:
        read_run(hand_written_run({"verdict": seq}, passed=passed), "r")
    assert str(refused.value) == (
        f"run 'r' commits step 's' (attempt 1, iteration 1) from entry {seq}, which is not "
        "that iteration's passed verdict in the run; the ledger was not written by the "
        "workflow engine"
    )


@pytest.mark.parametrize(
    ("commit", "problem"),
    [
        ({}, "verdict: Field required"),
        ({"verdict": "2"}, "verdict: Input should be a valid integer"),
        ({"verdict": True}, "verdict: Input should be a valid integer"),
        ({"verdict": 2, "output": GOOD}, "verdict: Extra inputs are not permitted"),
        ({"output": None}, "output: Input should be a valid dictionary"),
        ({"output": GOOD, "junk": 1}, "junk: Extra inputs are not permitted"),
    ],
)
def test_a_malformed_commit_entry_is_refused_naming_it(
    commit: dict[str, Any], problem: str
) -> None:
    # Each escaped as pydantic's ValidationError: exit 70 (a bug in assay) from assay resume,
    # a 500 from the daemon.
    with pytest.raises(RunError) as refused:
        read_run(hand_written_run(commit), "r")
    assert str(refused.value) == (
        f"run 'r': entry 3 (commit) is not one the workflow engine writes ({problem}); the "
        "ledger was not written by the workflow engine"
    )


def test_a_commit_naming_a_malformed_verdict_entry_is_refused() -> None:
    ledger = hand_written_run({"verdict": 2})
    broken = memory_ledger()
    for entry in ledger.read(1, 4):
        body = entry.body
        if entry.kind == "verdict":
            body = {key: value for key, value in body.items() if key != "rung"}
        broken.append(entry.kind, body, run=entry.run)
    with pytest.raises(RunError, match="from entry 2, which is not that iteration's passed"):
        read_run(broken, "r")
