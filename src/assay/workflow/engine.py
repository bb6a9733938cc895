"""The engine: planner → executor → verifier → commit, per step, within nested bounds.

A step's output becomes workflow state, committed and handed to later steps, only once its
verdict passes. A failed verdict's critique goes back to the planner; an attempt that runs
out of its bounds climbs the step's escalation ladder; a step or workflow out of bounds, a
``human`` rung or the ladder's end parks the run. Every verdict, escalation, commit, park and
resume is appended to the ledger before the engine moves on, so a run can be rebuilt and
resumed from its entries. No loop or wait is unbounded (docs/workflows.md, "Budgets").
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import math
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel

from assay.clock import SYSTEM_CLOCK, Clock
from assay.defaults import DEFAULT_WALL_S
from assay.errors import StateError, WorkflowError, escape_surrogates
from assay.ledger import Entry, Ledger
from assay.state.canonical import canonical_value
from assay.workflow.budget import (
    DEFAULT_OUTPUT_BYTES,
    MAX_TOKENS,
    Budget,
    BudgetMeter,
    Exhaustion,
    Limits,
    input_limit,
    oversize,
    step_budget,
)
from assay.workflow.ceiling import MAX_WALL_S, check_ceiling
from assay.workflow.context import Plan, StepContext, StepResult
from assay.workflow.definition import ModelSettings, Rung, Step, Workflow
from assay.workflow.lint import check_workflow, step_input
from assay.workflow.run import (
    CommitBody,
    EscalationBody,
    ParkBody,
    ResumeBody,
    RunRecord,
    RunStatus,
    StartBody,
    VerdictBody,
    read_run,
)
from assay.workflow.verdict import NOTHING_JUDGED, CriterionResult, Verdict, VerifierKind
from assay.workflow.verifier import (
    CompositeVerifier,
    ExpressionVerifier,
    StateVerifier,
    Verifier,
    judge,
)
from assay.workflow.wall import AbandonedError, OutOfTimeError, bounded, is_async, within
from assay.workflow.wall import run as run_to_the_end

if TYPE_CHECKING:
    from assay.graph import Session

VerifierFactory = Callable[[Step], Verifier]
Observer = Callable[[str, Any], None]
"""Told of each entry the engine records, once it is durable: its kind and body model."""
_FIRST = Rung("fresh_attempt", "first")


@dataclass(frozen=True, slots=True)
class _StepRun:
    """One step of one run, in one leg: what every attempt of it shares."""

    run_id: str
    step: Step
    context: dict[str, Any]
    budget: Budget
    human: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class _Halt:
    """Why a step must park at once: a call it made was abandoned, still running, and no
    other attempt may start beside it."""

    reason: str


class _AbandonedCallError(Exception):
    """A call was abandoned: the failed verdict to record for it, and why the run parks."""

    def __init__(self, verdict: Verdict, halt: _Halt) -> None:
        super().__init__(halt.reason)
        self.verdict = verdict
        self.halt = halt


class Engine:
    """Runs ``workflow``'s runs, recording them in ``ledger``.

    ``session`` is handed to executors and checked by state criteria; ``model`` overrides the
    workflow's model-verifier endpoint; ``verifier`` replaces how a step's verifier is built
    (tests use it for verifiers that always fail); ``observer`` is told of each entry as it is
    recorded (the CLI shows progress with it); ``default_wall_s`` is the wall bound of a run
    whose workflow's budget sets no ``wall_s``. ``start``/``resume`` are the sync entry
    points of ``astart``/``aresume``; executors and planners may be plain or async callables
    (a plain one runs in a thread of its own). ``WorkflowError`` if the workflow's budget is
    beyond the ceilings of ``assay.workflow.ceiling`` or ``default_wall_s`` is no positive
    number of seconds.
    """

    def __init__(
        self,
        workflow: Workflow,
        ledger: Ledger,
        *,
        clock: Clock = SYSTEM_CLOCK,
        session: Session | None = None,
        model: ModelSettings | None = None,
        verifier: VerifierFactory | None = None,
        observer: Observer | None = None,
        default_wall_s: float = DEFAULT_WALL_S,
    ) -> None:
        check_ceiling(workflow)
        self.default_wall_s = require_wall(default_wall_s, "default_wall_s", workflow.name)
        self.workflow = workflow
        self.ledger = ledger
        self.clock = clock
        self.session = session
        self.model = model or workflow.model
        self._custom_verifier = verifier is not None
        self._verifier_factory = verifier or self.build_verifier
        self._verifiers: dict[str, Verifier] = {}
        self._observer = observer

    def build_verifier(self, step: Step) -> Verifier:
        """Expression criteria, then state contracts, then the model (if one is configured)."""
        parts: list[Verifier] = []
        if any(c.kind == "expression" for c in step.criteria):
            parts.append(ExpressionVerifier(step.criteria))
        if any(c.kind == "state" for c in step.criteria):
            parts.append(StateVerifier(step.criteria, self.session))
        if step.prompt is not None and self.model is not None:
            from assay.workflow.model import ModelVerifier

            parts.append(ModelVerifier(self.model, step))
        return CompositeVerifier(parts)

    def start(self, run_input: Mapping[str, Any], *, run_id: str | None = None) -> RunRecord:
        """Start a run and drive it until it completes or parks."""
        return _run_sync(self.astart(run_input, run_id=run_id))

    def resume(self, run_id: str, human: Mapping[str, Any] | None = None) -> RunRecord:
        """Take a parked (or interrupted) run up from its last commit, with a person's input."""
        return _run_sync(self.aresume(run_id, human))

    async def astart(self, run_input: Mapping[str, Any], *, run_id: str | None = None) -> RunRecord:
        """``start``, awaitable: lint with the real input, record the start, drive the run."""
        plain = run_input_of(self.workflow, run_input)
        check_workflow(self.workflow, plain)
        self._require_judges(self.workflow.steps)
        run_id = run_id or f"{self.workflow.name}-{uuid.uuid4().hex[:12]}"
        start = StartBody(
            workflow=self.workflow.name,
            source=self.workflow.source,
            steps=tuple(step.id for step in self.workflow.steps),
            input=plain,
        )
        self._append("commit", start, run_id)
        return await self._drive(run_id, None)

    async def aresume(self, run_id: str, human: Mapping[str, Any] | None = None) -> RunRecord:
        """``resume``, awaitable. Budgets start afresh: each leg of a run has its own."""
        record = read_run(self.ledger, run_id)
        record.require(RunStatus.PARKED, RunStatus.RUNNING, move="resume")
        steps = tuple(step.id for step in self.workflow.steps)
        if record.steps != steps:
            raise WorkflowError(
                f"run {run_id!r} was started with steps {', '.join(record.steps)}, but workflow "
                f"{self.workflow.name!r} now has {', '.join(steps)}; resume it with the "
                "definition it started with",
                workflow=self.workflow.name,
            )
        self._require_judges(tuple(s for s in self.workflow.steps if s.id not in record.committed))
        if human is not None and not isinstance(human, Mapping):
            raise WorkflowError(
                f"the human input to a resume must be a JSON object, not "
                f'{type(human).__name__}; wrap it, e.g. {{"hint": ...}}',
                workflow=self.workflow.name,
                field="input",
            )
        given = _json_object(human or {}, "human input", self.workflow.name)
        _require_recordable(self.workflow, given, "the human input", "the run was not resumed")
        resume = ResumeBody(step=record.next_step, input=given, from_status=record.status)
        self._append("resume", resume, run_id)
        return await self._drive(run_id, given)

    def _require_judges(self, steps: tuple[Step, ...]) -> None:
        """Refuse to run a step whose only check is a prompt that no model will read."""
        if not self._custom_verifier:
            require_judges(self.workflow, steps, self.model)

    async def _drive(self, run_id: str, human: dict[str, Any] | None) -> RunRecord:
        record = read_run(self.ledger, run_id)
        limits, note = _limits(self.workflow.budget), ""
        if limits.wall_s is None:
            limits = limits.model_copy(update={"wall_s": self.default_wall_s})
            note = "the default wall, as the workflow's budget sets no wall_s"
        workflow_meter = BudgetMeter("workflow", limits, self.clock, wall_note=note)
        committed = dict(record.committed)
        for step in self.workflow.steps:
            if step.id in committed:
                continue
            context = step_input(record.input, committed)
            output = await self._step(run_id, step, context, workflow_meter, human)
            if output is None:
                break
            committed[step.id] = output
            human = None
        return read_run(self.ledger, run_id)

    async def _step(
        self,
        run_id: str,
        step: Step,
        context: dict[str, Any],
        workflow_meter: BudgetMeter,
        human: dict[str, Any] | None,
    ) -> dict[str, Any] | None:
        """Run one step to a commit (its output) or a park (``None``)."""
        budget = step_budget(self.workflow.budget, step.budget)
        step_meter = BudgetMeter(f"step {step.id}", _limits(budget), self.clock, workflow_meter)
        run = _StepRun(run_id, step, context, budget, human)
        result = await self._climb(run, step_meter)
        if isinstance(result, str):
            park = ParkBody(step=step.id, reason=result, usage=step_meter.usage())
            self._append("park", park, run_id)
            return None
        return result

    async def _climb(self, run: _StepRun, step_meter: BudgetMeter) -> dict[str, Any] | str:
        """Attempts up the escalation ladder: the committed output, or why to park."""
        budget, step = run.budget, run.step
        most = budget.attempts or math.inf
        attempt, rung, ladder = 0, _FIRST, list(step.escalation)
        attempt_limits = (budget.attempt or Limits()).model_copy(
            update={"iterations": budget.iterations_per_attempt}
        )
        while True:
            outer = step_meter.outermost_exhausted()
            if outer is not None:
                return outer.reason
            attempt += 1
            meter = BudgetMeter(f"attempt {attempt}", attempt_limits, self.clock, step_meter)
            result = await self._attempt(run, meter, rung, attempt)
            if isinstance(result, _Halt):
                return result.reason
            if not isinstance(result, Exhaustion):
                return result
            if result.scope != meter.scope:
                return result.reason
            if attempt >= most:
                spent = "one attempt is" if attempt == 1 else f"{attempt} attempts are"
                return f"{result.reason}, and the step's {spent} spent"
            if not ladder:
                return f"{result.reason}, and the escalation ladder is exhausted"
            rung = ladder.pop(0)
            escalation = EscalationBody(
                step=step.id, attempt=attempt, reason=result.reason, rung=rung.label
            )
            self._append("escalation", escalation, run.run_id)
            if rung.kind == "human":
                return f"{result.reason}; the escalation ladder calls a person"

    async def _attempt(
        self, run: _StepRun, meter: BudgetMeter, rung: Rung, attempt: int
    ) -> dict[str, Any] | Exhaustion | _Halt:
        """Iterate until a verdict passes (the output), a bound runs out (which one) or a
        call is abandoned (why the run parks)."""
        step, context, run_id = run.step, run.context, run.run_id
        executor = rung.executor or step.executor
        critiques: list[str] = []
        iteration = 0
        while True:
            exhausted = meter.outermost_exhausted()
            if exhausted is not None:
                return exhausted
            iteration += 1
            limits = (run.budget.iteration or Limits()).model_copy(update={"iterations": None})
            spend = BudgetMeter(f"iteration {iteration}", limits, self.clock, meter)
            spend.charge(iterations=1)
            ctx = StepContext(
                run_id=run_id,
                workflow=self.workflow.name,
                step=step.id,
                input=context,
                attempt=attempt,
                iteration=iteration,
                critiques=tuple(critiques),
                clock=self.clock,
                human=run.human,
                model=rung.model,
                session=self.session,
            )
            halt: _Halt | None = None
            try:
                output, verdict = await self._produce(run, ctx, executor, spend)
                if verdict is None:
                    over = spend.exceeded()
                    if over is not None:
                        reason = over.reason + "; the output is discarded"
                        verdict = _engine_verdict("budget", reason)
                    else:
                        verdict = await self._judge(step, context, output or {}, spend)
                        spend.charge(tokens=verdict.tokens, cost=verdict.cost)
            except _AbandonedCallError as abandoned:
                output, verdict, halt = None, abandoned.verdict, abandoned.halt
            body = VerdictBody(
                step=step.id,
                attempt=attempt,
                iteration=iteration,
                rung=rung.label,
                output=output,
                verdict=verdict,
            )
            judged = self._append("verdict", body, run_id)
            if halt is not None:
                return halt
            if verdict.passed and output is not None:
                commit = CommitBody(
                    step=step.id, attempt=attempt, iteration=iteration, verdict=judged.seq
                )
                self._append("commit", commit, run_id)
                return output
            critiques.append(verdict.critique)

    async def _produce(
        self, run: _StepRun, ctx: StepContext, executor: Any, spend: BudgetMeter
    ) -> tuple[dict[str, Any] | None, Verdict | None]:
        """Plan, then execute; a failure of either is a failed verdict, never a crash, and
        so is an output over the step's ``output_bytes`` (then it is not returned at all).

        Each is handed its own copy of the input, so the verifier judges the input as the
        ledger recorded it, whatever they do to theirs.
        """
        step = run.step
        if step.planner is not None:
            planned, failed = await self._call("planner", step.planner, _own(ctx), spend)
            if failed is not None:
                return None, failed
            if isinstance(planned, Plan):
                bad = _bad_charge("planner's Plan", planned.tokens, planned.cost)
                if bad is not None:
                    return None, _engine_verdict("executor", bad)
                spend.charge(tokens=planned.tokens, cost=planned.cost)
                planned = planned.value
            ctx = _with_plan(ctx, planned)
        produced, failed = await self._call("executor", executor, _own(ctx), spend)
        if failed is not None:
            return None, failed
        if isinstance(produced, StepResult):
            bad = _bad_charge("executor's StepResult", produced.tokens, produced.cost)
            if bad is not None:
                return None, _engine_verdict("executor", bad)
            spend.charge(tokens=produced.tokens, cost=produced.cost)
            produced = produced.output
        if not isinstance(produced, Mapping):
            why = f"the executor returned {type(produced).__name__}, not a JSON object"
            return None, _engine_verdict("executor", why)
        try:
            output = _json_object(produced, "output", self.workflow.name)
        except WorkflowError as error:
            return None, _engine_verdict("executor", str(error))
        except Exception as error:  # a Mapping whose own methods fail
            why = f"the executor's output could not be read: {_name(error)}"
            return None, _engine_verdict("executor", why)
        oversized = _oversized(output, run.budget.output_bytes or DEFAULT_OUTPUT_BYTES)
        return (None, oversized) if oversized is not None else (output, None)

    async def _call(
        self, who: _Caller, function: Callable[[Any], Any], argument: Any, spend: BudgetMeter
    ) -> tuple[Any, Verdict | None]:
        """Call a planner, an executor or a verifier with ``argument``: its answer, or the
        failed verdict it comes to.

        It is bounded by the time left in the tightest wall bound (``assay.workflow.wall``):
        a planner or executor runs on the loop if it is ``async`` (cancelled when the bound
        runs out), in a thread of its own if not (its late answer dropped); a verifier runs
        on the loop, its ``averify`` awaited within the bound (a model's thread cannot be
        stopped, so its late ruling is dropped). A call that does not stop within the grace
        after its bound ran out is abandoned: ``_AbandonedCallError``, and the run parks.
        """
        kind: VerifierKind = "verifier" if who == "verifier" else "executor"
        try:
            if who == "verifier":
                result = function(argument)
                if inspect.isawaitable(result):
                    result = await within(result, spend, self.clock)
            else:
                result = await bounded(function, argument, spend, self.clock)
        except OutOfTimeError as out:
            late = _LATE_IN_THREAD.format(who) if _in_thread(who, function) else _LATE[who]
            return None, _engine_verdict("budget", f"{out.exhaustion.reason} {late}")
        except AbandonedError as stuck:
            raise _abandoned(who, stuck, spend) from None
        except asyncio.CancelledError:
            if _cancelling():
                raise  # the run itself is being cancelled
            why = f"the {who} was cancelled (it raised CancelledError) though the run was not"
            return None, _engine_verdict(kind, why)
        except Exception as error:
            return None, _engine_verdict(kind, f"the {who} raised {_name(error)}")
        return result, None

    async def _judge(
        self, step: Step, context: Mapping[str, Any], output: Mapping[str, Any], spend: BudgetMeter
    ) -> Verdict:
        """The step's verdict on ``output``, within the wall bounds of ``spend``; a verifier
        that raises, or does not rule in time, fails it, never the run."""
        verifier = self._verifier
        verdict, failed = await self._call(
            "verifier", lambda _: judge(verifier(step), context, output), None, spend
        )
        if failed is not None:
            return failed
        assert isinstance(verdict, Verdict)
        if not verdict.criteria:  # nothing unobserved passes, whatever the verifier said
            return _engine_verdict("verifier", NOTHING_JUDGED)
        return verdict

    def _verifier(self, step: Step) -> Verifier:
        if step.id not in self._verifiers:
            self._verifiers[step.id] = self._verifier_factory(step)
        return self._verifiers[step.id]

    def _append(self, kind: str, body: BaseModel, run_id: str) -> Entry:
        entry = self.ledger.append(kind, _plain(body), run=run_id)
        if self._observer is not None:
            self._observer(kind, body)
        return entry


def require_judges(workflow: Workflow, steps: Iterable[Step], model: ModelSettings | None) -> None:
    """``WorkflowError`` naming the first of ``steps`` whose only check is a verifier prompt,
    when no ``model`` will read it: nothing would judge its output."""
    if model is not None:
        return
    for step in steps:
        if step.prompt is not None and not step.criteria:
            raise WorkflowError(
                f"step {step.id!r} is checked only by its verifier prompt, and no model is "
                "configured to read it, so nothing would judge its output; configure a "
                "model (--model-url or --model-path, or the workflow's `model`) or add "
                "verify.criteria to the step",
                workflow=workflow.name,
                step=step.id,
                field="verify.prompt",
            )


def run_input_of(workflow: Workflow, run_input: Mapping[str, Any]) -> dict[str, Any]:
    """``run_input`` as a run of ``workflow`` records it (plain JSON, as ``JSON.parse`` reads
    it); ``WorkflowError`` if it cannot start one: not a JSON object, a ``steps`` key, or
    over the workflow's ``budget.output_bytes`` as canonical JSON."""
    if not isinstance(run_input, Mapping):
        raise WorkflowError(
            f"a run's input must be a JSON object, not {type(run_input).__name__}",
            workflow=workflow.name,
            field="input",
        )
    if "steps" in run_input:
        raise WorkflowError(
            "a run's input may not have a 'steps' key: input.steps holds the outputs of "
            "committed steps; rename it",
            workflow=workflow.name,
            field="input.steps",
        )
    plain = _json_object(run_input, "input", workflow.name)
    _require_recordable(workflow, plain, "the run's input", "no run was started")
    return plain


def _require_recordable(
    workflow: Workflow, value: Mapping[str, Any], what: str, refused: str
) -> None:
    """``WorkflowError`` when ``value``, an input to record, is over the workflow's
    ``budget.output_bytes`` as canonical JSON (or has none); ``refused`` says what did not
    happen."""
    over = oversize(value, input_limit(workflow.budget))
    if over is None:
        return
    why = over.reason(what, "the workflow's")
    if over.size is not None:
        why += (
            f", so {refused} and nothing was recorded; send less, or store the data "
            "elsewhere and send a reference to it"
        )
    raise WorkflowError(why, workflow=workflow.name, field="input")


_PLAIN_FIELDS: Final = frozenset({"input", "output"})


def _plain(body: BaseModel) -> dict[str, Any]:
    """``body`` as JSON values for the ledger. Its ``input`` and ``output`` are plain JSON
    already (``_json_object`` made them so), and are handed on as they are: the ledger copies
    them once, as it encodes the entry, rather than after pydantic has copied them too."""
    fields = set(_PLAIN_FIELDS & type(body).model_fields.keys())
    plain = body.model_dump(mode="json", exclude=fields)
    for name in fields:
        plain[name] = getattr(body, name)
    return plain


def _oversized(output: Mapping[str, Any], limit: int) -> Verdict | None:
    """The failed verdict of an output whose canonical JSON is over ``limit`` bytes (or that
    has none), else ``None``."""
    over = oversize(output, limit)
    if over is None:
        return None
    why = over.reason("the output", "the step's")
    if over.size is not None:
        why += (
            ", so it was neither judged nor recorded; return less, or store the data "
            "elsewhere and return a reference to it"
        )
    return _engine_verdict("executor", why)


def require_wall(seconds: Any, name: str, workflow: str | None = None) -> float:
    """``seconds`` as a wall bound: a finite number above 0, no more than ``MAX_WALL_S``
    (``WorkflowError`` naming ``name`` otherwise)."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 < seconds <= MAX_WALL_S
    ):
        raise WorkflowError(
            f"{name} must be a number of seconds above 0 and at most {MAX_WALL_S:,.0f} (a day; "
            f"MAX_WALL_S), not {_shown(seconds)}",
            workflow=workflow,
            field=name,
        )
    return float(seconds)


def _limits(budget: Budget) -> Limits:
    return Limits(
        iterations=budget.iterations, wall_s=budget.wall_s, tokens=budget.tokens, cost=budget.cost
    )


def _engine_verdict(kind: VerifierKind, reason: str) -> Verdict:
    result = CriterionResult(criterion=kind, passed=False, reason=reason, verifier=kind)
    return Verdict.of((result,))


def _with_plan(ctx: StepContext, plan: Any) -> StepContext:
    return replace(ctx, plan=plan)


def _own(ctx: StepContext) -> StepContext:
    """``ctx`` with copies of what a planner or executor could change under the verifier."""
    return replace(ctx, input=copy.deepcopy(ctx.input), human=copy.deepcopy(ctx.human))


_Caller = Literal["planner", "executor", "verifier"]
_LATE: Final[Mapping[_Caller, str]] = {
    "planner": "while the planner was still running; it was cancelled",
    "executor": "while the executor was still running; it was cancelled",
    "verifier": "before the verifier ruled; the output is not committed, and a ruling that "
    "comes later is ignored",
}
"""How a verdict ends the reason of a wall bound that ran out on each kind of call."""
_LATE_IN_THREAD: Final = (
    "while the {} was still running in its thread, which cannot be stopped; what it "
    "returned is discarded"
)
"""The same, for a plain planner or executor, which runs in a thread."""


def _in_thread(who: _Caller, function: Callable[[Any], Any]) -> bool:
    return who != "verifier" and not is_async(function)


def _abandoned(who: _Caller, stuck: AbandonedError, spend: BudgetMeter) -> _AbandonedCallError:
    """The failed verdict and the park of a call that did not stop within its grace."""
    bound, grace = stuck.exhaustion.reason, f"{stuck.grace:g}"
    if stuck.in_thread:
        stopped = f"its thread, which cannot be stopped, did not end within {grace} s"
    else:
        stopped = f"it did not stop within {grace} s of being cancelled"
    why = (
        f"{bound} while the {who} was still running, and {stopped}: it was abandoned, and "
        "nothing it returns later is judged or committed"
    )
    step = spend.scope
    meter: BudgetMeter | None = spend
    while meter is not None:  # the step's scope names the step
        if meter.scope.startswith("step "):
            step = meter.scope.removeprefix("step ")
        meter = meter.parent
    halt = _Halt(
        f"step {step}'s {who} did not stop after {bound}; it was abandoned (it may still be "
        "running), so the run parks rather than start another attempt beside it"
    )
    return _AbandonedCallError(_engine_verdict("budget", why), halt)


def _cancelling() -> bool:
    """Whether the task running this is being cancelled (rather than its callee)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _bad_charge(what: str, tokens: Any, cost: Any) -> str | None:
    """Why a reported charge cannot be charged, or ``None`` if it can."""
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 0 <= tokens <= MAX_TOKENS:
        return (
            f"the {what}.tokens must be a whole number from 0 to 2**53 - 1, not "
            f"{_shown(tokens)}; nothing was charged and the output is discarded"
        )
    if (
        not isinstance(cost, (int, float))
        or isinstance(cost, bool)
        or not math.isfinite(cost)
        or cost < 0
    ):
        return (
            f"the {what}.cost must be a finite number ≥ 0, not {_shown(cost)}; nothing was "
            "charged and the output is discarded"
        )
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(error: Exception) -> str:
    return escape_surrogates(f"{type(error).__name__}: {error}")


def _json_object(value: Mapping[str, Any], what: str, workflow: str) -> dict[str, Any]:
    """A plain JSON copy of ``value``, numbers as JavaScript reads them (an integer beyond
    ±2**53 becomes the double it rounds to, as in the state); ``WorkflowError`` if it is
    not JSON."""
    try:
        copied = canonical_value(dict(value), (what,))
    except StateError as error:
        reason = str(error).removeprefix("cannot store ")
        raise WorkflowError(
            f"the {what} is not a JSON object: {reason}", workflow=workflow, field=what
        ) from None
    assert isinstance(copied, dict)
    return copied


def _run_sync(awaitable: Any) -> RunRecord:
    result: RunRecord = run_to_the_end(awaitable)
    return result
