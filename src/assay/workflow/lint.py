"""Authoring lint, run at load time by ``assay lint`` and before every run.

Rules, each named in every problem it reports:

- ``zero-case``: every expression criterion holds on the step's declared ``empty_output``,
  which fits the step's ``budget.output_bytes``;
- ``scope``: expression criteria read only ``input`` and ``output``;
- ``effort``: no criterion reads how hard the step tried rather than what it produced;
- ``irreversible``: an irreversible step checks the world with at least one state criterion;
- ``no-gate``: a step has at least one criterion or a verifier prompt.

State criteria are not evaluated at load time: they read the world, which only a run sees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Final

from assay.errors import ContractError, WorkflowLintError
from assay.graph import Reversibility
from assay.json.path import parse_path
from assay.workflow.budget import oversize, step_budget
from assay.workflow.definition import Step, Workflow
from assay.workflow.verifier import describe

SCOPE: Final = frozenset({"input", "output"})
"""The only roots an expression criterion may read."""

EFFORT_WORDS: Final = frozenset(
    {
        "attempt",
        "attempts",
        "iteration",
        "iterations",
        "try",
        "tries",
        "tried",
        "retry",
        "retries",
        "retried",
        "elapsed",
        "tokens",
        "tokencount",
        "effort",
        "budget",
        "spent",
        "wall",
        "loops",
    }
)
"""Words in a criterion's paths that mean it judges effort, not output, wherever they are."""

EFFORT_PAIRS: Final = frozenset(
    {
        ("token", "count"),
        ("token", "counts"),
        ("token", "usage"),
        ("token", "used"),
        ("time", "taken"),
        ("time", "elapsed"),
    }
)
"""Adjacent words that mean effort (``tokenCount``, ``time_taken_s``) though each alone may
not (``output.token`` may be a token the step issued)."""

STEP_EFFORT_WORDS: Final = frozenset(
    {"duration", "seconds", "secs", "cost", "costs", "latency", "runtime"}
)
"""Words that mean effort when they describe the step itself: a field of its output or input
(``output.duration_ms``, ``output.cost``) or of a record there such as ``output.usage``; a
thing it produced may have them as output (``output.quote.cost``, ``output.meeting.duration``)."""

STEP_RECORDS: Final = frozenset(
    {"meta", "metadata", "usage", "stats", "statistics", "metrics", "telemetry"}
)
"""Fields of an output or input that hold a record of the step's own run."""

_WORD_BREAK = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class LintProblem:
    """One broken rule: which, where, and a message saying why and what to do."""

    rule: str
    step: str
    criterion: str | None
    message: str


def step_input(
    run_input: Mapping[str, Any], committed: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """A step's input context: the run's input, earlier steps' outputs under ``steps``."""
    return {**run_input, "steps": dict(committed)}


def lint(workflow: Workflow, run_input: Mapping[str, Any] | None = None) -> list[LintProblem]:
    """Every problem in ``workflow``, in step order; empty when it may run.

    ``run_input`` is the input the zero-case rule evaluates with (the workflow's
    ``example_input`` by default).
    """
    given = workflow.example_input if run_input is None else run_input
    problems: list[LintProblem] = []
    committed: dict[str, Mapping[str, Any]] = {}
    for step in workflow.steps:
        problems.extend(_lint_step(step, step_input(given, committed)))
        problems.extend(_empty_too_large(step, workflow))
        committed[step.id] = step.empty_output or {}
    return problems


def check_workflow(workflow: Workflow, run_input: Mapping[str, Any] | None = None) -> None:
    """Raise ``WorkflowLintError`` listing every problem, if there is one."""
    problems = lint(workflow, run_input)
    if problems:
        lines = "\n".join(f"  [{p.rule}] {p.message}" for p in problems)
        count = f"{len(problems)} problem" + ("s" if len(problems) != 1 else "")
        raise WorkflowLintError(
            f"workflow {workflow.name!r} was rejected at load ({count}):\n{lines}",
            workflow=workflow.name,
            problems=tuple(problems),
        )


def _lint_step(step: Step, context: Mapping[str, Any]) -> list[LintProblem]:
    problems: list[LintProblem] = []
    where = f"step {step.id!r}"
    if not step.criteria and step.prompt is None:
        problems.append(
            LintProblem(
                "no-gate",
                step.id,
                None,
                f"{where} has no criteria and no verifier prompt, so its gate would pass "
                "anything; add the criteria its output must satisfy",
            )
        )
    if step.empty_output is None and step.criteria:
        problems.append(
            LintProblem(
                "zero-case",
                step.id,
                None,
                f"{where} declares no empty_output, so its criteria cannot be checked "
                "against the honest empty result; declare what the step returns when it "
                "finds nothing to do (e.g. empty_output: {items: []})",
            )
        )
    for criterion in step.criteria:
        effort = sorted({word for key in criterion.keys for word in _effort(key)})
        if effort:
            problems.append(
                LintProblem(
                    "effort",
                    step.id,
                    criterion.source,
                    f"{where}: criterion `{criterion.source}` judges effort "
                    f"({', '.join(effort)}), not output; the budget bounds effort, and a "
                    "criterion should say what a correct output looks like",
                )
            )
        if criterion.kind != "expression":
            continue
        outside = [key for key in criterion.keys if key.split(".", 1)[0] not in SCOPE]
        if outside:
            problems.append(
                LintProblem(
                    "scope",
                    step.id,
                    criterion.source,
                    f"{where}: criterion `{criterion.source}` reads {', '.join(outside)}, "
                    "outside the verifier's scope; a criterion sees only input and output "
                    "(check the world with a {state: ...} criterion instead)",
                )
            )
            continue
        if step.empty_output is not None:
            check = criterion.predicate.check({"input": context, "output": step.empty_output})
            if check.result is not True:
                empty = json.dumps(step.empty_output, sort_keys=True)
                problems.append(
                    LintProblem(
                        "zero-case",
                        step.id,
                        criterion.source,
                        f"{where}: criterion `{criterion.source}` fails on the declared "
                        f"empty output {empty} ({describe(check)}). An honest step that "
                        "finds nothing to do returns its empty output; with this criterion "
                        "it could never pass its gate, so it would only ever retry to its "
                        "bounds and park. Rewrite the criterion so the empty output "
                        "satisfies it (e.g. `output.items.length === 0 || ...`)",
                    )
                )
    if step.reversibility is Reversibility.IRREVERSIBLE and not any(
        c.kind == "state" for c in step.criteria
    ):
        problems.append(
            LintProblem(
                "irreversible",
                step.id,
                None,
                f"{where} is irreversible but has no state contract, so nothing checks that "
                "the world changed as claimed; add a {state: ...} criterion",
            )
        )
    return problems


def _empty_too_large(step: Step, workflow: Workflow) -> list[LintProblem]:
    """The zero-case problem of an ``empty_output`` over the step's ``output_bytes``: the
    engine fails every output over it unjudged, the empty one too."""
    if step.empty_output is None:
        return []
    limit = step_budget(workflow.budget, step.budget).output_bytes
    assert limit is not None  # step_budget fills it in
    over = oversize(step.empty_output, limit)
    if over is None:
        return []
    why = over.reason("its declared empty output", "the step's")
    message = (
        f"step {step.id!r}: {why}, so even the honest empty result would fail its gate "
        "unjudged, and the step could only ever retry to its bounds and park. Raise "
        "budget.output_bytes (the step's, or the workflow's) or declare a smaller empty_output"
    )
    return [LintProblem("zero-case", step.id, None, message)]


def _effort(key: str) -> set[str]:
    """The words in ``key`` that say it reads effort (a pair as ``token count``)."""
    try:
        segments = parse_path(key)
    except ContractError:
        segments = (key,)
    found: set[str] = set()
    words: list[str] = []
    for index, segment in enumerate(segments):
        own = _words(segment)
        words.extend(own)
        found.update(set(own) & EFFORT_WORDS)
        if index == 1 or (index == 2 and segments[1].lower() in STEP_RECORDS):
            found.update(set(own) & STEP_EFFORT_WORDS)
    found.update(" ".join(pair) for pair in pairwise(words) if pair in EFFORT_PAIRS)
    return found


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORD_BREAK.split(text) if word]
