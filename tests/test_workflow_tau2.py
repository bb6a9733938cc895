"""The zero-case rule on real data: τ² retail train tasks through a gated workflow.

Each task becomes one run of a ``resolve`` step whose executor replays the task's recorded
reference writes and reports them with the changes they made. Six train tasks are correctly
resolved by changing nothing: for them the honest output is the declared empty output, and
the gate must pass it, with the expression criteria and with a model verifier (which the
self-attesting empty result never even reaches). A criterion that demands that every task
change something cannot pass on that output and is rejected at load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import WorkflowLintError
from assay.workflow import Engine, ModelSettings, RunStatus, StepContext, Workflow, load_workflow
from assay.workflow.model import ModelVerifier
from assay.workflow.verifier import CompositeVerifier, ExpressionVerifier
from tau2_retail import ACTIONS, TrainTask, load_train_tasks
from workflow_steps import memory_ledger

EMPTY = {"writes": [], "changed_fields": []}
CRITERIA = [
    "output.writes.every(w => input.write_tools.includes(w.name))",
    "output.writes.every(w => w.outcome !== 'ok') || output.changed_fields.length > 0",
    "output.changed_fields.every(c => c[0].startsWith('orders.') || c[0].startsWith('users.'))",
    "output.writes.every(w => w.task === input.task_id)",
]
TASKS = {task.task_id: task for task in load_train_tasks()}
UNCHANGING = sorted(task_id for task_id, task in TASKS.items() if not task.writes)


def replay(ctx: StepContext) -> dict[str, Any]:
    """The task's reference writes, with what each changed, as recorded on the application."""
    task: TrainTask = TASKS[ctx.input["task_id"]]
    return {
        "writes": [
            {"task": task.task_id, "name": w.name, "arguments": w.arguments, "outcome": w.outcome}
            for w in task.writes
        ],
        "changed_fields": [row for w in task.writes for row in w.changed_fields],
    }


def resolve_workflow(*criteria: str) -> Workflow:
    return Workflow.from_mapping(
        {
            "workflow": "tau2_retail_resolve",
            "example_input": {"task_id": "", "write_tools": sorted(ACTIONS)},
            "steps": [
                {
                    "id": "resolve",
                    "executor": replay,
                    "empty_output": EMPTY,
                    "verify": {
                        "prompt": "Check that the writes resolve the customer's request.",
                        "criteria": list(criteria),
                    },
                    "escalation": ["human"],
                }
            ],
        }
    )


def run_input(task_id: str) -> dict[str, Any]:
    return {"task_id": task_id, "write_tools": sorted(ACTIONS)}


def test_six_train_tasks_are_correctly_resolved_by_changing_nothing() -> None:
    assert UNCHANGING == ["10", "24", "25", "50", "57", "67"]


@pytest.mark.parametrize("task_id", UNCHANGING)
def test_the_honest_empty_result_passes_the_gate(task_id: str) -> None:
    engine = Engine(resolve_workflow(*CRITERIA), memory_ledger())

    record = engine.start(run_input(task_id))

    assert record.status is RunStatus.COMPLETED
    assert record.committed == {"resolve": EMPTY}
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    assert verdict.body["output"] == EMPTY
    assert verdict.body["verdict"]["passed"] is True
    assert [c["passed"] for c in verdict.body["verdict"]["criteria"]] == [True] * len(CRITERIA)


@pytest.mark.parametrize("task_id", UNCHANGING)
def test_the_self_attesting_empty_result_passes_a_model_verifier_unasked(task_id: str) -> None:
    # Nothing listens on port 9 (discard): were the model asked, the verdict would fail.
    model = ModelSettings(base_url="http://127.0.0.1:9/v1", timeout_s=2)

    def verifier(step: Any) -> CompositeVerifier:
        return CompositeVerifier([ExpressionVerifier(step.criteria), ModelVerifier(model, step)])

    engine = Engine(resolve_workflow(*CRITERIA), memory_ledger(), verifier=verifier)

    record = engine.start(run_input(task_id))

    assert record.status is RunStatus.COMPLETED
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    model_results = [c for c in verdict.body["verdict"]["criteria"] if c["verifier"] == "model"]
    assert len(model_results) == 1 + len(CRITERIA)
    assert {c["reason"] for c in model_results} == {
        "the self-attesting empty result: the zero-case exemption applies"
    }


def test_the_same_criteria_judge_the_tasks_that_do_change_something() -> None:
    engine = Engine(resolve_workflow(*CRITERIA), memory_ledger())
    changing = [task_id for task_id in TASKS if task_id not in UNCHANGING]
    assert len(changing) == 68

    records = [engine.start(run_input(task_id)) for task_id in changing]

    assert {r.status for r in records} == {RunStatus.COMPLETED}
    assert all(r.committed["resolve"]["writes"] for r in records)


def test_a_criterion_that_cannot_pass_on_the_empty_result_is_rejected_at_load(
    tmp_path: Path,
) -> None:
    must_act = "output.writes.length > 0"
    with pytest.raises(WorkflowLintError) as caught:
        Engine(resolve_workflow(*CRITERIA, must_act), memory_ledger()).start(run_input("10"))

    error = caught.value
    assert error.rule == "zero-case"
    assert error.criterion == must_act
    assert (
        '`output.writes.length > 0` fails on the declared empty output {"changed_fields": [], '
        '"writes": []}'
    ) in str(error)

    path = tmp_path / "must_act.yaml"
    path.write_text(
        "workflow: must_act\n"
        "steps:\n"
        "  - id: resolve\n"
        "    executor: json:dumps\n"
        "    empty_output: {writes: [], changed_fields: []}\n"
        f"    verify: {{criteria: ['{must_act}']}}\n",
        encoding="utf-8",
    )
    from assay.workflow import lint

    (problem,) = lint(load_workflow(path))
    assert (problem.rule, problem.criterion) == ("zero-case", must_act)
