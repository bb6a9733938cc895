"""The expression language: JavaScript-style predicates compiled once, evaluated safely."""

from assay.expr.contract import Contract as Contract
from assay.expr.contract import compile_contract as compile_contract
from assay.expr.expression import Expression as Expression
from assay.expr.expression import compile_expression as compile_expression
from assay.expr.limits import ExpressionLimits as ExpressionLimits
from assay.expr.predicate import Check as Check
from assay.expr.predicate import ConditionEvidence as ConditionEvidence
from assay.expr.predicate import ElementEvidence as ElementEvidence
from assay.expr.predicate import Predicate as Predicate
