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
    "Expression",
    "ExpressionError",
    "ExpressionEvaluationError",
    "ExpressionLimitError",
    "ExpressionSyntaxError",
    "Limits",
    "Predicate",
    "Redaction",
    "UNDEFINED",
    "Undefined",
    "compile_contract",
    "compile_expression",
}


def test_public_names_are_exactly_these() -> None:
    exported = {
        name
        for name, value in vars(assay).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
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


def test_package_is_typed() -> None:
    from importlib.resources import files

    assert files("assay").joinpath("py.typed").is_file()
