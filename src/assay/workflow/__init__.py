"""Workflows with verification gates (SPEC §8): steps whose output is committed only once a
verifier passes it, a bounded critique loop, nested budgets, an escalation ladder ending in a
durable park, and authoring lint (the zero-case rule among others).

``load_workflow`` reads a definition; ``lint``/``check_workflow`` apply the authoring rules;
``Engine`` runs one workflow's runs on a ledger; ``Workflows`` is the API the CLI and the
HTTP daemon share (load, start, get, resume, list), answering with ``RunRecord``s.
"""

from assay.workflow.budget import Budget as Budget
from assay.workflow.budget import Limits as Limits
from assay.workflow.budget import Usage as Usage
from assay.workflow.context import Plan as Plan
from assay.workflow.context import StepContext as StepContext
from assay.workflow.context import StepResult as StepResult
from assay.workflow.criterion import Criterion as Criterion
from assay.workflow.definition import ModelSettings as ModelSettings
from assay.workflow.definition import Rung as Rung
from assay.workflow.definition import Step as Step
from assay.workflow.definition import Workflow as Workflow
from assay.workflow.definition import load_workflow as load_workflow
from assay.workflow.engine import Engine as Engine
from assay.workflow.lint import LintProblem as LintProblem
from assay.workflow.lint import check_workflow as check_workflow
from assay.workflow.lint import lint as lint
from assay.workflow.model import ModelVerifier as ModelVerifier
from assay.workflow.run import RunRecord as RunRecord
from assay.workflow.run import RunStatus as RunStatus
from assay.workflow.service import Workflows as Workflows
from assay.workflow.verdict import CriterionResult as CriterionResult
from assay.workflow.verdict import Verdict as Verdict
from assay.workflow.verifier import CompositeVerifier as CompositeVerifier
from assay.workflow.verifier import ExpressionVerifier as ExpressionVerifier
from assay.workflow.verifier import StateVerifier as StateVerifier
from assay.workflow.verifier import Verifier as Verifier
