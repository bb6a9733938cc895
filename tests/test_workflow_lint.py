"""Workflow definitions and the authoring lint: zero-case, scope, effort, irreversible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import WorkflowError, WorkflowLintError
from assay.workflow import Engine, Workflow, check_workflow, lint, load_workflow
from workflow_steps import Recorder, memory_ledger, step_of, workflow_of

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "workflows"


def test_the_example_loads_and_passes_lint() -> None:
    workflow = load_workflow(EXAMPLE / "competitor_deep_dive.yaml")
    assert workflow.name == "competitor_deep_dive"
    assert [step.id for step in workflow.steps] == ["select_hypotheses", "write_brief"]
    assert workflow.budget.attempts == 2
    assert workflow.budget.iterations_per_attempt == 3
    assert [r.label for r in workflow.steps[0].escalation] == ["fresh_attempt", "human"]
    assert lint(workflow) == []


def test_zero_case_names_the_criterion_and_the_empty_output_and_says_why() -> None:
    workflow = workflow_of(step_of("pick", Recorder(), "output.items.length > 0"))

    (problem,) = lint(workflow)

    assert problem.rule == "zero-case"
    assert problem.criterion == "output.items.length > 0"
    assert problem.message == (
        "step 'pick': criterion `output.items.length > 0` fails on the declared empty output "
        '{"items": []} (does not hold (it evaluated to false)). An honest step that finds '
        "nothing to do returns its empty output; with this criterion it could never pass its "
        "gate, so it would only ever retry to its bounds and park. Rewrite the criterion so "
        "the empty output satisfies it (e.g. `output.items.length === 0 || ...`)"
    )


def test_a_criterion_that_throws_on_the_empty_output_is_a_zero_case_problem() -> None:
    workflow = workflow_of(step_of("pick", Recorder(), "output.items[0].id > 0"))
    (problem,) = lint(workflow)
    assert problem.rule == "zero-case"
    assert "could not be evaluated" in problem.message


def test_the_lint_error_lists_every_problem_and_names_the_first() -> None:
    workflow = workflow_of(
        step_of("a", Recorder(), "output.items.length > 0", "state.orders.length === 0"),
        step_of("b", Recorder(), "output.attempts < 3"),
    )

    with pytest.raises(WorkflowLintError) as caught:
        check_workflow(workflow)

    error = caught.value
    assert [(p.rule, p.step) for p in error.problems] == [  # type: ignore[attr-defined]
        ("zero-case", "a"),
        ("scope", "a"),
        ("effort", "b"),
        ("zero-case", "b"),
    ]
    assert error.criterion == "output.items.length > 0"
    assert error.step == "a"
    assert str(error).startswith("workflow 'test_flow' was rejected at load (4 problems):\n")


def test_scope_rejects_reads_outside_input_and_output() -> None:
    (problem,) = lint(workflow_of(step_of("a", Recorder(), "inbox.sent_count >= 0")))
    assert problem.rule == "scope"
    assert problem.message == (
        "step 'a': criterion `inbox.sent_count >= 0` reads inbox.sent_count, outside the "
        "verifier's scope; a criterion sees only input and output (check the world with a "
        "{state: ...} criterion instead)"
    )


@pytest.mark.parametrize(
    "criterion",
    [
        "output.attempts <= 3",
        "input.iterationCount < 5",
        "output.meta.tokens_used < 1000",
        "output.retries === 0",
        "output.elapsed_s < 60",
        "output.tokenCount < 100",
        "output.token_count < 100",
        "output.meta.tokenUsage < 100",
        "output.duration < 5",
        "output.duration_ms < 5000",
        "output.time_taken_s < 10",
        "output.seconds < 60",
        "output.cost < 0.5",
        "input.usage.cost < 0.5",
        "output.meta.latency_ms < 100",
    ],
)
def test_effort_criteria_are_rejected(criterion: str) -> None:
    problems = lint(workflow_of(step_of("a", Recorder(), criterion)))
    assert "effort" in [p.rule for p in problems]


@pytest.mark.parametrize(
    "criterion",
    [
        "output.quote.cost >= 0",
        "output.meeting.duration >= 0",
        "output.items.every(i => i.cost >= 0)",
        "output.token.length >= 0",
        "output.tokenizer.length >= 0",
        "output.costume.length >= 0",
        "output.secondary.length >= 0",
        "output.timestamp.length >= 0",
        "output.selected_count >= 0",
    ],
)
def test_output_fields_that_share_a_word_with_effort_are_not_effort(criterion: str) -> None:
    problems = lint(workflow_of(step_of("a", Recorder(), criterion)))
    assert "effort" not in [p.rule for p in problems]


def test_the_effort_problem_names_the_words_it_read() -> None:
    (problem,) = lint(workflow_of(step_of("a", Recorder(), "output.token_count < 100 || true")))
    assert problem.message == (
        "step 'a': criterion `output.token_count < 100 || true` judges effort (token count), not "
        "output; the budget bounds effort, and a criterion should say what a correct output "
        "looks like"
    )


def test_an_irreversible_step_needs_a_state_contract() -> None:
    bare = step_of("pay", Recorder(), reversibility="irreversible")
    (problem,) = lint(workflow_of(bare))
    assert problem.rule == "irreversible"
    checked = step_of(
        "pay",
        Recorder(),
        "output.items.length >= 0",
        {"state": {"payment.status": "captured"}},
        reversibility="irreversible",
    )
    assert lint(workflow_of(checked)) == []


def test_a_step_without_any_gate_or_empty_output_is_rejected() -> None:
    raw = {"id": "a", "executor": Recorder()}
    assert [p.rule for p in lint(workflow_of(raw))] == ["no-gate"]
    raw = {"id": "a", "executor": Recorder(), "verify": {"criteria": ["output.ok === true"]}}
    assert [p.rule for p in lint(workflow_of(raw))] == ["zero-case"]


def test_zero_case_is_checked_again_with_the_runs_real_input() -> None:
    step = step_of("a", Recorder(), "output.items.length <= input.limit")
    workflow = workflow_of(step, example_input={"limit": 3})
    assert lint(workflow) == []
    engine = Engine(workflow, memory_ledger())
    with pytest.raises(WorkflowLintError, match="fails on the declared empty output"):
        engine.start({"limit": "none"})
    assert engine.ledger.size == 0


def empty_over(step: str, size: int, limit: int) -> str:
    return (
        f"step {step!r}: its declared empty output is {size:,} bytes as canonical JSON, over "
        f"the step's limit of {limit:,} (budget.output_bytes), so even the honest empty result "
        "would fail its gate unjudged, and the step could only ever retry to its bounds and "
        "park. Raise budget.output_bytes (the step's, or the workflow's) or declare a smaller "
        "empty_output"
    )


@pytest.mark.parametrize(
    ("workflow_limit", "step_limit", "limit"),
    [(11, None, 11), (12, None, None), (1000, 11, 11), (11, 12, None)],
)
def test_zero_case_rejects_an_empty_output_over_the_steps_output_bytes(
    workflow_limit: int, step_limit: int | None, limit: int | None
) -> None:
    # The engine fails every output over output_bytes unjudged, the declared empty one too,
    # so such a step could never pass; lint said nothing.
    budget = {"output_bytes": step_limit} if step_limit else {}
    step = step_of("pick", Recorder(), budget=budget)  # {"items":[]}: 12 bytes
    workflow = workflow_of(step, budget={"output_bytes": workflow_limit})

    problems = lint(workflow)

    if limit is None:
        assert problems == []
        return
    (problem,) = problems
    assert (problem.rule, problem.step, problem.criterion) == ("zero-case", "pick", None)
    assert problem.message == empty_over("pick", 12, limit)
    engine = Engine(workflow, memory_ledger())
    with pytest.raises(WorkflowLintError) as refused:
        engine.start({})
    assert str(refused.value) == (
        f"workflow 'test_flow' was rejected at load (1 problem):\n  [zero-case] {problem.message}"
    )
    assert engine.ledger.size == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"steps": []}, "'workflow' must name the workflow"),
        ({"workflow": "w", "steps": []}, "'steps' must be a non-empty list"),
        ({"workflow": "w", "steps": [{"id": "a", "executor": "nodots"}]}, "module:function"),
        (
            {"workflow": "w", "steps": [{"id": "a", "executor": "no_such_mod:f"}]},
            "cannot import 'no_such_mod'",
        ),
        (
            {"workflow": "w", "steps": [{"id": "a", "executor": "json:nope"}]},
            "module 'json' has no 'nope'",
        ),
        (
            {
                "workflow": "w",
                "budget": {"attempts": 0},
                "steps": [{"id": "a", "executor": "json:dumps"}],
            },
            "budget.attempts: Input should be greater than or equal to 1",
        ),
        (
            {
                "workflow": "w",
                "steps": [{"id": "a", "executor": "json:dumps", "verify": {"criteria": ["a ==="]}}],
            },
            "criterion 'a ===' is not a valid expression",
        ),
        (
            {
                "workflow": "w",
                "steps": [{"id": "a", "executor": "json:dumps", "escalation": ["again"]}],
            },
            "an escalation rung is fresh_attempt, human",
        ),
        (
            {
                "workflow": "w",
                "model": {"model": "x"},
                "steps": [{"id": "a", "executor": "json:dumps"}],
            },
            "workflow 'w': model: Value error, give exactly one of base_url (an OpenAI-compatible "
            "endpoint) and path (a GGUF model file to run in this process), not neither",
        ),
        (
            {
                "workflow": "w",
                "model": {"base_url": "http://127.0.0.1:8080/v1", "path": "m.gguf"},
                "steps": [{"id": "a", "executor": "json:dumps"}],
            },
            "give exactly one of base_url (an OpenAI-compatible endpoint) and path (a GGUF model "
            "file to run in this process), not both",
        ),
        (
            {
                "workflow": "w",
                "budget": {"iteration": {"iterations": 2}},
                "steps": [{"id": "a", "executor": "json:dumps"}],
            },
            "workflow 'w': budget: Value error, iteration.iterations is not a bound (an "
            "iteration is one iteration); bound iterations with iterations_per_attempt, or "
            "iterations for the whole scope",
        ),
        (
            {
                "workflow": "w",
                "steps": [
                    {"id": "a", "executor": "json:dumps", "budget": {"attempt": {"iterations": 2}}}
                ],
            },
            "step 'a': budget: Value error, attempt.iterations is not a bound here; bound an "
            "attempt's iterations with iterations_per_attempt",
        ),
        (
            {
                "workflow": "w",
                "steps": [
                    {"id": "a", "executor": "json:dumps", "empty_output": {"n": float("nan")}}
                ],
            },
            "step 'a': empty_output is not JSON: empty_output.n: nan is not a JSON number; use "
            "a finite number, or null for no value",
        ),
        (
            {
                "workflow": "w",
                "example_input": {"n": float("inf")},
                "steps": [{"id": "a", "executor": "json:dumps"}],
            },
            "workflow 'w': example_input is not JSON: example_input.n: inf is not a JSON number",
        ),
        (
            {
                "workflow": "w",
                "model": {"path": ""},
                "steps": [{"id": "a", "executor": "json:dumps"}],
            },
            "workflow 'w': model.path: String should have at least 1 character (got '')",
        ),
    ],
)
def test_malformed_definitions_name_what_is_wrong(raw: dict[str, object], message: str) -> None:
    from assay.workflow import Workflow

    with pytest.raises(WorkflowError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Workflow.from_mapping(raw)


def test_a_yaml_file_finds_its_executors_beside_it(tmp_path: Path) -> None:
    (tmp_path / "my_local_steps.py").write_text(
        "def produce(ctx):\n    return {'items': [5]}\n", encoding="utf-8"
    )
    path = tmp_path / "flow.yaml"
    path.write_text(
        "workflow: local\n"
        "steps:\n"
        "  - id: a\n"
        "    executor: my_local_steps:produce\n"
        "    empty_output: {items: []}\n"
        "    verify: {criteria: ['output.items.every(i => i > 0)']}\n",
        encoding="utf-8",
    )
    workflow = load_workflow(path)
    record = Engine(workflow, memory_ledger()).start({})
    assert record.committed == {"a": {"items": [5]}}
    assert record.source == str(path.resolve())


def test_a_yaml_files_model_path_is_read_from_its_directory(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text(
        "workflow: local\n"
        "model: {path: models/judge.gguf}\n"
        "steps:\n"
        "  - id: a\n"
        "    executor: json:dumps\n"
        "    empty_output: {items: []}\n"
        "    verify: {criteria: ['output.items.length >= 0']}\n",
        encoding="utf-8",
    )
    model = load_workflow(path).model
    assert model is not None
    assert (model.path, model.base_url) == (str(tmp_path.resolve() / "models" / "judge.gguf"), None)


def test_a_yaml_file_that_is_not_a_mapping_is_refused_saying_what_it_holds(
    tmp_path: Path,
) -> None:
    for name, text, got in (
        ("empty", "", "nothing (the file is empty)"),
        ("comment", "# a workflow, one day\n", "nothing (the file is empty)"),
        ("listed", "- a\n- b\n", "a list"),
        ("scalar", "competitor_deep_dive\n", "a str"),
    ):
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(WorkflowError) as refused:
            load_workflow(path)
        assert str(refused.value) == (
            f"{path.resolve()}: a workflow is a mapping with workflow, steps and budget; got {got}"
        )


def test_a_step_module_that_fails_to_import_is_named_with_its_line_and_not_kept(
    tmp_path: Path,
) -> None:
    """A module beside the workflow that raised while importing escaped as its own error (the
    CLI called it a bug in assay), and stayed half-imported, so a mended file was not read."""
    steps = tmp_path / "failing_steps.py"
    steps.write_text("RATIO = 1 / 0\n\n\ndef produce(ctx):\n    return {'items': [1]}\n")
    path = tmp_path / "flow.yaml"
    path.write_text(
        "workflow: failing\nsteps:\n  - id: a\n    executor: failing_steps:produce\n"
        "    empty_output: {items: []}\n"
        "    verify: {criteria: ['output.items.every(i => i > 0)']}\n",
        encoding="utf-8",
    )
    with pytest.raises(WorkflowError) as refused:
        load_workflow(path)
    assert str(refused.value) == (
        "executor 'failing_steps:produce': importing 'failing_steps' failed: ZeroDivisionError: "
        f"division by zero ({steps}, line 1)"
    )
    assert refused.value.field == "executor"
    steps.write_text("RATIO = 1 / 2\n\n\ndef produce(ctx):\n    return {'items': [1]}\n")
    record = Engine(load_workflow(path), memory_ledger()).start({})
    assert record.committed == {"a": {"items": [1]}}


def test_a_yaml_anchor_inside_itself_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(
        "workflow: loop\nsteps:\n  - id: a\n    executor: json:dumps\n"
        "    empty_output: &r {items: [], self: *r}\n"
        "    verify: {criteria: ['output.items.length >= 0']}\n",
        encoding="utf-8",
    )
    with pytest.raises(WorkflowError) as refused:
        load_workflow(path)
    message = str(refused.value)
    assert message.startswith("step 'a': empty_output is not JSON: empty_output.self.self")
    assert message.endswith(
        "it nests deeper than 256 levels; flatten the value or store less of it (a YAML anchor "
        "used inside itself nests without end)"
    )


@pytest.mark.parametrize(
    ("budget", "field", "kind", "given"),
    [
        ({"output_bytes": True}, "output_bytes", "integer", "True"),
        ({"attempts": "2"}, "attempts", "integer", "'2'"),
        ({"iterations_per_attempt": 2.0}, "iterations_per_attempt", "integer", "2.0"),
        ({"attempt": {"wall_s": True}}, "attempt.wall_s", "number", "True"),
        ({"iteration": {"tokens": False}}, "iteration.tokens", "integer", "False"),
    ],
)
def test_a_budget_bound_that_is_not_a_number_is_refused(
    budget: dict[str, Any], field: str, kind: str, given: str
) -> None:
    # true was read as 1 (output_bytes: true refused every run's input as over 1 byte) and
    # "2" as 2.
    step = {"id": "a", "executor": "json:loads", "empty_output": {}}
    step["verify"] = {"criteria": ["true"]}
    with pytest.raises(WorkflowError) as refused:
        Workflow.from_mapping({"workflow": "w", "budget": budget, "steps": [step]})
    assert str(refused.value) == (
        f"workflow 'w': budget.{field}: Input should be a valid {kind} (got {given})"
    )
