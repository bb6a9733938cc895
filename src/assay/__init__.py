"""assay: ground truth for agent actions."""

import importlib
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError as AssayError
from assay.errors import ContractError as ContractError
from assay.errors import ExpressionError as ExpressionError
from assay.errors import ExpressionEvaluationError as ExpressionEvaluationError
from assay.errors import ExpressionLimitError as ExpressionLimitError
from assay.errors import ExpressionSyntaxError as ExpressionSyntaxError
from assay.errors import ExternalError as ExternalError
from assay.errors import InputError as InputError
from assay.errors import LedgerError as LedgerError
from assay.errors import LifecycleError as LifecycleError
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
    from assay.expr import ExpressionLimits as ExpressionLimits
    from assay.expr import Predicate as Predicate
    from assay.expr import compile_contract as compile_contract
    from assay.expr import compile_expression as compile_expression
    from assay.graph import Answer as Answer
    from assay.graph import FireResult as FireResult
    from assay.graph import Session as Session
    from assay.host import Host as Host
    from assay.json.values import UNDEFINED as UNDEFINED
    from assay.json.values import Undefined as Undefined
    from assay.ledger import Ledger as Ledger
    from assay.redaction import Redaction as Redaction
    from assay.tool import Verification as Verification
    from assay.tool import Verified as Verified
    from assay.tool import verified as verified
    from assay.verify.outcome import VerificationOutcome as VerificationOutcome
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

# The expression compiler, the value layer, redaction, sessions, the host, the ledger and the
# workflow layer load on first use, so that `import assay` (and with it the CLI's `--help`)
# stays quick.
_LAZY = {
    **{
        name: "assay.expr"
        for name in (
            "Check",
            "ConditionEvidence",
            "Contract",
            "ElementEvidence",
            "Expression",
            "ExpressionLimits",
            "Predicate",
            "compile_contract",
            "compile_expression",
        )
    },
    **{name: "assay.graph" for name in ("Answer", "FireResult", "Session")},
    "Host": "assay.host",
    "Ledger": "assay.ledger",
    "VerificationOutcome": "assay.verify.outcome",
    "UNDEFINED": "assay.json.values",
    "Undefined": "assay.json.values",
    "Redaction": "assay.redaction",
    **{name: "assay.tool" for name in ("Verification", "Verified", "verified")},
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
    "Answer",
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
