"""assay: ground truth for agent actions."""

import importlib
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError as AssayError
from assay.errors import ContractError as ContractError
from assay.errors import ExpressionError as ExpressionError
from assay.errors import ExpressionEvaluationError as ExpressionEvaluationError
from assay.errors import ExpressionLimitError as ExpressionLimitError
from assay.errors import ExpressionSyntaxError as ExpressionSyntaxError
from assay.errors import RunError as RunError
from assay.errors import RunNotFoundError as RunNotFoundError
from assay.errors import WorkflowError as WorkflowError
from assay.errors import WorkflowLintError as WorkflowLintError

if TYPE_CHECKING:
    from assay.expr import Check as Check
    from assay.expr import ConditionEvidence as ConditionEvidence
    from assay.expr import Contract as Contract
    from assay.expr import ElementEvidence as ElementEvidence
    from assay.expr import Expression as Expression
    from assay.expr import Limits as Limits
    from assay.expr import Predicate as Predicate
    from assay.expr import compile_contract as compile_contract
    from assay.expr import compile_expression as compile_expression
    from assay.json.values import UNDEFINED as UNDEFINED
    from assay.json.values import Undefined as Undefined
    from assay.redaction import Redaction as Redaction
    from assay.workflow import CriterionResult as CriterionResult
    from assay.workflow import RunRecord as RunRecord
    from assay.workflow import RunStatus as RunStatus
    from assay.workflow import StepContext as StepContext
    from assay.workflow import StepResult as StepResult
    from assay.workflow import Verdict as Verdict
    from assay.workflow import Workflow as Workflow
    from assay.workflow import Workflows as Workflows
    from assay.workflow import load_workflow as load_workflow

__version__ = "0.1.0"

# The expression compiler, the value layer, redaction and the workflow layer load on first
# use, so that `import assay` (and with it the CLI's `--help`) stays quick.
_LAZY = {
    **{
        name: "assay.expr"
        for name in (
            "Check",
            "ConditionEvidence",
            "Contract",
            "ElementEvidence",
            "Expression",
            "Limits",
            "Predicate",
            "compile_contract",
            "compile_expression",
        )
    },
    "UNDEFINED": "assay.json.values",
    "Undefined": "assay.json.values",
    "Redaction": "assay.redaction",
    **{
        name: "assay.workflow"
        for name in (
            "CriterionResult",
            "RunRecord",
            "RunStatus",
            "StepContext",
            "StepResult",
            "Verdict",
            "Workflow",
            "Workflows",
            "load_workflow",
        )
    },
}

__all__ = [
    "UNDEFINED",
    "AssayError",
    "Check",
    "ConditionEvidence",
    "Contract",
    "ContractError",
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
    "Undefined",
    "Verdict",
    "Workflow",
    "WorkflowError",
    "WorkflowLintError",
    "Workflows",
    "compile_contract",
    "compile_expression",
    "load_workflow",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'assay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
