"""The public surface of ``assay`` is pinned: nothing leaks or vanishes by accident."""

from __future__ import annotations

import types
from typing import get_type_hints

import assay

PUBLIC = {
    "Answer",
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
    "ExpressionLimits",
    "ExpressionSyntaxError",
    "ExternalError",
    "FireResult",
    "Host",
    "InputError",
    "Ledger",
    "LedgerError",
    "LifecycleError",
    "Predicate",
    "Redaction",
    "RunError",
    "RunNotFoundError",
    "RunRecord",
    "RunStatus",
    "Session",
    "StepContext",
    "StepResult",
    "UNDEFINED",
    "Undefined",
    "Verdict",
    "Verification",
    "VerificationOutcome",
    "Verified",
    "Workflow",
    "WorkflowError",
    "WorkflowLintError",
    "Workflows",
    "compile_contract",
    "compile_expression",
    "load_workflow",
    "verified",
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


def test_the_core_and_its_answers_are_the_ones_it_returns() -> None:
    from assay.graph import Answer, FireResult, Session
    from assay.host import Host
    from assay.ledger import Ledger
    from assay.verify.outcome import VerificationOutcome

    assert (assay.Session, assay.Host, assay.Ledger) == (Session, Host, Ledger)
    assert (assay.FireResult, assay.Answer) == (FireResult, Answer)
    assert assay.VerificationOutcome is VerificationOutcome
    assert get_type_hints(Session.fire)["return"] is FireResult
    assert get_type_hints(Session.did_it_work)["return"] is Answer


def test_exception_tree() -> None:
    assert issubclass(assay.ExpressionError, assay.AssayError)
    assert issubclass(assay.ExpressionSyntaxError, assay.ExpressionError)
    assert issubclass(assay.ExpressionSyntaxError, SyntaxError)
    # The families a caller catches together
    assert issubclass(assay.ExpressionError, assay.InputError)
    assert issubclass(assay.WorkflowError, assay.InputError)
    assert issubclass(assay.RunError, assay.LifecycleError)
    assert issubclass(assay.LedgerError, assay.AssayError)
    assert issubclass(assay.ExternalError, assay.AssayError)
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
