"""The public surface of ``assay`` is pinned: nothing leaks or vanishes by accident."""

from __future__ import annotations

import types

import assay

PUBLIC = {
    "AssayError",
    "Check",
    "ConditionEvidence",
    "ContractError",
    "Contract",
    "CriterionResult",
    "ElementEvidence",
    "Expression",
    "ExpressionError",
    "ExpressionEvaluationError",
    "ExpressionLimitError",
    "ExpressionSyntaxError",
    "Limits",
    "Predicate",
    "Redaction",
    "RunError",
    "RunNotFoundError",
    "RunRecord",
    "RunStatus",
    "StepContext",
    "StepResult",
    "UNDEFINED",
    "Undefined",
    "Verdict",
    "Workflow",
    "WorkflowError",
    "WorkflowLintError",
    "Workflows",
    "compile_contract",
    "compile_expression",
    "load_workflow",
}


def test_public_names_are_exactly_these() -> None:
    assert set(assay.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(assay, name) is not None
    exported = {
        name
        for name, value in vars(assay).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in ("TYPE_CHECKING", "Any")
    }
    assert exported == PUBLIC


def test_exception_tree() -> None:
    assert issubclass(assay.ExpressionError, assay.AssayError)
    assert issubclass(assay.ExpressionSyntaxError, assay.ExpressionError)
    assert issubclass(assay.ExpressionSyntaxError, SyntaxError)
    assert issubclass(assay.ExpressionEvaluationError, assay.ExpressionError)
    assert issubclass(assay.ExpressionEvaluationError, TypeError)
    assert issubclass(assay.ExpressionLimitError, assay.ExpressionEvaluationError)
    assert issubclass(assay.ContractError, assay.AssayError)
    assert issubclass(assay.ContractError, ValueError)
    assert issubclass(assay.WorkflowError, assay.AssayError)
    assert issubclass(assay.WorkflowError, ValueError)
    assert issubclass(assay.WorkflowLintError, assay.WorkflowError)
    assert issubclass(assay.RunError, assay.AssayError)
    assert issubclass(assay.RunError, RuntimeError)
    assert issubclass(assay.RunNotFoundError, assay.RunError)
    assert issubclass(assay.RunNotFoundError, LookupError)


def test_package_is_typed() -> None:
    from importlib.resources import files

    assert files("assay").joinpath("py.typed").is_file()
